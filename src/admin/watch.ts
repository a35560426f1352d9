/**
 * Watching the join list, for a console that shows machines arriving and joins moving.
 *
 * Long poll first (`GET /v1/admin/cluster/joins?waitSeconds=N` with `If-None-Match`, protocol
 * 18.3): the founder holds the request and answers the moment the list changes, so a machine
 * that registers reaches the console in about one round trip instead of up to a whole polling
 * interval (a 2 s poll shows it after about 1 s on average). A founder that sends no `ETag`
 * cannot long-poll; the watch then polls every `intervalMs`, as before.
 * @module
 */

import { retryDelay, sleep, throwIfAborted, type BackoffOptions } from "../core/retry.js";
import { NetworkError, StratumApiError, StratumError, TimeoutError } from "../errors/index.js";
import type { JoinCapacity, NodeJoin } from "../types.js";

/**
 * How long one long poll asks the founder to hold it, in seconds: under the protocol's 30, and
 * under the 30 s idle timeout common to proxies in front of an API, so an idle watch is not cut.
 */
const DEFAULT_WAIT_SECONDS = 25;

/** The most a founder holds a long poll (protocol 14.1 and 18.3). */
const MAX_WAIT_SECONDS = 30;

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
  signal?: AbortSignal | undefined;
  /**
   * The pause between two polls when the founder cannot long-poll (it sends no `ETag`), in ms.
   * Default 2 000.
   */
  intervalMs?: number | undefined;
  /**
   * How long each long poll asks the founder to hold it for a change, in seconds (1 to 30).
   * Default 25. A change is yielded as soon as it happens, whatever this is.
   */
  waitSeconds?: number | undefined;
  /** Spacing of the retries after a failed poll (full jitter; `Retry-After` wins when the server sends it). */
  backoff?: BackoffOptions | undefined;
  /**
   * Per-poll timeout in ms, on top of the time a long poll is held (`waitSeconds`); a poll that
   * runs out is retried like a network failure.
   */
  timeoutMs?: number | undefined;
  /** Told of every failed poll that will be retried, and after how long: a console can show "reconnecting". */
  onRetry?: ((error: StratumError, delayMs: number) => void) | undefined;
}

/** What {@link JoinLister.pollNodeJoins} is asked. */
export interface PollNodeJoinsOptions {
  /** The `ETag` of the list the caller has; absent, the list is answered at once. */
  etag?: string | undefined;
  /** With `etag`: how long the founder may hold the request for a change, in seconds (0 to 30). */
  waitSeconds?: number | undefined;
  /** Aborts the poll; the abort is re-thrown as it is. */
  signal?: AbortSignal | undefined;
  /** Gives up this many ms after the wait (not counting the `waitSeconds` the founder may hold it). */
  timeoutMs?: number | undefined;
}

/** What one long poll of the join list found. */
export type JoinListPoll =
  | {
      /** The list differs from the one named by `etag` (or none was named). */
      changed: true;
      /** The joins, newest first. */
      items: NodeJoin[];
      /** How many more machines the cluster can take, when the founder says (the list's `capacity`). */
      capacity?: JoinCapacity;
      /** The new list's `ETag`; undefined when the founder sends none (it cannot long-poll). */
      etag: string | undefined;
    }
  | {
      /** Nothing changed within the wait (304). */
      changed: false;
      /** The list's `ETag`, still the one the caller has. */
      etag: string;
    };

/** What {@link watchJoins} needs of a client: the list call, and the long poll when it has one. */
export interface JoinLister {
  /** One poll: every join the founder lists. */
  listNodeJoins(options?: { signal?: AbortSignal; timeoutMs?: number }): Promise<{
    /** The joins, newest first. */
    items: NodeJoin[];
  }>;
  /**
   * One long poll of the list (the admin client's `pollNodeJoins`). Optional: without it, the
   * watch polls `listNodeJoins`.
   */
  pollNodeJoins?(options: PollNodeJoinsOptions): Promise<JoinListPoll>;
}

/**
 * Watches the join list and yields each change, one at a time. The first answer yields every
 * join as `added`, so a console can start from nothing.
 *
 * With a client that long-polls ({@link JoinLister.pollNodeJoins}, as the admin client does)
 * and a founder that answers with an `ETag`, each request is held by the founder until the list
 * changes, and the change is yielded at once. A founder that sends no `ETag` cannot long-poll:
 * the watch then polls `listNodeJoins` every `intervalMs`. So does a client without
 * `pollNodeJoins`.
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
  const { signal, intervalMs = 2_000, backoff, timeoutMs, onRetry, waitSeconds = DEFAULT_WAIT_SECONDS } = options;
  if (!Number.isInteger(waitSeconds) || waitSeconds < 1 || waitSeconds > MAX_WAIT_SECONDS)
    throw new StratumError("INVALID_ARGUMENT", `waitSeconds must be an integer from 1 to ${MAX_WAIT_SECONDS}`);
  let known = new Map<string, NodeJoin>();
  let failures = 0;
  // Long-polls while the founder answers with an ETag (the list's, once there is one).
  let longPoll = client.pollNodeJoins !== undefined;
  let etag: string | undefined;
  for (;;) {
    throwIfAborted(signal);
    let items: NodeJoin[] | undefined;
    let held = false;
    try {
      if (longPoll) {
        const started = Date.now();
        const sent = etag;
        const answer = await client.pollNodeJoins!({ signal, timeoutMs, ...(sent ? { etag: sent, waitSeconds } : {}) });
        if (answer.changed) items = answer.items;
        etag = answer.etag;
        longPoll = etag !== undefined;
        // The founder held the request (or answered a real change): ask again at once. An
        // answer that came back early without a change is a founder that does not hold
        // requests; waiting `intervalMs` keeps the watch from spinning on it.
        held = (answer.changed && etag !== sent) || Date.now() - started >= (waitSeconds * 1000) / 2;
      } else {
        ({ items } = await client.listNodeJoins({ signal, timeoutMs }));
      }
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
    if (items) {
      const changes = diffJoins(known, items);
      known = new Map(items.map((join) => [join.id, join]));
      for (const change of changes) {
        yield change;
        throwIfAborted(signal); // an abort between iterations ends the watch at once
      }
    }
    if (!held) await sleep(intervalMs, signal);
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
