/**
 * Test helpers of the reference server's own tests (a server to test them on is
 * test/helpers/reference-server.ts): admin calls, a minimal joiner (OPAQUE over one pinned TLS 1.3
 * connection, with the channel binding of src/core/pairing.ts), and a validator that holds
 * every answer to openapi.yaml.
 */
import { Client } from "undici";
import { expect } from "vitest";
import { generateJoinCode, parseJoinCode } from "../../src/core/join-code.js";
import {
  bindingTranscript,
  clientBinding,
  deriveBindingKeys,
  derivePairingCode,
  formatPairingCode,
  verifyBinding,
} from "../../src/core/pairing.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { finishLogin, startLogin } from "../../src/node/opaque.js";
import { openPinnedConnection, type PinnedConnection, type PinnedResponse } from "../../src/node/pinned-connection.js";
import { connectPinnedSocket } from "../../src/node/pinned-socket.js";
import { caFingerprint, verifyListenerCertificate } from "../../src/protocol/pki.js";
import { newJoinRow, type JoinRow } from "../../examples/reference-server/rows.js";
import type { Inventory } from "../../src/types.js";
import type { ReferenceServer } from "../../examples/reference-server/server.js";
import { sampleInventory } from "../helpers/inventory.js";
import { spec, specAjv } from "../spec/spec.js";

// ------------------------------------------------------------------ the spec

const ajv = specAjv();

const escape = (key: string): string => key.replace(/~/g, "~0").replace(/\//g, "~1");
const operations = new Map<string, { path: string; method: string }>();
for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, { operationId?: string }>>)) {
  for (const [method, op] of Object.entries(item))
    if (op && typeof op === "object" && op.operationId) operations.set(op.operationId, { path, method });
}

/** Answers checked against the spec so far (a test asserts the checker saw them). */
export const specChecks = { count: 0 };

/**
 * Asserts that an answer is one openapi.yaml allows for `operationId`: a declared status, and a
 * body valid against the schema of that status and content type.
 */
export function expectSpec(operationId: string, status: number, contentType: string | undefined, body: unknown): void {
  const op = operations.get(operationId);
  expect(op, `unknown operation ${operationId}`).toBeDefined();
  const responses = spec.paths[op!.path][op!.method].responses as Record<
    string,
    { $ref?: string; content?: Record<string, unknown> }
  >;
  const declared = responses[String(status)];
  expect(declared, `${operationId} does not declare status ${status}`).toBeDefined();
  let pointer = `#/paths/${escape(op!.path)}/${op!.method}/responses/${status}`;
  let response = declared!;
  if (response.$ref) {
    pointer = response.$ref;
    const name = response.$ref.split("/").pop()!;
    response = spec.components.responses[name];
  }
  const type = (contentType ?? "").split(";")[0]!.trim();
  if (!response.content) {
    expect(body === undefined || body === "" || body === null, `${operationId} ${status} declares no body`).toBe(true);
    specChecks.count++;
    return;
  }
  expect(Object.keys(response.content), `${operationId} ${status} content type`).toContain(type);
  if (type === "application/octet-stream") {
    specChecks.count++;
    return;
  }
  const validate = ajv.getSchema(`openapi${pointer}/content/${escape(type)}/schema`);
  expect(validate, `no schema at ${pointer}`).toBeTypeOf("function");
  const ok = validate!(body);
  expect(ok ? [] : validate!.errors, `${operationId} ${status} answer against the spec`).toEqual([]);
  specChecks.count++;
}

// ------------------------------------------------------------------ admin calls

/** An answer of the admin API. */
export interface AdminAnswer {
  status: number;
  headers: Headers;
  body: any;
}

/**
 * Calls the admin API with the bootstrap token (or `token`; `null` for none) and checks the
 * answer against the spec when `operationId` is given.
 */
