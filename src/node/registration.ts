/**
 * After the registration: every call of the joiner uses the same client key over TLS verified
 * against the pinned CA and the listener role (docs/protocol.md#joiner-checks). Watching the
 * registration (long poll), waiting for a state, and reporting progress.
 * @module
 */
import { parseEndpoint } from "../core/join-url.js";
import { checkTimeout, startDeadline, withDeadline, within, type Deadline } from "../core/deadline.js";
import { isBusyRefusal, retryDelay, sleep, throwIfAborted, type BackoffOptions } from "../core/retry.js";
import { isFinalState } from "../core/join-states.js";
import {
  NetworkError,
  RegistrationEndedError,
  ResponseValidationError,
  StratumApiError,
  StratumError,
  TimeoutError,
} from "../errors/index.js";
import type { JoinState, ProgressReport, Registration } from "../types.js";
import { parseAnswer } from "./answers.js";
import { concealSecrets } from "./delivery.js";
import { JoinProtocolError } from "../errors/index.js";
import type { MachineIdentity } from "./identity.js";
import { sessionCaDer, sessionListenerPin, type JoinSession } from "./join-session.js";
import {
  openPinnedConnection,
  refusalOf,
  responseHeader,
  type PinnedConnection,
  type PinnedResponse,
} from "./pinned-connection.js";
import { DEFAULT_CONNECT_TIMEOUT_MS, type OpenPinnedConnectionOptions } from "./pinned-socket.js";

/**
 * Opens a connection pinned to the session: the session's CA (the listener's leaf must chain
 * to it, name the host and carry the listener role) and the identity's key, which must be the
 * key the registration is pinned to.
 */
export async function openSessionConnection(
  session: JoinSession,
  identity: MachineIdentity,
  options: { signal?: AbortSignal | undefined; connectTimeoutMs?: number | undefined } = {},
): Promise<PinnedConnection> {
  return openPinnedConnection(sessionConnectionOptions(session, identity, options));
}

/**
 * The options of a connection pinned to the session ({@link openSessionConnection}).
 * @throws StratumError `IDENTITY_MISMATCH` when the identity's key is not the registration's
 * @internal
 */
export function sessionConnectionOptions(
  session: JoinSession,
  identity: MachineIdentity,
  options: { signal?: AbortSignal | undefined; connectTimeoutMs?: number | undefined } = {},
): OpenPinnedConnectionOptions {
  if (identity.keyFingerprint !== session.keyFingerprint) {
    throw new StratumError(
      "IDENTITY_MISMATCH",
      `this identity's key (${identity.keyFingerprint.slice(0, 11)}…) is not the key the registration is pinned to (${session.keyFingerprint.slice(0, 11)}…)`,
    );
  }
  const { host, port } = parseEndpoint(session.endpoint);
  return {
    host,
    port,
    identity,
    ca: sessionCaDer(session),
    listenerPin: sessionListenerPin(session),
    ...(session.clockOffsetMs !== undefined ? { clockOffsetMs: session.clockOffsetMs } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
  };
}

async function view(response: PinnedResponse, operation: string): Promise<Registration> {
  const registration = (await parseAnswer("RegistrationSchema", operation, response.json)) as Registration;
  if (registration.delivery) concealSecrets(registration.delivery);
  return registration;
}

/**
 * The deadline of {@link getRegistration} and {@link reportProgress} when the caller gives
 * none: 30 s. One request the listener answers at once (no long poll): room for a slow link
 * and a founder busy writing, short enough that a dead listener is noticed while someone waits.
 */
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/**
 * How long each request of {@link watchRegistration} may take beyond the time the listener
 * holds its long poll (`waitSeconds`), when the caller gives none: 30 s, as a single call.
 */
export const DEFAULT_POLL_MARGIN_MS = 30_000;

// Retries of a watch: quick at first (a listener restarting is back within a second or two),
// never more than 15 s apart so a machine waiting for approval notices the listener's return.
const WATCH_BACKOFF: BackoffOptions = { baseMs: 500, maxMs: 15_000 };

/**
 * One call on a fresh connection pinned to the session, within one deadline that covers
 * connect, TLS, the request, its headers and its whole body. A founder that refuses it as
 * busy (503 with nothing done: its disk full, an upgrade; or 429) is waited out (its
 * `Retry-After`, else backoff) and asked again while the deadline leaves room for the wait;
 * else that refusal is thrown. Any other failure is thrown at once: the call may have been
 * applied, and only the caller knows whether sending it again is right.
 */
async function callOnce(
  session: JoinSession,
  identity: MachineIdentity,
  options: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined },
  operation: string,
  send: (connection: PinnedConnection, deadline: Deadline) => Promise<Registration>,
): Promise<Registration> {
  return withDeadline(options.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS, options.signal, operation, async (deadline) => {
    for (let waits = 0; ; waits++) {
      let refusal: StratumApiError;
      const connection = await openPinnedConnection(connectOptions(session, identity, deadline));
      try {
        return await send(connection, deadline);
      } catch (error) {
        if (!isBusyRefusal(error)) throw error;
        refusal = error;
      } finally {
        await connection.close();
      }
      const delay = retryDelay(waits, refusal.retryAfter, WATCH_BACKOFF);
      // A wait the deadline cannot hold: the founder's answer says more than a timeout would.
      if (delay >= deadline.remainingMs()) throw refusal;
      await sleep(delay, deadline.signal);
    }
  });
}

