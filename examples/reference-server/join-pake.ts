/**
 * The PAKE as the join listener runs it (docs/protocol.md §5): the KE1 step (`POST
 * /v1/join/pake` answers KE2 and keeps a session bound to the connection and the client key)
 * and the KE3 step (the proof carried by the next call on that connection, with its
 * `Join-Binding`).
 *
 * Live and unknown selectors take one path: the same reads, the same OPAQUE work (a fake KE2
 * is the library's answer to a null record, from the same server setup; a fake session's KE3
 * is checked like a real one), the same budget of outstanding exchanges, no durable write and
 * no log line of their own. Only what a guesser cannot see differs: whether an unproven end is
 * counted, written after the answer (pake-sessions.ts), and whether the KE2 takes a token of
 * the founder-wide rate of live KE2s (live-rate.ts); while that rate is spent, every KE1 is told
 * to wait, whatever its selector.
 * @module
 */

import type { TLSSocket } from "node:tls";
import {
  bindingTranscript,
  deriveBindingKeys,
  finishServerLogin,
  serverBinding,
  startServerLogin,
  tlsExporter,
  verifyBinding,
  type BindingKeys,
} from "@stratum/join/server";
import type { Cluster } from "./cluster.js";
import type { Timing } from "./config.js";
import { HttpProblem, invalidInput, sendJson, type RequestContext } from "./http.js";
import { newPakeSession } from "./ids.js";
import type { LiveKe2Rate } from "./live-rate.js";
import type { PakeSessions } from "./pake-sessions.js";
import { codeState } from "./views.js";

/**
 * The `Retry-After` of `JOIN_CODE_BUSY`, in whole seconds, drawn in this range: an honest
 * exchange ends within a joiner's Argon2 (a second or a few), and machines refused together
 * come back spread over it rather than all at once.
 */
const BUSY_RETRY_SECONDS = { min: 1, max: 3 };

/** What a KE3 that verified proves. */
export interface Proof {
  codeId: string;
  keys: BindingKeys;
  keyFingerprint: string;
}

/** What the PAKE steps need of the listener. */
export interface PakeStepsOptions {
  cluster: Cluster;
  timing: Timing;
  sessions: PakeSessions;
  /** The founder-wide rate of KE2s answered for live codes. */
  liveRate: LiveKe2Rate;
  /** The connection's id (sessions are bound to it). */
  socketId: (socket: TLSSocket) => string;
}

/** The KE1 and KE3 steps. */
export class PakeSteps {
  readonly #o: PakeStepsOptions;

  constructor(options: PakeStepsOptions) {
    this.#o = options;
  }

