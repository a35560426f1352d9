/**
 * The join runner: an in-process loop that expires waiting joins, fails running joins silent
 * past the stall deadline, starts the next approved join when none runs (one at a time, only
 * on a green cluster), and keeps the join listener
 * open or closed as the state requires. Woken at once by approvals and progress reports, and
 * every `tickMs` otherwise (codes expire with time, not with an event).
 * @module
 */

import type { Cluster } from "./cluster.js";
import type { Logger } from "./http.js";

/** The runner. */
export class Runner {
  readonly #cluster: Cluster;
  readonly #tickMs: number;
  readonly #log: Logger;
  readonly #afterTick: () => Promise<void>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(options: { cluster: Cluster; tickMs: number; log: Logger; afterTick: () => Promise<void> }) {
    this.#cluster = options.cluster;
    this.#tickMs = options.tickMs;
    this.#log = options.log;
    this.#afterTick = options.afterTick;
  }

  /** Starts ticking. The timer is unref'd: the runner never keeps a process alive by itself. */
  start(): void {
    this.#timer = setInterval(() => this.kick(), this.#tickMs);
    this.#timer.unref();
    this.kick();
  }

  /** Runs a pass now (or right after the one in progress). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#pass().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.kick();
      }
    });
  }

  /** Resolves when the pass in progress (if any) has finished. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #pass(): Promise<void> {
    try {
      this.#cluster.expireWaiting();
      for (const id of this.#cluster.failStalled())
        this.#log(`${new Date().toISOString()} runner failed ${id}: silent past the stall deadline`);
      await this.#cluster.deliverNext();
      await this.#afterTick();
    } catch (error) {
      // A failed pass (a simulated crash, a full disk) leaves the state as it was; the next tick tries again.
      this.#log(`${new Date().toISOString()} runner error ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Stops ticking and waits for the pass in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.idle();
  }
}
