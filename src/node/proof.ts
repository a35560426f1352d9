/**
 * Proving a join code on ONE TLS 1.3 connection with the machine's client certificate, and
 * the one call that proof authorises (docs/protocol.md#binding-headers), within the call's deadline:
 *  1. the code is parsed locally: a typo never reaches the network or costs an attempt;
 *  2. KE1 → `POST /v1/join/pake` → KE2 and the cluster CA; `finishLogin` with the server
 *     identifier of that CA (else the listener did not prove the code and nothing more is
 *     sent); the listener's TLS leaf must chain to that CA, name the dialled host and carry the
 *     listener role (pake-exchange.ts);
 *  3. the leaf's dates, by this machine's clock; a leaf that fails by it while the founder's
 *     time (the answer's `serverTime`) is more than 5 minutes away is judged by the founder's
 *     time only once that time is authenticated: first a code check that carries only the
 *     release, whose bound answer authenticates it, then a fresh exchange for the call itself
 *     (docs/protocol.md#founder-time). Nothing about the machine goes out before;
 *  4. KE3 in the seeded body of the call, with `Join-Binding`; the answer's `Join-Binding` is
 *     checked before its body is trusted, a refusal's too. A refusal of KE1, or of the KE3 call
 *     without the binding, is unproven (unproven.ts, docs/protocol.md#unproven).
 * What is waited out and tried again with a fresh exchange on a fresh connection, while the
 * deadline leaves room (docs/protocol.md#deadlines): a refusal as busy (503, 429), a listener
 * that cannot be reached or cuts the connection (refused, reset; a registration is idempotent
 * by its key, so one whose answer was lost is found again), and, once, `JOIN_PAKE_RESTART`.
 * @module
 */
import { checkTimeout, withDeadline, type Deadline } from "../core/deadline.js";
import { parseJoinCode, type JoinCode } from "../core/join-code.js";
import { formatEndpoint, parseEndpoint, parseJoinUrl } from "../core/join-url.js";
import { isBusyRefusal, retryDelay, sleep, throwIfAborted } from "../core/retry.js";
import { JoinProtocolError, NetworkError, StratumApiError, StratumError, TimeoutError } from "../errors/index.js";
import { loadAnswerSchemas } from "./answers.js";
import type { MachineIdentity } from "./identity.js";
import { loadOpaque } from "../protocol/opaque.js";
import { openPinnedConnection, type PinnedConnection, type PinnedResponse } from "./pinned-connection.js";
import { DEFAULT_CONNECT_TIMEOUT_MS } from "./pinned-socket.js";
import { founderNow, pastTolerance } from "../protocol/founder-time.js";
import { proveCode, sendProof, type Proof } from "./pake-exchange.js";

export type { Proof } from "./pake-exchange.js";

/** Where the join listener is and which code to prove: a join URL, or an endpoint and a code. */
export type JoinTarget =
  | {
      /** `stratum-join://HOST[:PORT]/XXXX-XXXX-XXX` */ url: string;
      /** Not with `url`: the URL carries it. */
      endpoint?: never | undefined;
      /** Not with `url`: the URL carries it. */
      code?: never | undefined;
    }
  | {
      /** Not with `endpoint` and `code`. */
      url?: never | undefined;
      /** `host` or `host:port` (9444 by default) */ endpoint: string;
      /** the join code, in any accepted spelling */ code: string;
    };

/**
 * The deadline of `checkJoinCode` and `registerMachine` when the caller gives none: 120 s.
 * Two PAKE session lifetimes (about 60 s each): a KE1 refused because the code has too many
 * exchanges outstanding (503 `JOIN_CODE_BUSY`, a batch of machines starting at once) sees
 * every one of them end, by a KE3 or by expiry, and gets its turn, with room left for TLS,
 * the joiner's Argon2 and a slow link. A listener silent for longer is taken for gone.
 */
