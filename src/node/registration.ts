/**
 * After the registration: every call of the joiner uses the same client key over TLS verified
 * against the pinned CA and the listener role (PROTOCOL.md section 3). Watching the
 * registration (long poll), waiting for a state, and reporting progress.
 * @module
 */
import { parseEndpoint } from "../core/join-url.js";
import { retryDelay, sleep, throwIfAborted, type BackoffOptions } from "../core/retry.js";
import { isFinalState } from "../core/join-states.js";
import {
  isAbortError,
  NetworkError,
  RegistrationEndedError,
  StratumApiError,
  StratumError,
  TimeoutError,
} from "../errors/index.js";
import { parseResponse, RegistrationSchema } from "../schemas/index.js";
import type { JoinState, ProgressReport, Registration } from "../types.js";
import { concealSecrets } from "./delivery.js";
import { JoinProtocolError } from "../errors/index.js";
import type { MachineIdentity } from "./identity.js";
import { sessionCaDer, type JoinSession } from "./join-session.js";
import {
  openPinnedConnection,
  refusalOf,
  responseHeader,
  type OpenPinnedConnectionOptions,
  type PinnedConnection,
  type PinnedResponse,
} from "./pinned-connection.js";

/**
 * Opens a connection pinned to the session: the session's CA (the listener's leaf must chain
 * to it, name the host and carry the listener role) and the identity's key, which must be the
 * key the registration is pinned to.
 */
export async function openSessionConnection(
  session: JoinSession,
  identity: MachineIdentity,
  options: { signal?: AbortSignal; connectTimeoutMs?: number } = {},
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
  options: { signal?: AbortSignal; connectTimeoutMs?: number } = {},
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
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
  };
}

function view(response: PinnedResponse, operation: string): Registration {
  const registration = parseResponse(RegistrationSchema, operation, response.json) as Registration;
  if (registration.delivery) concealSecrets(registration.delivery);
  return registration;
}

/** Options of {@link getRegistration}. */
export interface GetRegistrationOptions {
  /** Aborts the call; the abort is re-thrown as is. */
  signal?: AbortSignal;
}

/**
 * The registration's view now: one GET over a connection pinned to the session's CA and the
 * machine's key, with no retry (a caller that wants to wait uses {@link waitForRegistration}).
 * Validated; delivery secrets are concealed.
 * @throws StratumApiError (404: not this key's registration), NetworkError, TimeoutError,
 *   JoinProtocolError; the signal's reason on abort
 */
export async function getRegistration(
  session: JoinSession,
  identity: MachineIdentity,
  options: GetRegistrationOptions = {},
): Promise<Registration> {
  const { signal } = options;
  const path = `/v1/join/registrations/${encodeURIComponent(session.joinId)}`;
  const connection = await openSessionConnection(session, identity, signal ? { signal } : {});
  try {
    const response = await connection.request({ path, ...(signal ? { signal } : {}) });
    if (response.status !== 200) throw refusalOf(response, `GET ${path}`);
    return view(response, `GET ${path}`);
  } finally {
    await connection.close();
  }
}

/** Worth another try later: the listener restarting, busy or briefly unreachable. */
function transient(error: unknown): boolean {
  if (error instanceof StratumApiError)
    return error.status === 429 || error.status === 503 || error.status === 502 || error.status === 504;
  if (error instanceof JoinProtocolError) return error.code === "CONNECTION_CHANGED" || error.code === "TLS_FAILED";
  return error instanceof NetworkError || error instanceof TimeoutError;
}

/** Options of {@link watchRegistration}. */
export interface WatchRegistrationOptions {
  /** Stops the watch: the iterator throws the signal's reason. */
  signal?: AbortSignal;
  /** How long each long poll holds (1–30 s, default 30). */
  waitSeconds?: number;
  /** Backoff between retries after errors (full jitter), unless the listener says `Retry-After`. */
  backoff?: BackoffOptions;
  /** Told of each transient error before the retry, e.g. to show "listener restarting…". */
  onRetry?: (error: unknown, delayMs: number) => void;
}

/**
 * The joiner's view of its registration, each time it changes: the current view first, then
 * one per change, by long poll (`waitSeconds` with `If-None-Match`). Ends after a final state
 * (`joined`, `rejected`, `expired`). A listener restarting, 429 and 503 (with `Retry-After`),
 * resets and timeouts are retried with backoff and jitter; anything else (404: not this key's
 * registration) is thrown. Every view is validated; delivery secrets are concealed.
 */
