/**
 * Proving a join code on ONE TLS 1.3 connection with the machine's client certificate, and
 * the one call that proof authorises (docs/protocol.md#binding-headers), within the call's deadline:
 *  1. the code is parsed locally: a typo never reaches the network or costs an attempt;
 *  2. KE1 → `POST /v1/join/pake` → KE2 and the cluster CA (a KE1 refused as busy, 503
 *     `JOIN_CODE_BUSY` or 429, is waited out and sent again on a fresh connection; so is a
 *     KE3 call refused as busy, with a fresh exchange);
 *  3. `finishLogin` with the server identifier of that CA: if it fails, the listener did not
 *     prove the code and nothing more is sent;
 *  4. the listener's TLS leaf must chain to that CA, be valid (at the founder's time, from the
 *     answer's `serverTime`, when this machine's clock is more than 5 minutes off), name the
 *     dialled host and carry the listener role; only then is the CA pinned;
 *  5. KE3 in the seeded body of the next call, with `Join-Binding` (HMAC over a transcript that
 *     includes the TLS exporter and `serverTime`, so a relay that terminates TLS fails it: the listener says so
 *     with 401 `JOIN_BINDING_FAILED`, reported as `CONNECTION_INTERCEPTED`);
 *  6. the answer's `Join-Binding` is checked before the body is trusted.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { fromBase64Url } from "../core/bytes.js";
import { checkTimeout, withDeadline, within, type Deadline } from "../core/deadline.js";
import { parseJoinCode, type JoinCode } from "../core/join-code.js";
import { formatEndpoint, parseEndpoint, parseJoinUrl } from "../core/join-url.js";
import { bindingTranscript, clientBinding, deriveBindingKeys, verifyBinding } from "../core/pairing.js";
import { isBusyRefusal, retryDelay, sleep, throwIfAborted } from "../core/retry.js";
import { JoinProtocolError, StratumApiError, StratumError } from "../errors/index.js";
import { loadAnswerSchemas, parseAnswer } from "./answers.js";
import type { MachineIdentity } from "./identity.js";
import { finishLogin, startLogin } from "./opaque.js";
import { loadOpaque } from "../protocol/opaque.js";
import {
  openPinnedConnection,
  refusalOf,
  responseHeader,
  type PinnedConnection,
  type PinnedResponse,
} from "./pinned-connection.js";
import { DEFAULT_CONNECT_TIMEOUT_MS } from "./pinned-socket.js";
import { caFingerprint, verifyListenerCertificate } from "../protocol/pki.js";
import { founderNow, measureClockOffset } from "../protocol/founder-time.js";

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
   * Told before each wait for a busy code or founder (503, e.g. `JOIN_CODE_BUSY` or
   * `STORAGE_UNAVAILABLE`, or 429, to the KE1 or to the call KE3 carries), with the refusal
   * and the wait in ms: e.g. to show "the founder is busy, retrying in 3 s".
   */
  onRetry?: ((error: StratumApiError, delayMs: number) => void) | undefined;
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

function pemToDer(pem: string): Uint8Array {
  try {
    return new Uint8Array(new X509Certificate(pem).raw);
  } catch (cause) {
    throw new JoinProtocolError(
      "LISTENER_CERTIFICATE",
      "the listener's answer carries no readable cluster CA certificate",
      { cause, check: "missing" },
    );
  }
}

/** A proof in progress: what the KE3 call needs and what its answer is checked against. */
export interface Proof {
  session: string;
  ke3: string;
  bindingHeader: string;
  ks: Uint8Array;
  pairingKey: Uint8Array;
  transcript: Uint8Array;
  caPem: string;
  caDer: Uint8Array;
  caFingerprint: string;
  /** The founder's time minus this machine's, ms, measured at the PAKE answer. */
  clockOffsetMs: number;
}

/**
 * Steps 2–4 on `connection`: KE1/KE2, `finishLogin`, the listener's leaf, the binding.
 * Returns only when the listener proved the code and its certificate passed every check.
 * @throws StratumApiError for a refused KE1 (503 `JOIN_CODE_BUSY`, 429, …)
 */
async function proveCode(
  connection: PinnedConnection,
  target: Target,
  keyFingerprint: string,
  deadline: Deadline,
): Promise<Proof> {
  const login = await startLogin(target.code.code);
  const response = await connection.request({
    method: "POST",
    path: "/v1/join/pake",
    json: { selector: target.code.selector, ke1: login.ke1 },
    ...within(deadline),
  });
  const receivedAtMs = Date.now();
  if (response.status !== 200) throw refusalOf(response, "POST /v1/join/pake");
  const challenge = await parseAnswer("PakeChallengeSchema", "POST /v1/join/pake", response.json);
  // Measured before the Argon2 below, which would otherwise count as clock difference.
  const clockOffsetMs = measureClockOffset(challenge.serverTime, receivedAtMs);
  const caDer = pemToDer(challenge.caCertificate);
  throwIfAborted(deadline.signal);
  const finished = await finishLogin({ state: login.state, ke2: challenge.ke2, code: target.code.code, caDer });
  // Argon2 blocks the event loop: a deadline that passed meanwhile is noticed here.
  throwIfAborted(deadline.signal);
  if (!finished) {
    throw new JoinProtocolError(
      "LISTENER_NOT_PROVEN",
      `the join listener at ${target.endpoint} did not prove the join code: the code is mistyped, or this is not the cluster's join listener. Nothing more was sent.`,
    );
  }
  // docs/protocol.md#founder-time: a clock more than 5 minutes off judges by the founder's time.
  verifyListenerCertificate({
    chain: connection.peerChainDer(),
    caDer,
    dialledHost: target.host,
    now: founderNow(clockOffsetMs),
  });
  const ca = caFingerprint(caDer);
  const keys = await deriveBindingKeys(finished.sessionKey);
  const transcript = await bindingTranscript({
    session: challenge.session,
    ke1: fromBase64Url(login.ke1),
    ke2: fromBase64Url(challenge.ke2),
    caFingerprint: ca,
    clientKeyFingerprint: keyFingerprint,
    exporter: connection.exporter(),
    serverTime: challenge.serverTime,
  });
  return {
    session: challenge.session,
    ke3: finished.ke3,
    bindingHeader: await clientBinding(keys.kc, transcript),
    ks: keys.ks,
    pairingKey: keys.pairingKey,
    transcript,
    caPem: new X509Certificate(caDer).toString(),
    caDer,
    caFingerprint: ca,
    clockOffsetMs,
  };
}