export const DEFAULT_JOIN_TIMEOUT_MS = 120_000;

// Backoff between KE1s refused as busy when the listener sends no Retry-After: a batch of
// machines refused together must not come back together (full jitter), and an exchange frees
// its slot within seconds, so a few seconds between tries is enough.
const BUSY_BACKOFF = { baseMs: 1_000, maxMs: 8_000 };
// Backoff while the listener cannot be reached or cuts connections: a founder restarting (a
// crash, an upgrade) is back within seconds, and machines cut off together must not come back
// together either.
const TRANSPORT_BACKOFF = { baseMs: 500, maxMs: 8_000 };

/** The code check, whose fields say nothing about the machine (docs/protocol.md#founder-time). */
const CODE_CHECKS = "/v1/join/code-checks";

/** Options every call that proves a code takes. */
export interface ProveOptions {
  /**
   * Aborts the call (connect, PAKE, request, a wait for a busy code). Abort rule: the call
   * re-throws the caller's abort as is, the signal's `reason` (`isAbortError(e, signal)`).
   */
  signal?: AbortSignal | undefined;
  /**
   * The whole call's deadline in ms, default {@link DEFAULT_JOIN_TIMEOUT_MS} (120 s): TCP, TLS,
   * every request, its headers and its whole body, the joiner's Argon2, and the waits for a
   * busy code. Then `TimeoutError` (code `TIMEOUT`), whatever was pending. `Infinity` for none.
   */
  timeoutMs?: number | undefined;
  /** Time allowed for TCP + TLS of each connection (default 10 s, and never past `timeoutMs`). */
  connectTimeoutMs?: number | undefined;
  /**
   * Told before each wait and fresh exchange, with what caused it and the wait in ms: a busy
   * code or founder (a `StratumApiError` with status 503, e.g. `JOIN_CODE_BUSY` or
   * `STORAGE_UNAVAILABLE`, or 429, to the KE1 or to the call KE3 carries), or a listener that
   * could not be reached or cut the connection (`NetworkError`, `TimeoutError` of a connection
   * attempt, `JoinProtocolError` `CONNECTION_CHANGED`): e.g. to show "the founder is busy,
   * retrying in 3 s" or "the listener is unreachable (ECONNREFUSED), retrying in 2 s".
   */
  onRetry?: ((error: StratumError, delayMs: number) => void) | undefined;
}

/**
 * Starts loading what proving a code needs and the joiner does not load at import time: the
 * OPAQUE WebAssembly and the answer schemas. Called as a proof begins, so they load
 * together and while the identity is made and the connection opens, rather than one by one
 * inside the call's deadline. A load that fails is left to the step that awaits it.
 */
export function startLoadingProof(): void {
  for (const loading of [loadOpaque(), loadAnswerSchemas()]) loading.catch(() => undefined);
}

/** A join target read locally ({@link readTarget}). */
export interface Target {
  host: string;
  port: number;
  endpoint: string;
  code: JoinCode;
}

/** Reads the target locally; a typo throws here, before any network call. */
export function readTarget(target: JoinTarget): Target {
  if (target.url !== undefined) {
    const url = parseJoinUrl(target.url);
    return { host: url.host, port: url.port, endpoint: url.endpoint, code: url.code };
  }
  if (typeof target.endpoint !== "string" || typeof target.code !== "string") {
    throw new StratumError("INVALID_ARGUMENT", "give either url, or endpoint and code");
  }
  const endpoint = parseEndpoint(target.endpoint);
  const code = parseJoinCode(target.code);
  return {
    host: endpoint.host,
    port: endpoint.port,
    endpoint: formatEndpoint(endpoint, { includeDefaultPort: true }),
    code,
  };
}

