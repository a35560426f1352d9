/**
 * The founder-wide rate of KE2s answered for live codes (docs/protocol.md#live-rate). A KE2 of a
 * live code lets whoever holds it test one guess of the code offline, so answering one is what
 * an attempt costs; a code-less sweep of every selector would otherwise burn every live code as
 * fast as the founder answers. A token bucket: an answered KE2 of a live code takes a token, a
 * proven exchange gives its token back at once (an honest machine costs the rate nothing), and
 * the bucket refills at `perMinute`. While it is empty, every KE1 is answered `JOIN_CODE_BUSY`,
 * for a live code or not, so the refusal tells nobody which selectors are live.
 *
 * In memory, as the exchanges are: a founder restart hands out at most a fresh `burst`, and
 * forgives at most the live exchanges outstanding at the crash (see docs/protocol.md#attempts).
 * @module
 */

/** The bucket's size and refill. */
export interface LiveRateOptions {
  /** Tokens when full: live KE2s answered at once, before any is proven. */
  burst: number;
  /** Tokens added per minute. */
  perMinute: number;
  /** Told once each time the bucket runs empty (for the operator's log). */
  onSpent?: () => void;
}

/** The founder-wide budget of live KE2s. */
export class LiveKe2Rate {
  readonly #o: LiveRateOptions;
  #level: number;
  #at: number;
  #spent = false;
  /** Tokens taken by exchanges that have not ended yet: they may come back any moment, proven. */
  #pending = 0;

  constructor(options: LiveRateOptions, now = Date.now()) {
    this.#o = options;
    this.#level = options.burst;
    this.#at = now;
  }

  #refill(now: number): void {
    const added = ((now - this.#at) / 60_000) * this.#o.perMinute;
    this.#level = Math.min(this.#o.burst, this.#level + added);
    this.#at = now;
  }

  /** Whether a token is there now (told to `onSpent` once when the bucket has run empty). */
  hasToken(now = Date.now()): boolean {
    this.#refill(now);
    if (this.#level >= 1) {
      this.#spent = false;
      return true;
    }
    if (!this.#spent) this.#o.onSpent?.();
    this.#spent = true;
    return false;
  }

  /** Takes a token for a KE2 about to be answered; false when there is none. */
  take(now = Date.now()): boolean {
    if (!this.hasToken(now)) return false;
    this.#level -= 1;
    this.#pending += 1;
    return true;
  }

  /** Gives a token back: the exchange was proven, or its KE2 was never answered. */
  refund(now = Date.now()): void {
    // Added before the refill, whose clamp to the burst is then the only one.
    this.#level += 1;
    this.#refill(now);
    this.#pending = Math.max(0, this.#pending - 1);
  }

  /** An exchange that took a token ended unproven: the token stays spent, the refill brings it back. */
  spend(): void {
    this.#pending = Math.max(0, this.#pending - 1);
  }

  /**
   * Whole seconds a refused KE1 should wait, before the spread every busy answer gets: none
   * while exchanges that took a token are still going (a proven one gives it back within a
   * joiner's Argon2), else until the refill brings one.
   */
  secondsUntilToken(now = Date.now()): number {
    this.#refill(now);
    if (this.#level >= 1 || this.#pending > 0) return 0;
    return Math.max(1, Math.ceil(((1 - this.#level) / this.#o.perMinute) * 60));
  }
}