function connectOptions(session: JoinSession, identity: MachineIdentity, deadline: Deadline) {
  return sessionConnectionOptions(session, identity, {
    signal: deadline.signal,
    connectTimeoutMs: Math.max(1, Math.min(DEFAULT_CONNECT_TIMEOUT_MS, deadline.remainingMs())),
  });
}

/** Options of {@link getRegistration}. */
export interface GetRegistrationOptions {
  /** Aborts the call. Abort rule: the caller's abort is re-thrown as is, the signal's `reason`. */
  signal?: AbortSignal | undefined;
  /**
   * The call's deadline in ms (connect, TLS, request, headers, whole body), default
   * {@link DEFAULT_CALL_TIMEOUT_MS} (30 s); then `TimeoutError` (`TIMEOUT`).
   */
  timeoutMs?: number | undefined;
}

/**
 * The registration's view now: one GET over a connection pinned to the session's CA and the
 * machine's key, with no retry (a caller that wants to wait uses {@link waitForRegistration}).
 * Validated; delivery secrets are concealed.
 * @throws StratumApiError (404: not this key's registration), ResponseValidationError,
 *   NetworkError, TimeoutError after `timeoutMs` (default 30 s), JoinProtocolError; the
 *   signal's reason on abort, as is
 */
export async function getRegistration(
  session: JoinSession,
  identity: MachineIdentity,
  options: GetRegistrationOptions = {},
): Promise<Registration> {
  checkTimeout("timeoutMs", options.timeoutMs);
  const path = `/v1/join/registrations/${encodeURIComponent(session.joinId)}`;
  return callOnce(session, identity, options, `GET ${path}`, async (connection, deadline) => {
    const response = await connection.request({ path, ...within(deadline) });
    if (response.status !== 200) throw refusalOf(response, `GET ${path}`);
    return view(response, `GET ${path}`);
  });
}

/**
 * Worth another try later: the listener restarting, busy, briefly unreachable, or answering
 * something broken (a 5xx, bad JSON, a body that fails the schema). Final: any other refusal
 * (404 not this key's registration, 409, 400, 401, 403), a protocol or identity error.
 */
function transient(error: unknown): boolean {
  if (error instanceof StratumApiError) return error.status >= 500 || error.status === 429 || error.status === 408;
  if (error instanceof ResponseValidationError) return true;
  if (error instanceof JoinProtocolError) return error.code === "CONNECTION_CHANGED" || error.code === "TLS_FAILED";
  if (StratumError.is(error) && error.code === "RESPONSE_TOO_LARGE") return true;
  return error instanceof NetworkError || error instanceof TimeoutError;
}

