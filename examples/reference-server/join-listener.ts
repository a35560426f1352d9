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
 * This file holds the server's life (open, close, reopen, shut down), the checks every call
 * makes (the client key, the per-address limit, the body) and the routes. The PAKE's two steps
 * are join-pake.ts, the exchanges it waits on and their attempt budget pake-sessions.ts, the
 * registration, the code check and the calls pinned to the key join-calls.ts.
 * @module
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import {
  disableSessionTickets,
  issueListenerCertificate,
  peerKeyFingerprint,
  tlsServerOptions,
  type IssuedCertificate,
} from "@stratum/join/server";
import { AddressLimiter, peerAddress, sourceOf } from "./address-limiter.js";
import { BodyBudget } from "./http-body.js";
import type { BurnedCode } from "./join-codes.js";
import { LiveKe2Rate } from "./live-rate.js";
import type { Cluster } from "./cluster.js";
import type { Limits, Timing } from "./config.js";
import {
  HttpProblem,
  Router,
  createRequestHandler,
  invalidInput,
  parseBody,
  readJson,
  type Logger,
  type RequestContext,
} from "./http.js";
import { randomSymbols } from "./ids.js";
import { addPinnedRoutes, addProofRoutes, type JoinCallsOptions } from "./join-calls.js";
import { PakeSteps } from "./join-pake.js";
import { PakeSessions } from "./pake-sessions.js";
import { PakeStartSchema } from "./schemas.js";
import { answerClientErrors } from "./http-client-errors.js";

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

/** The join listener. {@link JoinListener.reconcile} opens or closes it as the state requires. */
export class JoinListener {
  readonly #o: JoinListenerOptions;
  readonly #sessions: PakeSessions;
  readonly #pake: PakeSteps;
  readonly #socketIds = new WeakMap<Socket, string>();
  readonly #limiter = new AddressLimiter();
  readonly #bodies: BodyBudget;
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
    const { limits, log } = options;
    const liveRate = new LiveKe2Rate({
      burst: limits.liveKe2Burst,
      perMinute: limits.liveKe2PerMinute,
      // Told once per episode: a sweep of the selectors is visible as it happens.
      onSpent: () =>
        log(
          `${new Date().toISOString()} join listener: the founder-wide rate of KE2s for live codes is spent (${limits.liveKe2Burst} at once, ${limits.liveKe2PerMinute} a minute): every KE1 is told to wait; see the attempts of each code (admin codes) for where they come from`,
        ),
    });
    this.#sessions = new PakeSessions({
      maxAttempts: limits.maxAttempts,
      writeUnproven: (ends) => {
        for (const burned of options.cluster.countUnproven(ends)) log(burnLine(burned));
      },
      onWriteError: (error) =>
        log(
          `${new Date().toISOString()} join listener could not count attempts yet: ${error instanceof Error ? error.message : "unknown error"}`,
        ),
      onProvenLive: () => liveRate.refund(),
      onUnprovenLive: () => liveRate.spend(),
    });
    this.#pake = new PakeSteps({
      cluster: options.cluster,
      timing: options.timing,
      sessions: this.#sessions,
      liveRate,
      socketId: (socket) => this.#socketId(socket),
    });
    this.#bodies = new BodyBudget(limits.bodiesInFlightBytes);
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
    // Counted attempts are written; exchanges still waiting are dropped, as a crash drops them.
    this.#sessions.close();
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

  /** Ends expired exchanges (counted: unproven) and forgets passed rate windows. */
  prune(now = Date.now()): void {
    this.#sessions.expire(now);
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

  /** The connection's id; the exchanges bound to it end (unproven) when it closes. */
  #socketId(socket: TLSSocket): string {
    let id = this.#socketIds.get(socket);
    if (!id) {
      const assigned = randomSymbols(16);
      this.#socketIds.set(socket, assigned);
      socket.once("close", () => this.#sessions.connectionClosed(assigned));
      id = assigned;
    }
    return id;
  }

  /** Where a call comes from as the limits count it: an address, or an IPv6 prefix. */
  #source(ctx: RequestContext): string {
    return sourceOf(peerAddress(ctx.req.socket), this.#o.limits.ipv6PrefixLength);
  }

  /** Counts a call against its source's limit (429 past it); returns what takes the count back. */
  #limitCalls(ctx: RequestContext): () => void {
    const { limits } = this.#o;
    const source = this.#source(ctx);
    const at = Date.now();
    const retry = this.#limiter.hit(source, "call", limits.perAddressCalls, limits.perAddressWindowSeconds * 1000, at);
    if (retry !== undefined)
      throw new HttpProblem(429, "RATE_LIMITED", {
        detail: "Too many calls from this address.",
        headers: { "Retry-After": String(retry) },
      });
    return () => this.#limiter.forget(source, "call", at);
  }

  /** A JSON body of at most `maxBytes` (what the route carries), within the listener's total in flight. */
  async #requiredBody(ctx: RequestContext, maxBytes: number): Promise<unknown> {
    const body = await readJson(ctx, maxBytes, this.#bodies);
    if (body === undefined) throw invalidInput([{ field: "", message: "a JSON body is required" }]);
    return body;
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
    const router = new Router();
    router.add("POST", "/v1/join/pake", async (ctx) => {
      const keyFingerprint = this.#clientKey(ctx);
      const uncount = this.#limitCalls(ctx);
      o.cluster.assertNotUpgrading();
      const body = parseBody(PakeStartSchema, await this.#requiredBody(ctx, o.limits.pakeBodyBytes));
      try {
        await this.#pake.start(ctx, keyFingerprint, this.#source(ctx), body);
      } catch (error) {
        // A KE1 told to wait cost nothing: machines behind one address that wait as told are
        // not rate limited for it (each retry would count otherwise).
        if (error instanceof HttpProblem && error.code === "JOIN_CODE_BUSY") uncount();
        throw error;
      }
    });
    const calls: JoinCallsOptions = {
      cluster: o.cluster,
      limits: o.limits,
      limiter: this.#limiter,
      pake: this.#pake,
      releaseDir: o.releaseDir,
      clusterRelease: o.clusterRelease,
      kickRunner: o.kickRunner,
      clientKey: (ctx) => this.#clientKey(ctx),
      limitCalls: (ctx) => this.#limitCalls(ctx),
      source: (ctx) => this.#source(ctx),
      requiredBody: (ctx, maxBytes) => this.#requiredBody(ctx, maxBytes),
      bodies: this.#bodies,
      waitForChange: (ctx, ms, changed) => this.#waitForChange(ctx, ms, changed),
    };
    addProofRoutes(router, calls);
    addPinnedRoutes(router, calls);
    return router;
  }
}

/** The log line of a code burned by attempts that did not prove it: who made them. */
function burnLine(burned: BurnedCode): string {
  const from = burned.sources.map((s) => `${s.source} (${s.attempts})`).join(", ");
  return `${new Date().toISOString()} join code ${burned.id} (selector ${burned.selector}) burned: revoked by system:too-many-attempts after attempts that did not prove it, from ${from || "no source recorded"}`;
}