/** The call a proof authorises, as {@link proveAndCall} makes it. */
export interface ProvenCall {
  /** `/v1/join/code-checks` or `/v1/join/registrations`. */
  path: string;
  /** The call's body, given the proof's `pake` and the founder's time as this call takes it. */
  body: (pake: { session: string; ke3: string }, proof: Pick<Proof, "clockOffsetMs">) => Record<string, unknown>;
  /**
   * What a code check sends when the founder's time must be authenticated first: only what the
   * installer carries (its release), nothing about the machine.
   */
  release: string;
  selfUpgrade?: boolean | undefined;
}

/** What {@link proveAndCall} returns. */
export interface ProvenAnswer {
  response: PinnedResponse;
  /** The exchange that carried the call; its `clockOffsetMs` authenticated by the answer. */
  proof: Proof;
  /**
   * Pairing keys of earlier exchanges of this call whose KE3 call went out but whose answer was
   * lost (the connection cut): the founder may have applied it (a registration is then found
   * again, with the pairing code of that exchange).
   */
  lostPairingKeys: Uint8Array[];
}

/** True for a failure of the transport, not an answer: nothing said the call was refused. */
function isTransportFailure(error: unknown): boolean {
  if (error instanceof NetworkError || error instanceof TimeoutError) return true;
  return error instanceof JoinProtocolError && error.code === "CONNECTION_CHANGED";
}

/**
 * Runs exchanges until one carries the call and its answer verifies, within the call's
 * deadline (see the module's comment for what is waited out and tried again).
 */
export async function proveAndCall(
  target: Target,
  identity: MachineIdentity,
  call: ProvenCall,
  options: ProveOptions,
): Promise<ProvenAnswer> {
  checkTimeout("timeoutMs", options.timeoutMs);
  checkTimeout("connectTimeoutMs", options.connectTimeoutMs);
  const what = `POST ${call.path} with the join listener at ${target.endpoint}`;
  return withDeadline(options.timeoutMs ?? DEFAULT_JOIN_TIMEOUT_MS, options.signal, what, async (deadline) => {
    const calls = new ExchangeRun(target, identity, call, options, deadline);
    for (;;) {
      const answer = await calls.attempt();
      if (answer) return answer;
    }
  });
}

/** The exchanges of one call, and what each teaches the next. */
class ExchangeRun {
  /** The founder's time minus this machine's, once an answer bound to it verified. */
  #authenticatedOffsetMs: number | undefined;
  #restarted = false;
  #busyWaits = 0;
  #transportWaits = 0;
  readonly #lostPairingKeys: Uint8Array[] = [];

  constructor(
    private readonly target: Target,
    private readonly identity: MachineIdentity,
    private readonly call: ProvenCall,
    private readonly options: ProveOptions,
    private readonly deadline: Deadline,
  ) {}