  /**
   * Answers a well-formed KE1 (the caller checked the key, the limits and the body): KE2, the
   * CA and the founder's time, or 503 `JOIN_CODE_BUSY` when the code has as many exchanges
   * outstanding as it has attempts left, 401 `JOIN_CODE_STALE` for a code of a replaced CA, 400 for a KE1 that is
   * not an OPAQUE message (it costs the code nothing).
   */
  async start(
    ctx: RequestContext,
    keyFingerprint: string,
    source: string,
    body: { selector: string; ke1: string },
  ): Promise<void> {
    const { cluster, sessions, timing, liveRate } = this.#o;
    const code = cluster.codeForPake(body.selector);
    const live = code !== undefined && codeState(code, Date.now()) === "live";
    // The founder-wide rate spent: every KE1 waits, so the refusal names no live selector.
    if (!liveRate.hasToken()) throw busy(liveRate.secondsUntilToken());
    // A selector with no code draws on a budget of its own, never on a live code's (ended codes
    // on their own id), so exchanges left waiting for unknown selectors crowd out no live code.
    const slot = sessions.reserve({
      key: code?.id ?? `selector:${body.selector}`,
      counted: live ? code.attempts : 0,
      countable: live,
    });
    if (!slot) throw busy();
    // hasToken said a moment ago, with nothing awaited since, that a token is there.
    if (live) liveRate.take();
    // A KE2 that is never answered costs the rate nothing.
    const unanswered = (): void => {
      slot.release();
      if (live) liveRate.refund();
    };
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
      unanswered();
      throw invalidInput([{ field: "ke1", message: "is not an OPAQUE KE1 message" }]);
    }
    // The connection went away while the KE2 was made: it reaches nobody, so nothing is spent.
    if (ctx.req.socket.destroyed) {
      unanswered();
      return;
    }
    const id = newPakeSession();
    const now = Date.now();
    const expiresAt = now + timing.pakeSessionMs;
    // The founder's clock, for a joiner whose own is wrong (docs/protocol.md#founder-time).
    const serverTime = new Date(now).toISOString();
    sessions.add({
      id,
      socketId: this.#o.socketId(ctx.req.socket as TLSSocket),
      keyFingerprint,
      source,
      serverState: login.state,
      codeId: code?.id ?? null,
      budget: slot.budget,
      // The transcript's messages, for a code a KE3 can prove; a fake KE2's KE3 never verifies.
      messages: code
        ? {
            ke1: new Uint8Array(Buffer.from(body.ke1, "base64url")),
            ke2: new Uint8Array(Buffer.from(login.ke2, "base64url")),
          }
        : null,
      caDer: ca.certDer,
      caFingerprint: ca.fingerprint,
      serverTime,
      expiresAt,
    });
    sendJson(ctx, 200, {
      session: id,
      ke2: login.ke2,
      caCertificate: ca.certPem,
      expiresAt: new Date(expiresAt).toISOString(),
      serverTime,
    });
  }

  /**
   * Checks the KE3 call's proof: the session (this connection, this key, not used, not
   * expired; else 409 `JOIN_PAKE_RESTART`), the OPAQUE KE3 (else 401 `JOIN_CODE_INVALID`: the
   * exchange ends unproven and counts), then the `Join-Binding` header (else 401
   * `JOIN_BINDING_FAILED`: the code was proven over a relayed connection; told only after KE3
   * verifies, so a guesser learns nothing from it, and not counted, as the exchange was
   * proven). Then sets the server's `Join-Binding` on the answer, and refuses a code that no
   * longer works (401 with the reason) or an upgrade in progress (503).
   */
  async prove(ctx: RequestContext, keyFingerprint: string, pake: { session: string; ke3: string }): Promise<Proof> {
    const { cluster, sessions } = this.#o;
    const socket = ctx.req.socket as TLSSocket;
    const session = sessions.take(pake.session, this.#o.socketId(socket), keyFingerprint);
    if (!session) throw restart();
    if (session.expiresAt <= Date.now()) {
      sessions.end(session, false);
      throw restart();
    }
    // A fake session's state never verifies; it is checked all the same, so that a KE3 for an
    // unknown selector takes the time one for a live code takes.
    const sessionKey = await finishServerLogin({ state: session.serverState, ke3: pake.ke3, caDer: session.caDer });
    if (!sessionKey || session.codeId === null || session.messages === null) {
      sessions.end(session, false);
      throw new HttpProblem(401, "JOIN_CODE_INVALID", {
        detail: "The join code was not proven: mistyped, or not this cluster's.",
      });
    }
    sessions.end(session, true);
    const keys = await deriveBindingKeys(sessionKey);
    const transcript = await bindingTranscript({
      session: session.id,
      ke1: session.messages.ke1,
      ke2: session.messages.ke2,
      caFingerprint: session.caFingerprint,
      clientKeyFingerprint: keyFingerprint,
      exporter: tlsExporter(socket),
      serverTime: session.serverTime,
    });
    const header = ctx.req.headers["join-binding"];
    if (!(await verifyBinding(keys.kc, transcript, typeof header === "string" ? header : undefined))) {
      throw new HttpProblem(401, "JOIN_BINDING_FAILED", {
        detail:
          "The join code was proven, but not over this TLS connection: something between the machine and the listener relays it.",
      });
    }
    ctx.res.setHeader("Join-Binding", await serverBinding(keys.ks, transcript));
    const refusal = cluster.refusalOfProvenCode(session.codeId);
    if (refusal) throw refusal;
    cluster.assertNotUpgrading();
    return { codeId: session.codeId, keys, keyFingerprint };
  }
}

function restart(): HttpProblem {
  return new HttpProblem(409, "JOIN_PAKE_RESTART", {
    detail: "No waiting PAKE exchange of this key on this connection; start again with POST /v1/join/pake.",
  });
}

/** 503 `JOIN_CODE_BUSY`, after `atLeast` seconds and a spread drawn from {@link BUSY_RETRY_SECONDS}. */
function busy(atLeast = 0): HttpProblem {
  const { min, max } = BUSY_RETRY_SECONDS;
  const spread = min + Math.floor(Math.random() * (max - min + 1));
  return new HttpProblem(503, "JOIN_CODE_BUSY", {
    detail: "Too many exchanges are waiting for their proof; send a new KE1 after Retry-After.",
    headers: { "Retry-After": String(Math.max(atLeast, 0) + spread) },
  });
}
