/**
 * Watching the join list, for a console that shows machines arriving and joins moving.
 * @module
 */

import { retryDelay, sleep, throwIfAborted, type BackoffOptions } from "../core/retry.js";
import { NetworkError, StratumApiError, TimeoutError, type StratumError } from "../errors/index.js";
import type { NodeJoin } from "../types.js";

/** One change of the join list between two polls. */
export type JoinChange =
  /** A join not seen before: a machine arrived (or, on the first poll, was already there). */
  | {
      /** The kind of change. */
      type: "added";
      /** The join as this poll saw it. */
      join: NodeJoin;
    }
  /** A join whose view differs from the last poll's: its state moved, a step progressed, … */
  | {
      /** The kind of change. */
      type: "changed";
      /** The join as this poll saw it. */
      join: NodeJoin;
      /** The join as the poll before saw it. */
      previous: NodeJoin;
    }
  /** A join no longer in the list. */
  | {
      /** The kind of change. */
      type: "removed";
      /** The id of the join that left the list. */
      id: string;
    };

/** How {@link watchJoins} polls. */
export interface WatchJoinsOptions {
  /**
   * Stops the watch. Abort rule: the caller's abort is re-thrown as is, the signal's `reason`:
   * a pending `next()` rejects with it, and after an abort between iterations the next
   * `next()` does. Breaking out of the loop stops the watch without an error.
   */
  signal?: AbortSignal;
  /** The pause between two successful polls, in ms. Default 2 000. */
  intervalMs?: number;
  /** Spacing of the retries after a failed poll (full jitter; `Retry-After` wins when the server sends it). */
  backoff?: BackoffOptions;
  /** Per-poll timeout in ms; a poll that runs out is retried like a network failure. */
  timeoutMs?: number;
  /** Told of every failed poll that will be retried, and after how long: a console can show "reconnecting". */
  onRetry?: (error: StratumError, delayMs: number) => void;
}

/** What {@link watchJoins} needs of a client: the list call. */
export interface JoinLister {
  /** One poll: every join the founder lists. */
  listNodeJoins(options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<{
    /** The joins, newest first. */
    items: NodeJoin[];
  }>;
}

/**
 * Polls `client.listNodeJoins` and yields each change, one at a time. The first poll yields
 * every join as `added`, so a console can start from nothing.
 *
 * A poll that fails for a reason that may pass (no answer, a timeout, 408, 429, 5xx) is
 * retried with backoff, after `Retry-After` when the server sent one, and `onRetry` is told.
 * Any other failure (401, 403, a body that fails validation) ends the watch by throwing, since
 * polling again cannot fix it.
 *
 * Abort rule: the caller's abort is re-thrown as is, the signal's `reason` (`isAbortError(e,
 * signal)`): a pending `next()` rejects with it, and after an abort between iterations the
 * next `next()` does, even when changes of the last poll are still to be yielded. Breaking
 * out of the loop stops the watch without an error.
 */
export async function* watchJoins(
  client: JoinLister,
  options: WatchJoinsOptions = {},
): AsyncGenerator<JoinChange, void, undefined> {
  const { signal, intervalMs = 2_000, backoff, timeoutMs, onRetry } = options;
  let known = new Map<string, NodeJoin>();
  let failures = 0;
  for (;;) {
    throwIfAborted(signal);
    let items: NodeJoin[];
    try {
      ({ items } = await client.listNodeJoins({ signal, timeoutMs }));
    } catch (error) {
      // The caller's abort as it is, whatever the client made of it.
      throwIfAborted(signal);
      if (!isPassing(error)) throw error;
      const delay = retryDelay(failures++, error instanceof StratumApiError ? error.retryAfter : undefined, backoff);
      onRetry?.(error, delay);
      await sleep(delay, signal);
      continue;
    }
    failures = 0;
    const changes = diffJoins(known, items);
    known = new Map(items.map((join) => [join.id, join]));
    for (const change of changes) {
      yield change;
      throwIfAborted(signal); // an abort between iterations ends the watch at once
    }
    await sleep(intervalMs, signal);
  }
}

/** True for a failure that polling again may get past. */
function isPassing(error: unknown): error is StratumError {
  if (error instanceof NetworkError || error instanceof TimeoutError) return true;
  return error instanceof StratumApiError && (error.status === 408 || error.status === 429 || error.status >= 500);
}

/**
 * The changes from `previous` (by id) to the list `next`: removals first, then additions and
 * changes in the list's order. Two views of a join are the same when they are deeply equal,
 * whatever the order of their keys.
 */
export function diffJoins(previous: ReadonlyMap<string, NodeJoin>, next: readonly NodeJoin[]): JoinChange[] {
  const changes: JoinChange[] = [];
  const ids = new Set(next.map((join) => join.id));
  for (const id of previous.keys()) if (!ids.has(id)) changes.push({ type: "removed", id });
  for (const join of next) {
    const before = previous.get(join.id);
    if (!before) changes.push({ type: "added", join });
    else if (!deepEqual(before, join)) changes.push({ type: "changed", join, previous: before });
  }
  return changes;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = Object.keys(ra).filter((k) => ra[k] !== undefined);
  if (keys.length !== Object.keys(rb).filter((k) => rb[k] !== undefined).length) return false;
  return keys.every((key) => deepEqual(ra[key], rb[key]));
}
