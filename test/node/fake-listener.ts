/**
 * A join listener of the tests' own on loopback: real TLS 1.3 (the server entry's TLS options,
 * a fresh cluster CA and listener leaf), an honest OPAQUE exchange for one join code, and the
 * registration calls, any of which a test can make misbehave: drip, stall, reset, lie, refuse,
 * or tamper with the channel binding and the pairing code of an otherwise honest answer.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { generateJoinCode, type JoinCode } from "../../src/core/join-code.js";
import type { MachineIdentity } from "../../src/node/identity.js";
import type { JoinSession } from "../../src/node/join-session.js";
import type { Inventory } from "../../src/types.js";
import {
  bindingTranscript,
  createClusterCa,
  createJoinCodeRecord,
  createServerSetup,
  deriveBindingKeys,
  derivePairingCode,
  disableSessionTickets,
  finishServerLogin,
  formatPairingCode,
  issueListenerCertificate,
  peerKeyFingerprint,
  serverBinding,
  startServerLogin,
  tlsExporter,
  tlsServerOptions,
  verifyBinding,
  type ClusterCa,
} from "../../src/server/index.js";

/** The calls a test can make misbehave. */
export type Route = "pake" | "code-check" | "registration" | "view" | "progress";

/** An answer to send: a JSON body (or `raw` text) with a status and headers. */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Sent as is instead of `body`, with `content-type: application/json` unless headers say otherwise. */
  raw?: string;
}

/** One call as a behaviour sees it. */
export interface Call {
  route: Route;
  /** 1-based: the n-th call of its route. */
  n: number;
  req: IncomingMessage;
  res: ServerResponse;
  /** The request's body, parsed (undefined when it had none). */
  body: any;
  /** The honest answer to this call (for a KE3 call: verified, bound, registered). */
  honest(): Promise<Answer>;
}

/** What a route does: send an answer (by default the honest one), or take the response over ("handled"). */
export type Behaviour = (call: Call) => Promise<Answer | "handled"> | Answer | "handled";

/** A problem+json answer. */
export function problem(status: number, code: string, retryAfter?: number): Answer {
  return {
    status,
    headers: {
      "content-type": "application/problem+json",
      ...(retryAfter !== undefined ? { "retry-after": String(retryAfter) } : {}),
    },
    body: { type: "about:blank", title: code, status, requestId: "req-fake", code, detail: `fake ${code}` },
  };
}

/**
 * A refusal of the KE3 call as a founder sends it after a verified KE3 and binding: `answer`,
 * carrying the `Join-Binding` of this exchange (docs/protocol.md#ke3, step 5).
 */
export function bound(answer: Answer): Behaviour {
  return async (call) => {
    const honest = await call.honest();
    const binding = honest.headers?.["join-binding"];
    if (binding === undefined) return honest; // the proof failed: the honest refusal stands
    return { ...answer, headers: { ...answer.headers, "join-binding": binding } };
  };
}

/** Headers now, then one body byte every `intervalMs`, never done. */
export function drip(intervalMs = 250): Behaviour {
  return ({ res }) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": "100000" });
    const timer = setInterval(() => res.write(" "), intervalMs);
    res.on("close", () => clearInterval(timer));
    return "handled";
  };
}

/** Reads the request and never answers: no status line, no header. */
export const stall: Behaviour = () => "handled";

/** Cuts the TCP connection (RST) instead of answering. */
export const reset: Behaviour = ({ req }) => {
  // The TLS socket's handle is not the TCP one; the RST is sent on the TCP socket underneath.
  const tcp = (req.socket as TLSSocket & { _parent?: Socket })._parent;
  if (tcp && typeof tcp.resetAndDestroy === "function") tcp.resetAndDestroy();
  req.socket.destroy();
  return "handled";
};

/** 200 with a body that is not JSON. */
export const badJson: Behaviour = () => ({ status: 200, raw: '{"joinId": "nj-' });

/** 200 with JSON that fails the registration schema. */
export const wrongSchema: Behaviour = () => ({ status: 200, body: { joinId: 42, state: "somewhere" } });

/** The n-th call does `steps[n - 1]`; after the last step, the honest answer. */
export function sequence(...steps: Behaviour[]): Behaviour {
  return (call) => (steps[call.n - 1] ?? ((c: Call) => c.honest()))(call);
}

interface Exchange {
  state: string;
  ke1: Uint8Array;
  ke2: Uint8Array;
  socket: TLSSocket;
  /** The `serverTime` the PAKE answer carried, honestly. */
  serverTime: string;
}

interface Registration {
  joinId: string;
  keyFingerprint: string;
  pairingCode: string;
  state: string;
  version: number;
}