export async function admin(
  server: ReferenceServer,
  method: string,
  path: string,
  options: {
    body?: unknown;
    raw?: string;
    token?: string | null;
    operationId?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<AdminAnswer> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  const token = options.token === undefined ? server.adminToken : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] ??= "application/json";
  const response = await fetch(`${server.adminUrl}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await response.text();
  const parsed = text === "" ? undefined : JSON.parse(text);
  if (options.operationId)
    expectSpec(options.operationId, response.status, response.headers.get("content-type") ?? undefined, parsed);
  return { status: response.status, headers: response.headers, body: parsed };
}

/** Mints a code and returns the minted answer. */
export async function mint(server: ReferenceServer, body: Record<string, unknown> = {}): Promise<any> {
  const answer = await admin(server, "POST", "/v1/admin/cluster/join-codes", { body, operationId: "mintJoinCode" });
  expect(answer.status).toBe(201);
  return answer.body;
}

/**
 * Mints another code, of another selector than `avoid`'s, so that the listener stays open
 * (it closes when no code is live and no registration is open) without changing which code a
 * PAKE for `avoid`'s selector finds.
 */
export async function keepListenerOpen(server: ReferenceServer, avoid: string): Promise<void> {
  for (;;) {
    const other = await mint(server);
    if (other.joinCode.selector !== parseJoinCode(avoid).selector) return;
    await admin(server, "DELETE", `/v1/admin/cluster/join-codes/${other.joinCode.id}`);
  }
}

/** A code with the same selector as `code` but other secret symbols (a mistyped code that passes the check symbol). */
export function sameSelectorOtherCode(code: string): string {
  for (;;) {
    const other = generateJoinCode();
    const candidate = parseJoinCode(code).selector + other.code.slice(2, 10);
    // The one valid 11th symbol, found by trying each.
    for (const c of "0123456789ABCDEFGHJKMNPQRSTVWXYZ") {
      try {
        const parsed = parseJoinCode(candidate + c);
        if (parsed.code !== parseJoinCode(code).code) return parsed.formatted;
      } catch {
        /* not this one */
      }
    }
  }
}

// ------------------------------------------------------------------ a joiner

/** The joiner's half of one PAKE exchange, ready for the KE3 call. */
export interface Exchange {
  session: string;
  ke3: string;
  binding: string;
  keys: Awaited<ReturnType<typeof deriveBindingKeys>>;
  transcript: Uint8Array;
  pairingCode: string;
}

/** The answer of a KE3 call, with the server's binding checked. */
export interface Proved {
  response: PinnedResponse;
  pairingCode: string;
  serverBindingOk?: boolean;
}

/** A machine: its identity and the connection it talks over. */
export class TestJoiner {
  readonly identity: MachineIdentity;
  readonly server: ReferenceServer;
  connection: PinnedConnection | undefined;
  caDer: Uint8Array | undefined;

  private constructor(server: ReferenceServer, identity: MachineIdentity) {
    this.server = server;
    this.identity = identity;
  }

  /** A joiner with a fresh Ed25519 identity. */
  static async create(server: ReferenceServer): Promise<TestJoiner> {
    return new TestJoiner(server, await createMachineIdentity());
  }

  /** A joiner with a given identity (the same key on a new connection). */
  static with(server: ReferenceServer, identity: MachineIdentity): TestJoiner {
    return new TestJoiner(server, identity);
  }

  /** Opens a fresh connection to the listener (pinned to the CA once it is known). */
  async connect(): Promise<PinnedConnection> {
    await this.connection?.close();
    this.connection = await openPinnedConnection({
      host: "127.0.0.1",
      port: this.server.joinPort,
      identity: this.identity,
      // Joiners of one test share its event loop, and each one's Argon2id blocks it: a
      // handshake can wait on several of them on a loaded machine, far past the default 10 s.
      connectTimeoutMs: 120_000,
      ...(this.caDer ? { ca: this.caDer } : {}),
    });
    return this.connection;
  }

  /**
   * An undici client on a pinned socket of this joiner's own (the CA must be known): for
   * tests that hold an answer unread, which the SDK's pinned calls never do.
   */
  async undiciClient(): Promise<Client> {
    const socket = await connectPinnedSocket({
      host: "127.0.0.1",
      port: this.server.joinPort,
      identity: this.identity,
      ...(this.caDer ? { ca: this.caDer } : {}),
    });
    let handedOver = false;
    return new Client(`https://127.0.0.1:${this.server.joinPort}`, {
      connect: (_options, callback) =>
        queueMicrotask(() => {
          if (handedOver) return callback(new Error("one socket only"), null);
          handedOver = true;
          callback(null, socket);
        }),
    });
  }

  /** Closes the connection. */
  async close(): Promise<void> {
    await this.connection?.close();
    this.connection = undefined;
  }

  /** One call on the current connection, checked against the spec. */
  async call(
    operationId: string,
    method: "GET" | "POST" | "HEAD",
    path: string,
    options: { json?: unknown; headers?: Record<string, string> } = {},
  ): Promise<PinnedResponse> {
    // A connection the listener closed needs a new one; it is pinned to the CA by then.
    const connection = this.connection?.alive ? this.connection : await this.connect();
    const response = await connection.request({
      method,
      path,
      ...(options.json !== undefined ? { json: options.json } : {}),
      headers: options.headers ?? {},
    });
    const type = response.headers["content-type"];
    if (method !== "HEAD")
      expectSpec(
        operationId,
        response.status,
        typeof type === "string" ? type : undefined,
        response.json ?? (response.body.length ? "<binary>" : undefined),
      );
    return response;
  }

  /** `POST /v1/join/pake` with a KE1 for `code`. */
  async pake(code: string): Promise<{ response: PinnedResponse; state: string; ke1: string }> {
    const canonical = parseJoinCode(code).code;
    const { state, ke1 } = await startLogin(canonical);
    const response = await this.call("startJoinPake", "POST", "/v1/join/pake", {
      json: { selector: canonical.slice(0, 2), ke1 },
    });
    return { response, state, ke1 };
  }

  /**
   * The joiner's half of the PAKE on the current connection: KE1, then (as a joiner must)
   * finishLogin against the received CA and the listener leaf checked against it, and the
   * channel binding computed for this connection.
   */
  async exchange(code: string): Promise<Exchange> {
    if (!this.connection?.alive) await this.connect();
    const { response: pakeAnswer, state, ke1 } = await this.pake(code);
    expect(pakeAnswer.status, JSON.stringify(pakeAnswer.json)).toBe(200);
    const challenge = pakeAnswer.json as { session: string; ke2: string; caCertificate: string; serverTime: string };
    const caDer = new Uint8Array(Buffer.from(challenge.caCertificate.replace(/-----[^-]+-----|\s/g, ""), "base64"));
    const finished = await finishLogin({ state, ke2: challenge.ke2, code: parseJoinCode(code).code, caDer });
    if (!finished) throw new Error("the listener did not prove the code");
    verifyListenerCertificate({ chain: this.connection!.peerChainDer(), caDer, dialledHost: "127.0.0.1" });
    this.caDer = caDer;
    const keys = await deriveBindingKeys(finished.sessionKey);
    const transcript = await bindingTranscript({
      session: challenge.session,
      ke1: new Uint8Array(Buffer.from(ke1, "base64url")),
      ke2: new Uint8Array(Buffer.from(challenge.ke2, "base64url")),
      caFingerprint: caFingerprint(caDer),
      clientKeyFingerprint: this.identity.keyFingerprint,
      exporter: this.connection!.exporter(),
      serverTime: challenge.serverTime,
    });
    const pairingCode = formatPairingCode(await derivePairingCode(keys.pairingKey, this.identity.keyFingerprint));
    return {
      session: challenge.session,
      ke3: finished.ke3,
      binding: await clientBinding(keys.kc, transcript),
      keys,
      transcript,
      pairingCode,
    };
  }

  /** Sends a KE3 call (`code-checks` or `registrations`) on the current connection. */
  async sendProof(
    kind: "code-checks" | "registrations",
    body: Record<string, unknown>,
    exchange: Exchange,
    tamper: { binding?: string | null; ke3?: string; session?: string } = {},
  ): Promise<Proved> {
    const operationId = kind === "code-checks" ? "checkJoinCode" : "registerJoin";
    const binding = tamper.binding === undefined ? exchange.binding : tamper.binding;
    const response = await this.call(operationId, "POST", `/v1/join/${kind}`, {
      json: { ...body, pake: { session: tamper.session ?? exchange.session, ke3: tamper.ke3 ?? exchange.ke3 } },
      headers: binding === null ? {} : { "join-binding": binding },
    });
    const header = response.headers["join-binding"];
    const serverBindingOk =
      typeof header === "string" ? await verifyBinding(exchange.keys.ks, exchange.transcript, header) : undefined;
    return {
      response,
      pairingCode: exchange.pairingCode,
      ...(serverBindingOk !== undefined ? { serverBindingOk } : {}),
    };
  }

  /** A fresh connection, the exchange, and the KE3 call. */
  async prove(
    code: string,
    kind: "code-checks" | "registrations",
    body: Record<string, unknown>,
    tamper: { binding?: string | null; ke3?: string; session?: string } = {},
  ): Promise<Proved> {
    await this.connect();
    return this.sendProof(kind, body, await this.exchange(code), tamper);
  }

  /** Registers with `code` (release 0.6.0 and a default inventory unless `body` says otherwise). */
  async register(code: string, body: Record<string, unknown> = {}): Promise<Proved> {
    return this.prove(code, "registrations", {
      release: "0.6.0",
      hostname: "node-2",
      inventory: sampleInventory(),
      ...body,
    });
  }

  /** `GET /v1/join/registrations/{joinId}` on a connection pinned to the CA. */
  async view(joinId: string, options: { waitSeconds?: number; etag?: string } = {}): Promise<PinnedResponse> {
    if (!this.connection?.alive) await this.connect();
    const query = options.waitSeconds !== undefined ? `?waitSeconds=${options.waitSeconds}` : "";
    return this.call("getRegistration", "GET", `/v1/join/registrations/${joinId}${query}`, {
      headers: options.etag ? { "if-none-match": options.etag } : {},
    });
  }

  /** `POST /v1/join/registrations/{joinId}/progress`. */
  async progress(joinId: string, report: Record<string, unknown>): Promise<PinnedResponse> {
    if (!this.connection?.alive) await this.connect();
    return this.call("reportJoinProgress", "POST", `/v1/join/registrations/${joinId}/progress`, { json: report });
  }
}