/**
 * The KE3 call on the connection the proof is bound to, and the checks of its answer: a
 * refusal becomes its typed error (a failed channel binding after a verified KE3 is an
 * intercepted connection), and a success must carry this exchange's `Join-Binding` before
 * anything of its body is used.
 */
async function sendProof(
  connection: PinnedConnection,
  proof: Proof,
  path: string,
  body: Record<string, unknown>,
  deadline: Deadline,
): Promise<PinnedResponse> {
  const response = await connection.request({
    method: "POST",
    path,
    headers: { "join-binding": proof.bindingHeader },
    json: body,
    ...within(deadline),
  });
  if (response.status >= 400) {
    const refusal = refusalOf(response, `POST ${path}`);
    if (refusal.code === "JOIN_BINDING_FAILED") {
      throw new JoinProtocolError(
        "CONNECTION_INTERCEPTED",
        "the connection to the join listener is intercepted: the listener verified the join code but not the TLS channel it came over, so something between this machine and the listener terminates TLS and relays the exchange. Nothing was recorded; do not retry on this network path.",
        { cause: refusal },
      );
    }
    throw refusal;
  }
  if (!(await verifyBinding(proof.ks, proof.transcript, responseHeader(response, "join-binding")))) {
    throw new JoinProtocolError(
      "BINDING_MISMATCH",
      "the join listener's answer does not carry the channel binding of this exchange: the connection is relayed or tampered with; its answer was not used",
    );
  }
  return response;
}

/**
 * Runs the whole exchange and the KE3 call on one connection, within the call's deadline.
 * A KE1, or the call KE3 carries, refused as busy (503 or 429) is waited out (its
 * `Retry-After`, else backoff with jitter) and tried again with a fresh exchange on a fresh
 * connection, while the deadline leaves room for the wait; else that refusal is thrown. A `JOIN_PAKE_RESTART` answer or a connection lost before KE3 was sent
 * starts one fresh exchange on a fresh connection: the server dropped the first one, so
 * nothing is replayed.
 */
export async function proveAndCall(
  target: Target,
  identity: MachineIdentity,
  path: string,
  body: (pake: { session: string; ke3: string }, proof: Pick<Proof, "clockOffsetMs">) => Record<string, unknown>,
  options: ProveOptions,
): Promise<{ response: PinnedResponse; proof: Proof }> {
  checkTimeout("timeoutMs", options.timeoutMs);
  checkTimeout("connectTimeoutMs", options.connectTimeoutMs);
  const what = `POST ${path} with the join listener at ${target.endpoint}`;
  return withDeadline(options.timeoutMs ?? DEFAULT_JOIN_TIMEOUT_MS, options.signal, what, async (deadline) => {
    let restarted = false;
    let busyWaits = 0;
    for (;;) {
      throwIfAborted(deadline.signal);
      const connection = await openPinnedConnection({
        host: target.host,
        port: target.port,
        identity,
        signal: deadline.signal,
        connectTimeoutMs: Math.max(
          1,
          Math.min(options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, deadline.remainingMs()),
        ),
      });
      let ke3Sent = false;
      try {
        const proof = await proveCode(connection, target, identity.keyFingerprint, deadline);
        if (!connection.alive) {
          throw new JoinProtocolError(
            "CONNECTION_CHANGED",
            "the join listener closed the connection before KE3; the proof is bound to it",
          );
        }
        ke3Sent = true;
        const response = await sendProof(
          connection,
          proof,
          path,
          body({ session: proof.session, ke3: proof.ke3 }, proof),
          deadline,
        );
        return { response, proof };
      } catch (error) {
        if (deadline.signal.aborted) throw error;
        // A busy founder (503: its disk full, an upgrade; 429) refused the KE1, or the call the
        // proven KE3 carried with nothing done: waited out, then a fresh exchange. A proven
        // exchange never counts as an attempt, so starting again costs the code nothing.
        if (isBusyRefusal(error)) {
          const delay = retryDelay(busyWaits++, error.retryAfter, BUSY_BACKOFF);
          // A wait the deadline cannot hold: the founder's answer says more than a timeout would.
          if (delay >= deadline.remainingMs()) throw error;
          options.onRetry?.(error, delay);
          await connection.close();
          await sleep(delay, deadline.signal);
          continue;
        }
        const restart =
          !restarted &&
          ((error instanceof StratumApiError && error.code === "JOIN_PAKE_RESTART") ||
            (!ke3Sent && error instanceof JoinProtocolError && error.code === "CONNECTION_CHANGED"));
        if (!restart) throw error;
        restarted = true;
      } finally {
        await connection.close();
      }
    }
  });
}