/** A running fake listener. */
export interface FakeListener {
  host: string;
  port: number;
  /** `127.0.0.1:PORT`. */
  endpoint: string;
  /** The join URL of its one code. */
  url: string;
  code: JoinCode;
  ca: ClusterCa;
  /** What each route does; reset by {@link FakeListener.resetBehaviour}. */
  behave: Partial<Record<Route, Behaviour>>;
  /** How many calls each route got. */
  calls: Record<Route, number>;
  /** The server `Join-Binding` header of each honest KE3 answer, in order. */
  bindings: string[];
  /**
   * When set, the `serverTime` its own answer's `Join-Binding` covers (the client's binding is
   * still checked against the one the PAKE answer carried): a listener whose answer is bound
   * to another founder's time than the one the joiner was told. Cleared by `resetBehaviour`.
   */
  answerServerTime: string | undefined;
  /** The inventory each registration sent, by join id. */
  inventories: Map<string, Inventory | undefined>;
  /** How many registrations it holds. */
  registrationCount(): number;
  /** How many TCP connections it has open now. */
  openConnections(): Promise<number>;
  /** Restores honest behaviour and zeroes the counters. */
  resetBehaviour(): void;
  /** Records a registration for `identity` without a PAKE and returns the session a joiner would keep. */
  sessionFor(identity: MachineIdentity, state?: string): JoinSession;
  /** Moves a registration to `state`; long polls waiting on it answer. */
  setState(joinId: string, state: string): void;
  close(): Promise<void>;
}

const EMPTY_CALLS = (): Record<Route, number> => ({
  pake: 0,
  "code-check": 0,
  registration: 0,
  view: 0,
  progress: 0,
});

function send(res: ServerResponse, answer: Answer): void {
  const headers = { "content-type": "application/json", ...answer.headers };
  res.writeHead(answer.status, headers);
  res.end(answer.raw ?? (answer.body === undefined ? "" : JSON.stringify(answer.body)));
}

async function readBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

