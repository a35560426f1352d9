/**
 * The join listener (`/v1/join/...`): TLS 1.3 only, a client certificate asked for (any key:
 * the key is the identity), no session tickets. Open while any code is live or any
 * registration is not final; closed (the port released) otherwise, and reopened on the same
 * port when it is needed again.
 *
 * A client without a certificate completes the handshake (the listener must accept any key,
 * so it cannot make the certificate mandatory in TLS without also making it verified) and is
 * answered 401 `UNAUTHORIZED` on every call.
 *
 * The PAKE: `POST /v1/join/pake` answers KE2 and keeps the server's login state in memory, as
 * a session bound to this TLS connection and this client key, used once, for about 60 s. The
 * next call on the connection carries KE3 and the `Join-Binding` header; once both verify,
 * every answer carries the server's `Join-Binding`.
 * @module
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { createHash } from "node:crypto";
import {
  bindingTranscript,
  derivePairingCode,
  deriveBindingKeys,
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
  type BindingKeys,
  type IssuedCertificate,
} from "@stratum/join/server";
import type { Cluster } from "./cluster.js";
import type { Limits, Timing } from "./config.js";
import {
  HttpProblem,
  Router,
  createRequestHandler,
  invalidInput,
  parseBody,
  readJson,
  sendJson,
  type Logger,
  type RequestContext,
} from "./http.js";
import { newPakeSession, randomSymbols } from "./ids.js";
import { ServedFiles, resolveReleasePath, sendReleaseFile } from "./release-serving.js";
import { CodeCheckRequestSchema, PakeStartSchema, ProgressReportSchema, RegistrationRequestSchema } from "./schemas.js";
import { codeState } from "./views.js";
import { answerClientErrors } from "./http-client-errors.js";
import { join as joinPath } from "node:path";

/** PAKE exchanges waiting for their KE3, at most. */
const MAX_SESSIONS = 10_000;

/** A PAKE exchange waiting for its KE3. Secret-bearing (the server's login state); memory only. */
interface PakeSession {
  id: string;
  socketId: string;
  keyFingerprint: string;
  serverState: string;
  /** The code the exchange runs against; null for a fake KE2 (unknown selector). */
  codeId: string | null;
  /** Whether its KE1 counted as an attempt on a live code (a valid KE3 clears it). */
  counted: boolean;
  ke1: Uint8Array;
  ke2: Uint8Array;
  caDer: Uint8Array;
  caFingerprint: string;
  expiresAt: number;
}

/** Sliding-window counters per address and kind of call. */
export class AddressLimiter {
  readonly #hits = new Map<string, number[]>();

  /**
   * Records a call of `kind` from `address` unless `max` calls were made in the last
   * `windowMs`; returns the seconds until one more is allowed when it is refused.
   */
  hit(address: string, kind: string, max: number, windowMs: number, now = Date.now()): number | undefined {
    const key = `${kind} ${address}`;
    const recent = (this.#hits.get(key) ?? []).filter((t) => t > now - windowMs);
    if (recent.length >= max) {
      this.#hits.set(key, recent);
      return Math.max(1, Math.ceil((recent[0]! + windowMs - now) / 1000));
    }
    recent.push(now);
    this.#hits.set(key, recent);
    return undefined;
  }

  /** Forgets windows that have passed. */
  prune(windowMs: number, now = Date.now()): void {
    for (const [key, hits] of this.#hits) {
      const recent = hits.filter((t) => t > now - windowMs);
      if (recent.length === 0) this.#hits.delete(key);
      else this.#hits.set(key, recent);
    }
  }
}

/** What the join listener needs. */
export interface JoinListenerOptions {
  cluster: Cluster;
  limits: Limits;
  timing: Timing;
  log: Logger;
  host: string;
  port: number;
  /** DNS names and IPs the listener's leaf names. */
  hosts: string[];
  releaseDir: string | undefined;
  clusterRelease: string;
  /** Wakes the join runner (after a progress report). */
  kickRunner: () => void;
}

/** Answer bodies: the strong ETag of a registration view. */
function viewEtag(view: unknown): string {
  return `"${createHash("sha256").update(JSON.stringify(view)).digest("base64url").slice(0, 27)}"`;
}

/** The caller's address as registrations record it (IPv4-mapped IPv6 written as IPv4). */
function peerAddress(socket: Socket): string {
  const address = socket.remoteAddress ?? "";
  return address.startsWith("::ffff:") ? address.slice(7) : address;
}

/** The join listener. {@link JoinListener.reconcile} opens or closes it as the state requires. */
export class JoinListener {
  readonly #o: JoinListenerOptions;
  readonly #sessions = new Map<string, PakeSession>();
  readonly #socketIds = new WeakMap<Socket, string>();
  readonly #limiter = new AddressLimiter();
  readonly #served = new ServedFiles();
  readonly #waiters = new Set<() => void>();
  readonly #handler: (req: IncomingMessage, res: ServerResponse) => void;
  #leaf: IssuedCertificate | undefined;
  #server: Server | undefined;
  /** Closed servers whose accepted connections are still finishing. */
  readonly #draining = new Set<Server>();
  #port: number;
  #closeTimer: NodeJS.Timeout | undefined;
  #queue: Promise<void> = Promise.resolve();
  #shutDown = false;
  /** Set once the listener has listened: from then on a port in use is waited out on reopening. */
  #listenedOnce = false;