  /** One exchange: the answer when it carried the call, undefined when another must follow. */
  async attempt(): Promise<ProvenAnswer | undefined> {
    const { deadline } = this;
    throwIfAborted(deadline.signal);
    let connection: PinnedConnection | undefined;
    let sent: Proof | undefined;
    try {
      connection = await openPinnedConnection({
        host: this.target.host,
        port: this.target.port,
        identity: this.identity,
        signal: deadline.signal,
        connectTimeoutMs: Math.max(
          1,
          Math.min(this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, deadline.remainingMs()),
        ),
      });
      const proof = await proveCode(connection, this.target, this.identity.keyFingerprint, deadline);
      const timeCheck = this.#judgeDates(proof) && this.call.path !== CODE_CHECKS;
      if (!connection.alive) {
        throw new JoinProtocolError(
          "CONNECTION_CHANGED",
          "the join listener closed the connection before KE3; the proof is bound to it",
        );
      }
      const offset = this.#authenticatedOffsetMs ?? proof.clockOffsetMs;
      const pake = { session: proof.session, ke3: proof.ke3 };
      sent = proof;
      const response = await sendProof(
        connection,
        proof,
        {
          endpoint: this.target.endpoint,
          path: timeCheck ? CODE_CHECKS : this.call.path,
          body: timeCheck
            ? {
                pake,
                release: this.call.release,
                ...(this.call.selfUpgrade !== undefined ? { selfUpgrade: this.call.selfUpgrade } : {}),
              }
            : this.call.body(pake, { clockOffsetMs: offset }),
          onBound: () => this.#authenticated(proof),
        },
        deadline,
      );
      // The founder's time is now known; the call itself goes in a fresh exchange.
      if (timeCheck) return undefined;
      return {
        response,
        // the offset the call carried, which the bound answer has now authenticated
        proof: { ...proof, clockOffsetMs: offset },
        lostPairingKeys: [...this.#lostPairingKeys],
      };
    } catch (error) {
      await this.#recover(error, sent, connection);
      return undefined;
    } finally {
      await connection?.close();
    }
  }

  /**
   * The leaf's dates before KE3 (docs/protocol.md#founder-time): by the founder's time once it
   * is authenticated, else by this machine's clock. True when they fail by this machine's clock
   * and the founder's time, not authenticated yet, is more than the tolerance away: then they
   * are judged once an answer authenticates that time, and the KE3 call must carry nothing
   * about the machine.
   * @throws JoinProtocolError `LISTENER_CERTIFICATE` `validity`
   */
  #judgeDates(proof: Proof): boolean {
    if (this.#authenticatedOffsetMs !== undefined) {
      proof.listener.assertValidAt(founderNow(this.#authenticatedOffsetMs));
      return false;
    }
    const now = new Date();
    if (proof.listener.validAt(now)) return false;
    if (!pastTolerance(proof.clockOffsetMs)) proof.listener.assertValidAt(now);
    return true;
  }

  /**
   * An answer bound to `proof`'s exchange verified: its `serverTime` is the founder's. Past the
   * tolerance, the leaf is judged by that time (`founderNow`; within it, by this machine's clock) (a leaf that passed only by this machine's
   * wrong clock, or waited for it, is expired or not yet valid in the founder's time).
   * @throws JoinProtocolError `LISTENER_CERTIFICATE` `validity`
   */
  #authenticated(proof: Proof): void {
    const offset = this.#authenticatedOffsetMs ?? proof.clockOffsetMs;
    proof.listener.assertValidAt(founderNow(offset));
    this.#authenticatedOffsetMs = offset;
  }

  /** Waits before the next exchange when `error` allows one; else throws it. */
  async #recover(error: unknown, sent: Proof | undefined, connection: PinnedConnection | undefined): Promise<void> {
    const { deadline, options } = this;
    if (deadline.signal.aborted) throw error;
    let delay: number;
    if (isBusyRefusal(error)) {
      // A busy founder (503: its disk full, an upgrade; 429) refused the KE1, or the call the
      // proven KE3 carried with nothing done. A proven exchange never counts as an attempt, so
      // starting again costs the code nothing.
      delay = retryDelay(this.#busyWaits++, error.retryAfter, BUSY_BACKOFF);
    } else if (isTransportFailure(error)) {
      // Refused, reset, cut: nothing answered. A KE3 call may have been applied all the same;
      // sent again in a fresh exchange, a registration is found again by its key.
      if (sent) this.#lostPairingKeys.push(sent.pairingKey);
      delay = retryDelay(this.#transportWaits++, undefined, TRANSPORT_BACKOFF);
    } else if (!this.#restarted && error instanceof StratumApiError && error.code === "JOIN_PAKE_RESTART") {
      // The listener dropped the exchange (its session expired during a slow Argon2): one fresh one.
      this.#restarted = true;
      return;
    } else {
      throw error;
    }
    // A wait the deadline cannot hold: the last failure says more than a timeout would.
    if (delay >= deadline.remainingMs()) throw error;
    options.onRetry?.(error as StratumError, delay);
    await connection?.close();
    await sleep(delay, deadline.signal);
  }
}