/** Options of {@link watchRegistration}. */
export interface WatchRegistrationOptions {
  /**
   * Stops the watch. Abort rule: the caller's abort is re-thrown as is, the signal's `reason`:
   * a pending `next()` rejects with it, and after an abort between iterations the next
   * `next()` does. Breaking out of the loop stops the watch without an error.
   */
  signal?: AbortSignal | undefined;
  /** How long each long poll holds (1–30 s, default 30). */
  waitSeconds?: number | undefined;
  /**
   * Each request's deadline beyond the time the listener holds it (`waitSeconds`), covering
   * connect, TLS, headers and the whole body; default {@link DEFAULT_POLL_MARGIN_MS} (30 s). A
   * request past it is a transient failure, retried.
   */
  requestTimeoutMs?: number | undefined;
  /** The whole watch's deadline in ms, retries included; then `TimeoutError`. Default: none. */
  timeoutMs?: number | undefined;
  /** Backoff between retries after errors (full jitter), unless the listener says `Retry-After`. */
  backoff?: BackoffOptions | undefined;
  /** Told of each transient error before the retry, e.g. to show "listener restarting…". */
  onRetry?: ((error: unknown, delayMs: number) => void) | undefined;
}

/**
 * The joiner's view of its registration, each time it changes: the current view first, then
 * one per change, by long poll (`waitSeconds` with `If-None-Match`). Ends after a final state
 * (`joined`, `rejected`, `expired`).
 *
 * Transient failures are retried with backoff and jitter (`Retry-After` when the listener
 * sends one) until the watch's own `timeoutMs`: 5xx, 429, a reset, a request past its
 * deadline, bad JSON, a body that fails the schema. It stops, throwing, only on a final
 * answer: 404 (not this key's registration), 409 or another 4xx, a protocol or identity
 * error. Every view is validated; delivery secrets are concealed.
 *
 * Abort rule: the caller's abort is re-thrown as is, the signal's `reason` (`isAbortError(e,
 * signal)`): a pending `next()` rejects with it, and after an abort between iterations the
 * next `next()` does. Breaking out of the loop stops the watch without an error.
 * @throws as above; TimeoutError after `timeoutMs`
 */
export async function* watchRegistration(
  session: JoinSession,
  identity: MachineIdentity,
  options: WatchRegistrationOptions = {},
): AsyncGenerator<Registration, void, undefined> {
  checkTimeout("requestTimeoutMs", options.requestTimeoutMs);
  const waitSeconds = Math.max(1, Math.min(30, options.waitSeconds ?? 30));
  const requestMs = waitSeconds * 1000 + (options.requestTimeoutMs ?? DEFAULT_POLL_MARGIN_MS);
  const path = `/v1/join/registrations/${encodeURIComponent(session.joinId)}`;
  const operation = `GET ${path}`;
  const watch = startDeadline(options.timeoutMs, options.signal, `the watch of the registration ${session.joinId}`);
  let etag: string | undefined;
  let failures = 0;
  let connection: PinnedConnection | undefined;
  try {
    for (;;) {
      throwIfAborted(watch.signal);
      const attempt = startDeadline(Math.max(1, Math.min(requestMs, watch.remainingMs())), watch.signal, operation);
      let registration: Registration;
      try {
        connection ??= await openPinnedConnection(connectOptions(session, identity, attempt));
        const response = await connection.request({
          path: etag ? `${path}?waitSeconds=${waitSeconds}` : path,
          headers: etag ? { "if-none-match": etag } : {},
          ...within(attempt),
        });
        if (response.status === 304) {
          failures = 0;
          continue;
        }
        if (response.status !== 200) throw refusalOf(response, operation);
        registration = await view(response, operation);
        // Only a view that passed the schema may be the base of the next long poll.
        etag = responseHeader(response, "etag");
        failures = 0;
      } catch (error) {
        if (watch.signal.aborted) throw error;
        const failure = attempt.signal.aborted ? attempt.signal.reason : error;
        if (!transient(failure)) throw failure;
        await connection?.close();
        connection = undefined;
        const delay = retryDelay(
          failures++,
          failure instanceof StratumApiError ? failure.retryAfter : undefined,
          options.backoff ?? WATCH_BACKOFF,
        );
        options.onRetry?.(failure, delay);
        await sleep(delay, watch.signal);
        continue;
      } finally {
        attempt.dispose();
      }
      yield registration;
      throwIfAborted(watch.signal); // an abort between iterations ends the watch at once
      if (isFinalState(registration.state)) return;
      // Without an ETag the listener cannot long-poll; pace the polls instead of spinning.
      if (!etag) await sleep(1000, watch.signal);
    }
  } catch (error) {
    // Whatever an abort or the watch's deadline interrupted ends as the reason, as is.
    if (watch.signal.aborted) throw watch.signal.reason;
    throw error;
  } finally {
    watch.dispose();
    await connection?.close();
  }
}