/** Starts a fake listener on 127.0.0.1 with one live join code. */
export async function startFakeListener(
  options: {
    /** The cluster CA and the listener's leaf, e.g. made at another time; default fresh ones. */
    pki?: { ca: ClusterCa; leaf: { certPem: string; keyPem?: string } };
    /** The founder's clock, ms since the epoch (default `Date.now()`): what `serverTime` says. */
    clock?: () => number;
  } = {},
): Promise<FakeListener> {
  const ca = options.pki?.ca ?? (await createClusterCa());
  const leaf = options.pki?.leaf ?? (await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] }));
  const clock = options.clock ?? Date.now;
  const serverSetup = await createServerSetup();
  const code = generateJoinCode();
  const codeId = "jc-fake0001";
  const record = await createJoinCodeRecord({ serverSetup, codeId, code: code.code, caDer: ca.certDer });
  const exchanges = new Map<string, Exchange>();
  const registrations = new Map<string, Registration>();
  const waiters = new Set<() => void>();
  const view = (r: Registration) => ({ joinId: r.joinId, state: r.state, pairingCode: r.pairingCode });
  const etagOf = (r: Registration) => `"v${r.version}"`;
  const register = (keyFingerprint: string, pairingCode: string, state = "pending"): Registration => {
    const r = { joinId: `nj-${randomBytes(4).toString("hex")}`, keyFingerprint, pairingCode, state, version: 1 };
    registrations.set(r.joinId, r);
    return r;
  };

  /** The KE3 call, honestly: the exchange, KE3, the client's binding, then the answer's own binding. */
  async function proven(req: IncomingMessage, body: any, answer: (key: string, pairing: string) => Answer) {
    const socket = req.socket as TLSSocket;
    const key = peerKeyFingerprint(socket)!;
    const exchange = exchanges.get(body?.pake?.session);
    exchanges.delete(body?.pake?.session);
    if (!exchange || exchange.socket !== socket) return problem(409, "JOIN_PAKE_RESTART");
    const sessionKey = await finishServerLogin({ state: exchange.state, ke3: body.pake.ke3, caDer: ca.certDer });
    if (!sessionKey) return problem(401, "JOIN_CODE_INVALID");
    const keys = await deriveBindingKeys(sessionKey);
    const fields = {
      session: body.pake.session,
      ke1: exchange.ke1,
      ke2: exchange.ke2,
      caFingerprint: ca.fingerprint,
      clientKeyFingerprint: key,
      exporter: tlsExporter(socket),
    };
    const transcript = await bindingTranscript({ ...fields, serverTime: exchange.serverTime });
    const header = req.headers["join-binding"];
    if (!(await verifyBinding(keys.kc, transcript, typeof header === "string" ? header : undefined)))
      return problem(401, "JOIN_BINDING_FAILED");
    const answered =
      listener.answerServerTime === undefined
        ? transcript
        : await bindingTranscript({ ...fields, serverTime: listener.answerServerTime });
    const binding = await serverBinding(keys.ks, answered);
    listener.bindings.push(binding);
    const pairing = formatPairingCode(await derivePairingCode(keys.pairingKey, key));
    const result = answer(key, pairing);
    return { ...result, headers: { ...result.headers, "join-binding": binding } };
  }

  async function honest(route: Route, req: IncomingMessage, res: ServerResponse, body: any, url: URL): Promise<Answer> {
    const socket = req.socket as TLSSocket;
    const key = peerKeyFingerprint(socket)!;
    switch (route) {
      case "pake": {
        const login = await startServerLogin({
          serverSetup,
          codeId,
          registrationRecord: body.selector === code.selector ? record : null,
          ke1: body.ke1,
          caDer: ca.certDer,
        });
        const session = `pk-${randomBytes(8).toString("hex").toUpperCase()}`;
        const serverTime = new Date(clock()).toISOString();
        exchanges.set(session, {
          serverTime,
          state: login.state,
          ke1: new Uint8Array(Buffer.from(body.ke1, "base64url")),
          ke2: new Uint8Array(Buffer.from(login.ke2, "base64url")),
          socket,
        });
        return {
          status: 200,
          body: {
            session,
            ke2: login.ke2,
            caCertificate: ca.certPem,
            expiresAt: new Date(clock() + 60_000).toISOString(),
            serverTime,
          },
        };
      }
      case "code-check":
        return proven(req, body, () => ({
          status: 200,
          body: { clusterRelease: "0.6.0", expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
        }));
      case "registration":
        return proven(req, body, (k, pairing) => {
          const existing = [...registrations.values()].find((r) => r.keyFingerprint === k);
          if (existing) return { status: 200, body: view(existing) };
          const created = register(k, pairing);
          listener.inventories.set(created.joinId, body?.inventory);
          return { status: 201, body: view(created) };
        });
      case "view":
      case "progress": {
        const joinId = decodeURIComponent(url.pathname.split("/")[4] ?? "");
        const r = registrations.get(joinId);
        if (!r || r.keyFingerprint !== key) return problem(404, "NOT_FOUND");
        if (route === "progress") return { status: 200, body: view(r) };
        const waitSeconds = Number(url.searchParams.get("waitSeconds") ?? 0);
        if (waitSeconds > 0 && req.headers["if-none-match"] === etagOf(r)) {
          await new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              waiters.delete(done);
              resolve();
            };
            const timer = setTimeout(done, waitSeconds * 1000);
            waiters.add(done);
            res.once("close", done);
          });
          if (req.headers["if-none-match"] === etagOf(r)) return { status: 304, headers: { etag: etagOf(r) } };
        }
        return { status: 200, headers: { etag: etagOf(r) }, body: view(r) };
      }
    }
  }

  function routeOf(method: string, path: string): Route | undefined {
    if (method === "POST" && path === "/v1/join/pake") return "pake";
    if (method === "POST" && path === "/v1/join/code-checks") return "code-check";
    if (method === "POST" && path === "/v1/join/registrations") return "registration";
    if (method === "GET" && /^\/v1\/join\/registrations\/[^/]+$/.test(path)) return "view";
    if (method === "POST" && /^\/v1\/join\/registrations\/[^/]+\/progress$/.test(path)) return "progress";
    return undefined;
  }

  const server: Server = createServer(
    tlsServerOptions({ certPem: leaf.certPem, keyPem: leaf.keyPem!, caPem: ca.certPem }),
    (req, res) => {
      void (async () => {
        const url = new URL(req.url ?? "/", "https://listener");
        const route = routeOf(req.method ?? "GET", url.pathname);
        if (!route) return send(res, problem(404, "NOT_FOUND"));
        const body = await readBody(req);
        const n = ++listener.calls[route];
        const behaviour = listener.behave[route] ?? ((call: Call) => call.honest());
        const outcome = await behaviour({ route, n, req, res, body, honest: () => honest(route, req, res, body, url) });
        if (outcome !== "handled" && !res.destroyed) send(res, outcome);
      })().catch((error: unknown) => {
        if (process.env.FAKE_DEBUG) console.error("fake listener", error);
        if (!res.headersSent) send(res, { ...problem(500, "INTERNAL"), body: { detail: String(error) } });
      });
    },
  );
  disableSessionTickets(server);
  server.keepAliveTimeout = 120_000;
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  const listener: FakeListener = {
    host: "127.0.0.1",
    port,
    endpoint: `127.0.0.1:${port}`,
    url: `stratum-join://127.0.0.1:${port}/${code.formatted}`,
    code,
    ca,
    behave: {},
    calls: EMPTY_CALLS(),
    bindings: [],
    answerServerTime: undefined,
    inventories: new Map(),
    registrationCount: () => registrations.size,
    openConnections: () =>
      new Promise<number>((resolve, reject) =>
        server.getConnections((error, n) => (error ? reject(error) : resolve(n))),
      ),
    resetBehaviour() {
      listener.behave = {};
      listener.answerServerTime = undefined;
      listener.calls = EMPTY_CALLS();
    },
    sessionFor(identity, state = "pending") {
      const r = register(identity.keyFingerprint, "ABC-DEF", state);
      return {
        version: 1,
        endpoint: listener.endpoint,
        caPem: ca.certPem,
        caFingerprint: ca.fingerprint,
        joinId: r.joinId,
        keyFingerprint: identity.keyFingerprint,
        pairingCode: r.pairingCode,
        release: "0.6.0",
      };
    },
    setState(joinId, state) {
      const r = registrations.get(joinId)!;
      r.state = state;
      r.version += 1;
      for (const wake of [...waiters]) wake();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const wake of [...waiters]) wake();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return listener;
}