let seq = 0;

/**
 * A registration written straight into the store, as the listener would have stored it: for
 * tests of what comes after the PAKE, without paying its Argon2 each time.
 */
export function insertJoinRow(server: ReferenceServer, overrides: Partial<JoinRow> = {}): string {
  const now = Date.now();
  // Each machine on its own address, as on a real network: an approved join holds its mgmt
  // address, so two sharing one would collide (the tests of that make them share it).
  const address = `192.0.2.${21 + (seq % 200)}`;
  const id = `nj-test${String(seq++).padStart(4, "0")}`;
  const codeId = "jc-testcode";
  if (!server.store.getCode(codeId)) {
    server.store.tx(() =>
      server.store.insertCode({
        id: codeId,
        selector: "ZZ",
        record: "x",
        caFingerprint: server.caFingerprint,
        endpoint: "127.0.0.1:9444",
        attempts: 0,
        createdBy: "test",
        createdAt: now,
        expiresAt: now + 3600_000,
        revokedBy: "test",
        revokedAt: now,
      }),
    );
  }
  server.store.tx(() =>
    server.store.insertJoin({
      ...newJoinRow({
        id,
        codeId,
        state: "pending",
        pairingCode: "4F7-K2Q",
        keyFingerprint: Array.from({ length: 32 }, () => "AB").join(":"),
        sourceAddr: address,
        hostname: `host-${id}`,
        systemSerial: null,
        release: "0.6.0",
        inventory: sampleInventory(address) as Inventory,
        upgrade: null,
        createdAt: now,
        expiresAt: now + 3600_000,
      }),
      ...overrides,
    }),
  );
  return id;
}