/** Options of {@link waitForRegistration}. */
export interface WaitForRegistrationOptions extends WatchRegistrationOptions {
  /** The state(s) to wait for, or a predicate on the view. */
  until: JoinState | readonly JoinState[] | ((registration: Registration) => boolean);
  /** Give up after this long with a `TimeoutError`, retries included (default: wait as long as it takes). */
  timeoutMs?: number | undefined;
  /** Told of every view on the way, e.g. to print each state as it changes. */
  onChange?: ((registration: Registration) => void) | undefined;
}

/**
 * Waits until the registration reaches a wanted state and returns that view. Watches it as
 * {@link watchRegistration} does: transient failures (5xx, 429, resets, timeouts, bad JSON, a
 * body that fails the schema) are retried with backoff and jitter until `timeoutMs`.
 *
 * Abort rule: the caller's abort is re-thrown as is, the signal's `reason` (`isAbortError(e,
 * signal)`).
 * @throws RegistrationEndedError when it reaches a final state that is not wanted (rejected,
 *   expired); StratumApiError for a final refusal (404 not this key's registration, 409, …);
 *   JoinProtocolError, StratumError `IDENTITY_MISMATCH`; TimeoutError after `timeoutMs`; the
 *   signal's reason on abort, as is
 */
export async function waitForRegistration(
  session: JoinSession,
  identity: MachineIdentity,
  options: WaitForRegistrationOptions,
): Promise<Registration> {
  const { until } = options;
  const wanted =
    typeof until === "function"
      ? until
      : (registration: Registration) =>
          (typeof until === "string" ? [until] : (until as readonly JoinState[])).includes(registration.state);
  for await (const registration of watchRegistration(session, identity, options)) {
    options.onChange?.(registration);
    if (wanted(registration)) return registration;
    if (isFinalState(registration.state)) throw new RegistrationEndedError(registration);
  }
  throw new StratumError("REGISTRATION_ENDED", `the watch of ${session.joinId} ended without a view`);
}

/** What {@link reportProgress} sends, and how it waits. */
export type ReportProgressOptions = ProgressReport & {
  /** Aborts the call. Abort rule: the caller's abort is re-thrown as is, the signal's `reason`. */
  signal?: AbortSignal | undefined;
  /**
   * The call's deadline in ms (connect, TLS, request, headers, whole body), default
   * {@link DEFAULT_CALL_TIMEOUT_MS} (30 s); then `TimeoutError` (`TIMEOUT`).
   */
  timeoutMs?: number | undefined;
};

/**
 * Reports the joiner's steps (each as it stands now) and new install-log lines. The first
 * report of a delivered join moves it to `installing`; step `join` done moves it to `joined`; a
 * failed step moves it to `failed` (while `needs-upgrade`, a failed `upgrade/...` step is only
 * recorded). Returns the registration's view after the report. Not retried: the log lines
 * would be recorded twice.
 * @throws StratumApiError (404 not this key's registration, 409 a final state, 400 a report
 *   the listener refuses), ResponseValidationError, NetworkError, TimeoutError after
 *   `timeoutMs` (default 30 s); the signal's reason on abort, as is
 */
export async function reportProgress(
  session: JoinSession,
  identity: MachineIdentity,
  report: ReportProgressOptions,
): Promise<Registration> {
  const { signal, timeoutMs, ...body } = report;
  checkTimeout("timeoutMs", timeoutMs);
  const path = `/v1/join/registrations/${encodeURIComponent(session.joinId)}/progress`;
  return callOnce(session, identity, { signal, timeoutMs }, `POST ${path}`, async (connection, deadline) => {
    const response = await connection.request({ method: "POST", path, json: body, ...within(deadline) });
    if (response.status !== 200) throw refusalOf(response, `POST ${path}`);
    return view(response, `POST ${path}`);
  });
}
