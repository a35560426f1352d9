/**
 * The founder's disk full: it answers a write 503 `STORAGE_UNAVAILABLE` with `Retry-After`,
 * having changed nothing, and recovers by itself once space is freed (spec: ProblemCode). So
 * a write that gets it is sent again after `Retry-After` ({@link StorageGate.write}), as the
 * spec says, while the page says so in plain words and pauses the other writes; the first
 * write that succeeds again ends it. No DOM here: storage-notice.ts shows it.
 * @module
 */

import { StratumApiError, type AdminClient } from "@stratum/join";
import { formatDuration } from "./time.js";

/** Without `Retry-After` (a proxy may drop it): the reference founder's own figure. */
const DEFAULT_RETRY_S = 30;
/** Never sooner than this, whatever `Retry-After` says: a full disk is not freed in a blink. */
const MIN_RETRY_S = 1;

/** True for the founder's "my disk is full, nothing was saved". */
export function isDiskFull(error: unknown): error is StratumApiError {
  return error instanceof StratumApiError && error.code === "STORAGE_UNAVAILABLE";
}

/** While the disk is full: since when, when the next try is, and how many writes wait for it. */
export interface DiskFull {
  since: number;
  retryAt: number;
  waiting: number;
}

/** The notice's first sentence, in plain words, with the countdown to the next try. */
export function diskFullText(state: DiskFull, now: number): string {
  const left = state.retryAt - now;
  const next = left >= 1_000 ? `Trying again in ${formatDuration(left)}.` : "Trying again now…";
  return `The cluster's disk is full: nothing can be saved until space is freed on the founder. ${next}`;
}

/** What the gate tells the page. */
export interface StorageGateHooks {
  /** Each change: the disk found full, the next try moved, or writable again (`undefined`). */
  changed(state: DiskFull | undefined): void;
  /** A write went through: whatever said "nothing was saved" is over. */
  saved?(): void;
  /** The clock, in ms (tests pass their own). */
  clock?(): number;
}

/** Every write of the page goes through one gate, which knows whether the founder can save. */
export class StorageGate {
  private current: DiskFull | undefined;
  private readonly waiters = new Set<object>();
  private stopper = new AbortController();

  constructor(private readonly hooks: StorageGateHooks) {}

  /** The disk as last found: full (and since when), or `undefined` when the last write went through. */
  get state(): DiskFull | undefined {
    return this.current;
  }

  /**
   * Runs `send`; while it is refused with `STORAGE_UNAVAILABLE`, waits `Retry-After` and sends
   * it again. Resolves with its answer; rejects with any other failure at once, with the
   * disk-full error when {@link stop} gives up, and with `signal`'s reason when it aborts.
   */
  async write<T>(send: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const token = {};
    try {
      for (;;) {
        try {
          const answer = await send();
          this.waiters.delete(token);
          this.set(undefined); // it saved: space is back
          this.hooks.saved?.();
          return answer;
        } catch (error) {
          if (!isDiskFull(error)) throw error;
          const waitMs = Math.max(error.retryAfter ?? DEFAULT_RETRY_S, MIN_RETRY_S) * 1000;
          this.waiters.add(token);
          const now = this.hooks.clock?.() ?? Date.now();
          this.set({ since: this.current?.since ?? now, retryAt: now + waitMs, waiting: this.waiters.size });
          await this.pause(waitMs, error, signal);
        }
      }
    } finally {
      // A write that ended without an answer (stopped, aborted, another failure) no longer
      // waits; the last one to leave takes the notice with it: nobody tries any more.
      if (this.waiters.delete(token))
        this.set(this.waiters.size && this.current ? { ...this.current, waiting: this.waiters.size } : undefined);
    }
  }

  /** Gives up on every write waiting for space: each rejects with its disk-full error. */
  stop(): void {
    this.stopper.abort();
    this.stopper = new AbortController();
  }

  private pause(ms: number, error: StratumApiError, signal: AbortSignal | undefined): Promise<void> {
    const stopped = this.stopper.signal;
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        stopped.removeEventListener("abort", onStop);
        signal?.removeEventListener("abort", onAbort);
      };
      const onStop = (): void => {
        done();
        reject(error);
      };
      const onAbort = (): void => {
        done();
        reject(signal!.reason);
      };
      const timer = setTimeout(() => {
        done();
        resolve();
      }, ms);
      if (signal?.aborted) return onAbort();
      stopped.addEventListener("abort", onStop, { once: true });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private set(state: DiskFull | undefined): void {
    if (state === undefined && this.current === undefined) return;
    this.current = state;
    this.hooks.changed(state);
  }
}

/** The writes of the admin client the console uses: each goes through `gate`. */
const WRITES = [
  "approveNodeJoin",
  "rejectNodeJoin",
  "failNodeJoin",
  "retryNodeJoin",
  "mintJoinCode",
  "revokeJoinCode",
] as const;

/** `client` with its writes sent through `gate` (reads are never refused for a full disk). */
export function withStorageGate(client: AdminClient, gate: StorageGate): AdminClient {
  const gated: AdminClient = { ...client };
  for (const name of WRITES) {
    const write = client[name] as (...args: unknown[]) => Promise<unknown>;
    (gated as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      // Every write takes its call options last; their signal ends the waiting too.
      const options = args.at(-1) as { signal?: AbortSignal } | undefined;
      return gate.write(() => write(...args), options?.signal);
    };
  }
  return gated;
}