  constructor(options: JoinListenerOptions) {
    this.#o = options;
    this.#port = options.port;
    this.#handler = createRequestHandler({
      name: "join",
      router: this.#routes(),
      log: options.log,
      before: (ctx) => void this.#clientKey(ctx),
    });
  }

  /** The listener's port (the bound one once it has been open; port 0 until then). */
  get port(): number {
    return this.#port;
  }

  /** True while it listens. */
  get isOpen(): boolean {
    return this.#server?.listening === true;
  }

  /** The listener's current leaf certificate, PEM. */
  get certPem(): string | undefined {
    return this.#leaf?.certPem;
  }

  /** Issues the listener's leaf under the current CA, and swaps it into an open server. */
  async issueLeaf(): Promise<void> {
    const ca = this.#o.cluster.ca;
    this.#leaf = await issueListenerCertificate(ca, { hosts: this.#o.hosts });
    this.#server?.setSecureContext(this.#tlsOptions());
  }

  #tlsOptions(): ReturnType<typeof tlsServerOptions> {
    return tlsServerOptions({
      certPem: this.#leaf!.certPem,
      keyPem: this.#leaf!.keyPem!,
      caPem: this.#o.cluster.ca.certPem,
    });
  }

  /**
   * Opens the listener when it must be open (now, awaited), and closes it when it need not be,
   * after a grace period so the answers that made it unnecessary (a final progress report) are
   * delivered first.
   */
  reconcile(): Promise<void> {
    if (this.#shutDown) return Promise.resolve();
    if (this.#o.cluster.listenerNeeded()) {
      if (this.#closeTimer) clearTimeout(this.#closeTimer);
      this.#closeTimer = undefined;
      return this.#serialize(() => this.#open());
    }
    if (this.isOpen && !this.#closeTimer) {
      this.#closeTimer = setTimeout(() => {
        this.#closeTimer = undefined;
        if (!this.#o.cluster.listenerNeeded()) void this.#serialize(() => this.#close());
      }, this.#o.timing.listenerCloseGraceMs);
      this.#closeTimer.unref();
    }
    return this.#queue;
  }

  /** Binds once to learn the port (port 0), then leaves it as the state requires. */
  async start(): Promise<void> {
    await this.issueLeaf();
    await this.#serialize(() => this.#open());
    if (!this.#o.cluster.listenerNeeded()) await this.#serialize(() => this.#close());
  }

  #serialize(fn: () => Promise<void>): Promise<void> {
    this.#queue = this.#queue.then(fn, fn);
    return this.#queue;
  }

  async #open(): Promise<void> {
    if (this.#shutDown || this.isOpen) return;
    const server = createServer({ ...this.#tlsOptions() }, this.#handler);
    disableSessionTickets(server);
    // The exchange is bound to the connection: it must survive the joiner's Argon2 between the
    // PAKE answer and KE3, and the pause between long polls.
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 70_000;
    server.requestTimeout = 120_000;
    // Failed handshakes (TLS 1.2, garbage) are not requests: nothing to log, nothing to crash on.
    server.on("tlsClientError", () => {});
    answerClientErrors(server, { name: "join", log: this.#o.log });
    const listen = (port: number): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        // Both handlers go when either fires, so repeated attempts leave no listener behind.
        const failed = (error: Error): void => void (server.off("listening", listening), reject(error));
        const listening = (): void => void (server.off("error", failed), resolve());
        server.once("error", failed).once("listening", listening).listen(port, this.#o.host);
      });
    for (let attempt = 0; ; attempt++) {
      try {
        await listen(this.#port);
        break;
      } catch (error) {
        // The port is kept across closing and reopening; something else may have taken it
        // meanwhile. Wait a little; a port that was picked freely (0) may be picked again.
        // At the first start a port in use is the operator's to change: no waiting.
        if ((error as NodeJS.ErrnoException).code !== "EADDRINUSE" || attempt >= 20 || !this.#listenedOnce) {
          if (this.#o.port === 0 && this.#port !== 0) {
            this.#o.log(
              `${new Date().toISOString()} join listener port ${this.#port} was taken meanwhile; listening on a new port`,
            );
            this.#port = 0;
            continue;
          }
          throw error;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    server.on("error", (error) => this.#o.log(`${new Date().toISOString()} join listener error ${error.message}`));
    this.#port = (server.address() as AddressInfo).port;
    this.#listenedOnce = true;
    this.#server = server;
  }

  async #close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    // The port is released now; calls still in flight on accepted connections are answered,
    // and whatever is left after a while is cut. Not waited for: a reopening must not wait
    // for an idle joiner to hang up.
    server.close();
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 5000).unref();
    this.#draining.add(server);
    server.once("close", () => this.#draining.delete(server));
    await new Promise((r) => setImmediate(r));
  }

  /** Closes for good: every connection cut, every long poll ended. */
  async shutdown(): Promise<void> {
    this.#shutDown = true;
    if (this.#closeTimer) clearTimeout(this.#closeTimer);
    for (const wake of [...this.#waiters]) wake();
    await this.#queue.catch(() => {});
    const servers = [...this.#draining, ...(this.#server ? [this.#server] : [])];
    this.#server = undefined;
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            if (!server.listening && !this.#draining.has(server)) return resolve();
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
  }

  /** Forgets expired sessions and rate windows. */
  prune(now = Date.now()): void {
    for (const [id, s] of this.#sessions) if (s.expiresAt <= now) this.#sessions.delete(id);
    this.#limiter.prune(this.#o.limits.perAddressWindowSeconds * 1000, now);
  }

  // ------------------------------------------------------------------ helpers

  /** The client key's fingerprint; 401 for a client that sent no certificate. */
  #clientKey(ctx: RequestContext): string {
    const key = peerKeyFingerprint(ctx.req.socket as TLSSocket);
    if (key === undefined) {
      throw new HttpProblem(401, "UNAUTHORIZED", {
        detail: "The join listener needs a TLS client certificate: its key is the machine's identity.",
      });
    }
    return key;
  }

  #socketId(socket: Socket): string {
    let id = this.#socketIds.get(socket);
    if (!id) {
      id = randomSymbols(16);
      this.#socketIds.set(socket, id);
    }
    return id;
  }

  #limitCalls(ctx: RequestContext): void {
    const { limits } = this.#o;
    const retry = this.#limiter.hit(
      peerAddress(ctx.req.socket),
      "call",
      limits.perAddressCalls,
      limits.perAddressWindowSeconds * 1000,
    );
    if (retry !== undefined)
      throw new HttpProblem(429, "RATE_LIMITED", {
        detail: "Too many calls from this address.",
        headers: { "Retry-After": String(retry) },
      });
  }

  async #requiredBody(ctx: RequestContext, maxBytes = this.#o.limits.bodyBytes): Promise<unknown> {
    const body = await readJson(ctx, maxBytes);
    if (body === undefined) throw invalidInput([{ field: "", message: "a JSON body is required" }]);
    return body;
  }

  /**
   * Checks the KE3 call's proof: the session (this connection, this key, not used, not
   * expired; else 409 `JOIN_PAKE_RESTART`), the OPAQUE KE3 (else 401 `JOIN_CODE_INVALID`), then
   * the `Join-Binding` header (else 401 `JOIN_BINDING_FAILED`: the code was proven over a
   * relayed connection; told only after KE3 verifies, so a guesser learns nothing from it),
   * the attempt still counted either way. Then clears the attempt, sets the
   * server's `Join-Binding` on the answer, and refuses a code that no longer works (401 with
   * the reason) or an upgrade in progress (503).
   */
  async #prove(
    ctx: RequestContext,
    pake: { session: string; ke3: string },
  ): Promise<{ codeId: string; keys: BindingKeys; keyFingerprint: string }> {
    const keyFingerprint = this.#clientKey(ctx);
    const socket = ctx.req.socket as TLSSocket;
    const session = this.#sessions.get(pake.session);
    const restart = (): HttpProblem =>
      new HttpProblem(409, "JOIN_PAKE_RESTART", {
        detail: "No waiting PAKE exchange of this key on this connection; start again with POST /v1/join/pake.",
      });
    // A session presented from another connection or key is refused but not consumed, so a
    // stranger who learnt a session id cannot cancel the owner's exchange.
    if (!session || session.socketId !== this.#socketId(socket) || session.keyFingerprint !== keyFingerprint)
      throw restart();
    this.#sessions.delete(session.id);
    if (session.expiresAt <= Date.now()) throw restart();
    const notProven = (): HttpProblem =>
      new HttpProblem(401, "JOIN_CODE_INVALID", {
        detail: "The join code was not proven: mistyped, or not this cluster's.",
      });
    if (session.codeId === null) throw notProven();
    const sessionKey = await finishServerLogin({ state: session.serverState, ke3: pake.ke3, caDer: session.caDer });
    if (!sessionKey) throw notProven();
    const keys = await deriveBindingKeys(sessionKey);
    const transcript = await bindingTranscript({
      session: session.id,
      ke1: session.ke1,
      ke2: session.ke2,
      caFingerprint: session.caFingerprint,
      clientKeyFingerprint: keyFingerprint,
      exporter: tlsExporter(socket),
    });
    const header = ctx.req.headers["join-binding"];
    if (!(await verifyBinding(keys.kc, transcript, typeof header === "string" ? header : undefined))) {
      throw new HttpProblem(401, "JOIN_BINDING_FAILED", {
        detail:
          "The join code was proven, but not over this TLS connection: something between the machine and the listener relays it.",
      });
    }
    if (session.counted) this.#o.cluster.clearAttempt(session.codeId);
    ctx.res.setHeader("Join-Binding", await serverBinding(keys.ks, transcript));
    const refusal = this.#o.cluster.refusalOfProvenCode(session.codeId);
    if (refusal) throw refusal;
    this.#o.cluster.assertNotUpgrading();
    return { codeId: session.codeId, keys, keyFingerprint };
  }

  /** Resolves when `changed()` turns true after a store change, after `ms`, or when the answer is abandoned. */
  #waitForChange(ctx: RequestContext, ms: number, changed: () => boolean): Promise<void> {
    const store = this.#o.cluster.store;
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        store.off("change", onChange);
        ctx.res.off("close", done);
        this.#waiters.delete(done);
        resolve();
      };
      const onChange = (): void => {
        if (changed()) done();
      };
      const timer = setTimeout(done, ms);
      store.on("change", onChange);
      ctx.res.on("close", done);
      this.#waiters.add(done);
    });
  }

  // ------------------------------------------------------------------ routes

  #routes(): Router {
    const o = this.#o;
    const cluster = o.cluster;
    const router = new Router();

    router.add("POST", "/v1/join/pake", async (ctx) => {
      const keyFingerprint = this.#clientKey(ctx);
      this.#limitCalls(ctx);
      cluster.assertNotUpgrading();
      const body = parseBody(PakeStartSchema, await this.#requiredBody(ctx));
      this.prune();
      // Sessions live in memory until used or expired; a flood of KE1s must not grow it forever.
      if (this.#sessions.size >= MAX_SESSIONS) {
        throw new HttpProblem(429, "RATE_LIMITED", {
          detail: "Too many exchanges waiting; try again shortly.",
          headers: { "Retry-After": "5" },
        });
      }
      const code = cluster.codeForPake(body.selector);
      const ca = cluster.ca;
      let login: { state: string; ke2: string };
      try {
        login = await startServerLogin({
          serverSetup: cluster.serverSetup,
          // For an unknown selector the fake KE2 is derived from the selector, so repeated
          // probes of one selector get consistent answers.
          codeId: code?.id ?? body.selector,
          registrationRecord: code?.record ?? null,
          ke1: body.ke1,
          caDer: ca.certDer,
        });
      } catch {
        throw invalidInput([{ field: "ke1", message: "is not an OPAQUE KE1 message" }]);
      }
      // Counted only once the KE1 is known to be well formed: garbage costs the code nothing.
      const counted =
        code !== undefined && codeState(code, Date.now()) === "live" ? cluster.countAttempt(code.id) : false;
      const id = newPakeSession();
      const expiresAt = Date.now() + o.timing.pakeSessionMs;
      this.#sessions.set(id, {
        id,
        socketId: this.#socketId(ctx.req.socket),
        keyFingerprint,
        serverState: login.state,
        codeId: code?.id ?? null,
        counted,
        ke1: new Uint8Array(Buffer.from(body.ke1, "base64url")),
        ke2: new Uint8Array(Buffer.from(login.ke2, "base64url")),
        caDer: ca.certDer,
        caFingerprint: ca.fingerprint,
        expiresAt,
      });
      sendJson(ctx, 200, {
        session: id,
        ke2: login.ke2,
        caCertificate: ca.certPem,
        expiresAt: new Date(expiresAt).toISOString(),
      });
    });

    router.add("POST", "/v1/join/code-checks", async (ctx) => {
      this.#clientKey(ctx);
      this.#limitCalls(ctx);
      const body = parseBody(CodeCheckRequestSchema, await this.#requiredBody(ctx));
      const proof = await this.#prove(ctx, body.pake);
      sendJson(ctx, 200, cluster.codeCheck(proof.codeId, body.release, body.selfUpgrade === true));
    });

    router.add("POST", "/v1/join/registrations", async (ctx) => {
      this.#clientKey(ctx);
      this.#limitCalls(ctx);
      const body = parseBody(RegistrationRequestSchema, await this.#requiredBody(ctx));
      const proof = await this.#prove(ctx, body.pake);
      const pairingCode = formatPairingCode(await derivePairingCode(proof.keys.pairingKey, proof.keyFingerprint));
      const address = peerAddress(ctx.req.socket);
      const { status, registration } = cluster.register(body, {
        codeId: proof.codeId,
        keyFingerprint: proof.keyFingerprint,
        sourceAddr: address,
        pairingCode,
        allowNew: () =>
          this.#limiter.hit(
            address,
            "registration",
            o.limits.perAddressRegistrations,
            o.limits.perAddressWindowSeconds * 1000,
          ),
      });
      sendJson(ctx, status, registration);
    });

    router.add("GET", "/v1/join/registrations/:joinId", async (ctx) => {
      const key = this.#clientKey(ctx);
      const joinId = ctx.params.joinId!;
      let join = cluster.ownedJoin(joinId, key);
      const raw = ctx.url.searchParams.get("waitSeconds");
      let waitSeconds = 0;
      if (raw !== null) {
        if (!/^\d{1,2}$/.test(raw) || Number(raw) > 30)
          throw invalidInput([{ field: "waitSeconds", message: "must be an integer from 0 to 30" }]);
        waitSeconds = Number(raw);
      }
      // Being polled is being heard from: a waiting joiner is not silent.
      const now = Date.now();
      if (join.lastSeenAt === null || now - join.lastSeenAt > 10_000)
        cluster.store.tx(() => cluster.store.patchJoin(joinId, { lastSeenAt: now }, join.updatedAt));
      const etag = viewEtag(cluster.registration(join));
      const ifNoneMatch = ctx.req.headers["if-none-match"];
      if (waitSeconds > 0 && ifNoneMatch === etag) {
        await this.#waitForChange(
          ctx,
          waitSeconds * 1000,
          () => viewEtag(cluster.registration(cluster.store.getJoin(joinId)!)) !== etag,
        );
      }
      if (ctx.res.destroyed) return;
      join = cluster.store.getJoin(joinId)!;
      const view = cluster.registration(join);
      const current = viewEtag(view);
      if (ifNoneMatch === current) {
        ctx.res.writeHead(304, { ETag: current, "Cache-Control": "no-store" });
        ctx.res.end();
        return;
      }
      sendJson(ctx, 200, view, { ETag: current });
    });

    router.add("POST", "/v1/join/registrations/:joinId/progress", async (ctx) => {
      const key = this.#clientKey(ctx);
      const join = cluster.ownedJoin(ctx.params.joinId!, key);
      const body = parseBody(ProgressReportSchema, (await readJson(ctx, o.limits.progressBodyBytes)) ?? {});
      const registration = cluster.progress(join, body);
      o.kickRunner();
      sendJson(ctx, 200, registration);
    });

    router.add("GET", "/v1/join/registrations/:joinId/release/*path", (ctx) => {
      const key = this.#clientKey(ctx);
      const join = cluster.ownedJoin(ctx.params.joinId!, key);
      if (join.state !== "needs-upgrade") {
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${join.state}; the release is served only while it upgrades itself.`,
        });
      }
      if (!join.upgrade?.served || !o.releaseDir)
        throw new HttpProblem(404, "NOT_FOUND", { detail: "The founder serves no release to this registration." });
      cluster.assertNotUpgrading();
      const file = resolveReleasePath(joinPath(o.releaseDir, o.clusterRelease), ctx.params.path!);
      if (!this.#served.acquire(join.id, o.limits.releaseFilesAtOnce)) {
        throw new HttpProblem(503, "RELEASE_BUSY", {
          detail: `At most ${o.limits.releaseFilesAtOnce} files at once; retry.`,
          headers: { "Retry-After": "1" },
        });
      }
      sendReleaseFile(ctx, file, () => this.#served.release(join.id));
    });

    return router;
  }
}
