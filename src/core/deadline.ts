/**
 * A call's deadline and its caller's signal as one `AbortSignal`: everything the call waits on
 * (connect, TLS, a request, its headers, its whole body, a backoff) listens to that one signal,
 * so the call ends at its deadline whatever it was waiting for, in a `TimeoutError`, and a
 * caller's abort still surfaces as the caller's own reason. Browser-safe.
 * @module
 */
import { StratumError, TimeoutError } from "../errors/index.js";

/** The longest delay `setTimeout` keeps (2^31 − 1 ms, about 24.8 days); a longer one would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** A running deadline ({@link startDeadline}). */
export interface Deadline {
  /**
   * Aborts with the caller's `reason` when the caller's signal aborts, or with a
   * `TimeoutError` when the time runs out, whichever comes first.
   */
  readonly signal: AbortSignal;
  /** True once the time ran out (not the caller's abort). */
  readonly expired: boolean;
  /** Milliseconds left; `Infinity` without a deadline; never negative. */
  remainingMs(): number;
  /** Stops the timer and lets go of the caller's signal. Call it when the call is over. */
  dispose(): void;
}

/**
 * Checks a `timeoutMs` option: a positive number of milliseconds, `Infinity` for none.
 * @throws StratumError `INVALID_ARGUMENT` naming the option
 */
export function checkTimeout(name: string, value: number | undefined): void {
  if (value === undefined) return;
  if (typeof value !== "number" || Number.isNaN(value) || value <= 0) {
    throw new StratumError("INVALID_ARGUMENT", `${name} must be a positive number of milliseconds (or Infinity)`);
  }
}

/**
 * Starts a deadline of `timeoutMs` (none when undefined or `Infinity`) linked to `signal`.
 * @param what names the call in the TimeoutError's message, e.g. `POST /v1/join/pake`
 * @throws StratumError `INVALID_ARGUMENT` for a `timeoutMs` that is not a positive number
 */
export function startDeadline(timeoutMs: number | undefined, signal: AbortSignal | undefined, what: string): Deadline {
  checkTimeout("timeoutMs", timeoutMs);
  const controller = new AbortController();
  const endsAt = timeoutMs === undefined || timeoutMs === Infinity ? Infinity : Date.now() + timeoutMs;
  let expired = false;
  const onAbort = (): void => controller.abort(signal?.reason);
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (signal?.aborted) onAbort();
  else {
    signal?.addEventListener("abort", onAbort, { once: true });
    if (endsAt !== Infinity) {
      timer = setTimeout(
        () => {
          expired = true;
          controller.abort(new TimeoutError(`${what} did not finish within ${timeoutMs} ms`));
        },
        Math.min(timeoutMs!, MAX_TIMER_MS),
      );
    }
  }
  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    remainingMs: () => (endsAt === Infinity ? Infinity : Math.max(0, endsAt - Date.now())),
    dispose: () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * Runs `call` under a deadline of `timeoutMs` linked to `signal` ({@link startDeadline}):
 * whatever the deadline or an abort interrupted ends as the `TimeoutError` or the caller's
 * own reason, not as what the interrupted step made of it; the deadline is disposed after.
 * @throws StratumError `INVALID_ARGUMENT` for a `timeoutMs` that is not a positive number
 */
export async function withDeadline<T>(
  timeoutMs: number | undefined,
  signal: AbortSignal | undefined,
  what: string,
  call: (deadline: Deadline) => Promise<T>,
): Promise<T> {
  const deadline = startDeadline(timeoutMs, signal, what);
  try {
    return await call(deadline);
  } catch (error) {
    if (deadline.signal.aborted) throw deadline.signal.reason;
    throw error;
  } finally {
    deadline.dispose();
  }
}

/**
 * The `signal` and `timeoutMs` of one request made under `deadline`, so that the request ends
 * with the call: its own deadline is what is left of the call's.
 */
export function within(deadline: Deadline): { signal: AbortSignal; timeoutMs?: number } {
  const remaining = deadline.remainingMs();
  return { signal: deadline.signal, ...(remaining === Infinity ? {} : { timeoutMs: Math.max(1, remaining) }) };
}