export async function* watchRegistration(
  session: JoinSession,
  identity: MachineIdentity,
  options: WatchRegistrationOptions = {},
): AsyncGenerator<Registration, void, undefined> {
  const { signal } = options;
  const waitSeconds = Math.max(1, Math.min(30, options.waitSeconds ?? 30));
  const path = `/v1/join/registrations/${encodeURIComponent(session.joinId)}`;
  let etag: string | undefined;
  let failures = 0;
  let connection: PinnedConnection | undefined;
  try {
    for (;;) {
      throwIfAborted(signal);
      try {
        connection ??= await openSessionConnection(session, identity, signal ? { signal } : {});
        const response = await connection.request({
          path: etag ? `${path}?waitSeconds=${waitSeconds}` : path,
          headers: etag ? { "if-none-match": etag } : {},
          ...(signal ? { signal } : {}),
        });
        if (response.status === 304) {
          failures = 0;
          continue;
        }
        if (response.status !== 200) throw refusalOf(response, `GET ${path}`);
        failures = 0;
        etag = responseHeader(response, "etag");
        const registration = view(response, `GET ${path}`);
        yield registration;
        if (isFinalState(registration.state)) return;
        // Without an ETag the listener cannot long-poll; pace the polls instead of spinning.
        if (!etag) await sleep(1000, signal);
      } catch (error) {
        if (signal?.aborted || isAbortError(error)) throw error;
        if (!transient(error)) throw error;
        await connection?.close();
        connection = undefined;
        const delay = retryDelay(
          failures++,
          error instanceof StratumApiError ? error.retryAfter : undefined,
          options.backoff ?? { baseMs: 500, maxMs: 15_000 },
        );
        options.onRetry?.(error, delay);
        await sleep(delay, signal);
      }
    }
  } finally {
    await connection?.close();
  }
}

/** Options of {@link waitForRegistration}. */
export interface WaitForRegistrationOptions extends WatchRegistrationOptions {
  /** The state(s) to wait for, or a predicate on the view. */
  until: JoinState | readonly JoinState[] | ((registration: Registration) => boolean);
  /** Give up after this long with a `TimeoutError` (default: wait as long as it takes). */
  timeoutMs?: number;
  /** Told of every view on the way, e.g. to print each state as it changes. */
  onChange?: (registration: Registration) => void;
}

/**
 * Waits until the registration reaches a wanted state and returns that view.
 * @throws RegistrationEndedError when it reaches a final state that is not wanted (rejected,
 *   expired); TimeoutError after `timeoutMs`; the signal's reason on abort
 */
export async function waitForRegistration(
  session: JoinSession,
  identity: MachineIdentity,
  options: WaitForRegistrationOptions,
): Promise<Registration> {
  const wanted =
    typeof options.until === "function"
      ? options.until
      : (registration: Registration) =>
          (typeof options.until === "string" ? [options.until] : (options.until as readonly JoinState[])).includes(
            registration.state,
          );
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();
  let timedOut = false;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          controller.abort(
            new TimeoutError(
              `the registration ${session.joinId} did not reach the wanted state within ${options.timeoutMs} ms`,
            ),
          );
        }, options.timeoutMs);
  try {
    for await (const registration of watchRegistration(session, identity, { ...options, signal: controller.signal })) {
      options.onChange?.(registration);
      if (wanted(registration)) return registration;
      if (isFinalState(registration.state)) throw new RegistrationEndedError(registration);
    }
    throw new StratumError("REGISTRATION_ENDED", `the watch of ${session.joinId} ended without a view`);
  } catch (error) {
    if (timedOut && !options.signal?.aborted) throw controller.signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Reports the joiner's steps (each as it stands now) and new install-log lines. The first
 * report of a delivered join moves it to `installing`; step `join` done moves it to `joined`; a
 * failed step moves it to `failed` (while `needs-upgrade`, a failed `upgrade/...` step is only
 * recorded). Returns the registration's view after the report.
 * @throws StratumApiError (404 not this key's registration, 409 a final state, 400 a report
 *   the listener refuses), NetworkError, TimeoutError; the signal's reason on abort
 */
export async function reportProgress(
  session: JoinSession,
  identity: MachineIdentity,
  report: ProgressReport & { signal?: AbortSignal },
): Promise<Registration> {
  const { signal, ...body } = report;
  const path = `/v1/join/registrations/${encodeURIComponent(session.joinId)}/progress`;
  const connection = await openSessionConnection(session, identity, signal ? { signal } : {});
  try {
    const response = await connection.request({ method: "POST", path, json: body, ...(signal ? { signal } : {}) });
    if (response.status !== 200) throw refusalOf(response, `POST ${path}`);
    return view(response, `POST ${path}`);
  } finally {
    await connection.close();
  }
}
