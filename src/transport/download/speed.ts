/**
 * The minimum transfer rate of a body (as curl's `--speed-limit`/`--speed-time`): the
 * inactivity timers of the sources catch a silence, not a trickle, and a source that sends a
 * byte now and then (or trailer lines after the last chunk) would otherwise hold a download
 * open for ever. Time the downloader spends waiting on its own disk is not counted against
 * the source.
 * @internal
 * @module
 */
import { TimeoutError } from "../../errors/index.js";

/** The slowest a body may arrive, averaged over a window. */
export interface ReleaseMinSpeed {
  /** Bytes per second a body must average over each window; 0 turns the rule off. Default 1024. */
  bytesPerSecond?: number | undefined;
  /** The window, ms: a body slower than `bytesPerSecond` over this long is cut and retried. Default 30 000. */
  windowMs?: number | undefined;
}

/**
 * The default: 1 KiB/s over 30 s. A healthy link, however slow (a satellite hop, a busy
 * founder), moves far more than 30 KiB in 30 s; a source below that is stuck or hostile, and
 * a retry (a new connection, maybe another path) is worth more than waiting on it.
 */
export const DEFAULT_MIN_SPEED: Readonly<Required<ReleaseMinSpeed>> = Object.freeze({
  bytesPerSecond: 1024,
  windowMs: 30_000,
});

/** Checks the {@link ReleaseMinSpeed} of one body, from its first byte's wait to its end. */
export class SpeedWatch {
  private windowStart = performance.now();
  private windowBytes = 0;
  /** Time of the window spent waiting on the consumer (the disk), not on the source. */
  private pausedMs = 0;
  private pausedSince: number | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  /**
   * Starts watching; `onTooSlow` is called once, with a {@link TimeoutError} naming the rate,
   * when a window ends below the minimum. A `bytesPerSecond` of 0 watches nothing.
   */
  constructor(
    private readonly floor: Readonly<Required<ReleaseMinSpeed>>,
    private readonly what: string,
    private readonly onTooSlow: (error: TimeoutError) => void,
  ) {
    if (floor.bytesPerSecond > 0) this.schedule(floor.windowMs);
  }

  /** `n` more body bytes came. */
  add(n: number): void {
    this.windowBytes += n;
  }

  /** The consumer is busy until `wait` settles: that time is not the source's. */
  pauseWhile(wait: Promise<void>): void {
    if (this.pausedSince !== undefined) return;
    this.pausedSince = performance.now();
    const resume = (): void => {
      if (this.pausedSince === undefined) return;
      this.pausedMs += performance.now() - this.pausedSince;
      this.pausedSince = undefined;
    };
    wait.then(resume, resume);
  }

  /** The body is over (complete or not): no more checks. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => this.check(), Math.max(1, ms));
    this.timer.unref?.();
  }

  private check(): void {
    if (this.stopped) return;
    const now = performance.now();
    const paused = this.pausedMs + (this.pausedSince === undefined ? 0 : now - this.pausedSince);
    const active = now - this.windowStart - paused;
    // a window that was mostly the disk's is not over yet
    if (active < this.floor.windowMs) return this.schedule(this.floor.windowMs - active);
    const needed = (this.floor.bytesPerSecond * active) / 1000;
    if (this.windowBytes < needed) {
      this.stop();
      this.onTooSlow(
        new TimeoutError(
          `${this.what}: ${this.windowBytes} bytes in ${Math.round(active)} ms, below the minimum of ${this.floor.bytesPerSecond} bytes per second`,
        ),
      );
      return;
    }
    this.windowStart = now;
    this.windowBytes = 0;
    this.pausedMs = 0;
    if (this.pausedSince !== undefined) this.pausedSince = now;
    this.schedule(this.floor.windowMs);
  }
}
