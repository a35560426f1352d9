/**
 * Retry timing in one place: `Retry-After`, backoff with full jitter, and an abortable sleep.
 * No jitter when the server said how long to wait: it knows better.
 * @module
 */
import { StratumApiError } from "../errors/index.js";

/**
 * Seconds from a `Retry-After` header (delta-seconds or an HTTP date), or undefined when it
 * is absent or unreadable. Never negative.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value == null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** How a retry loop spaces its attempts. */
export interface BackoffOptions {
  /** The first delay's ceiling in ms. Default 500. */
  baseMs?: number | undefined;
  /** The largest delay in ms. Default 30 000. */
  maxMs?: number | undefined;
}

/**
 * The delay before retry number `attempt` (0-based): "full jitter", a uniform draw in
 * [0, min(max, base * 2^attempt)], so that many joiners knocked off together by a restart do
 * not come back together.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions = {},
  random: () => number = Math.random,
): number {
  const base = options.baseMs ?? 500;
  const max = options.maxMs ?? 30_000;
  const ceiling = Math.min(max, base * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}

/** The longest a `Retry-After` is honoured for (10 minutes): past that, a server is more likely wrong than busy. */
export const MAX_RETRY_AFTER_MS = 600_000;

/**
 * The delay before the next attempt: what the server asked for (`retryAfter` seconds) when
 * it said, capped at {@link MAX_RETRY_AFTER_MS} but never by the backoff's own `maxMs` (the
 * server knows how long it is busy), else {@link backoffDelay}.
 */
export function retryDelay(
  attempt: number,
  retryAfterSeconds: number | undefined,
  options: BackoffOptions = {},
): number {
  if (retryAfterSeconds !== undefined) return Math.min(retryAfterSeconds * 1000, MAX_RETRY_AFTER_MS);
  return backoffDelay(attempt, options);
}

/**
 * True for a refusal that says "busy, nothing done, ask again later": 503 (a code with too many
 * exchanges outstanding, a full disk, an upgrade) or 429. The joiner's one-shot calls wait it
 * out within their deadline (docs/protocol.md#deadlines).
 */
export function isBusyRefusal(error: unknown): error is StratumApiError {
  // A refusal a founder would not send where it came (docs/protocol.md#unproven) is not waited on.
  return (
    error instanceof StratumApiError &&
    (error.status === 503 || error.status === 429) &&
    error.code !== "REFUSAL_UNPROVEN"
  );
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error an aborted signal stands for: its reason, or a DOMException `AbortError`. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/** Throws the signal's reason if it has aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}
