/**
 * Waiting for a state with a person watching: one line per state change, and while the join
 * listener cannot be reached, one line that updates in place ("listener 192.0.2.240:9444
 * unreachable (ECONNREFUSED), retrying in 4 s…") followed by a "reconnected" line once it
 * answers again. In a pipe the same news comes as plain lines.
 *
 * The SDK's `watchRegistration` retries on its own, but says nothing when a retry succeeds
 * (a long poll that answers 304 yields nothing). So each outage ends the watch here, and the
 * wait starts a fresh one after its own backoff: a fresh watch yields the current view first,
 * which is the moment the listener is back.
 * @module
 */

import { isFinalState } from "../core/join-states.js";
import { retryDelay, sleep } from "../core/retry.js";
import { RegistrationEndedError, StratumApiError, StratumError, TimeoutError } from "../errors/index.js";
import type { WrittenDelivery } from "../node/delivery.js";
import type { MachineIdentity } from "../node/identity.js";
import type { SecretDestinations } from "../node/secret-destinations.js";
import type { JoinSession } from "../node/join-session.js";
import { watchRegistration } from "../node/registration.js";
import type { JoinState, Registration } from "../types.js";
import type { CommandContext } from "./args.js";
import { writeDeliveryOf } from "./delivery.js";
import { causeOf, describeState } from "./joiner-steps.js";

// Between attempts while the listener is down: at least a second (so the countdown a person
// sees is never "0 s" and a dead listener is not hammered), doubling to 15 s with full jitter.
const OUTAGE_BACKOFF = { baseMs: 2_000, maxMs: 15_000 };
const MIN_RETRY_MS = 1_000;

/** Prints each view whose state (or wait reason, or failed step) differs from the last one printed. */
export function stateReporter(ctx: CommandContext): (view: Registration) => void {
  let last = "";
  return (view) => {
    const key = `${view.state}|${view.waitReason ?? ""}|${view.failedStep ?? ""}`;
    if (key === last) return;
    last = key;
    const style = ctx.out.style;
    ctx.out.say(`${style.dim(new Date().toISOString().slice(11, 19))}  ${describeState(view, style)}`);
  };
}

/** The outage line: drawn and counted down on a terminal, plain lines elsewhere, and the "reconnected" line after. */
class OutageReport {
  #since: number | undefined;
  readonly #ctx: CommandContext;
  readonly #endpoint: string;

  constructor(ctx: CommandContext, endpoint: string) {
    this.#ctx = ctx;
    this.#endpoint = endpoint;
  }

  /** Shows that `error` cut the listener off, then waits `delayMs` (counting down on a terminal). */
  async wait(error: unknown, delayMs: number, signal: AbortSignal): Promise<void> {
    this.#since ??= Date.now();
    const { out } = this.#ctx;
    const what = `listener ${this.#endpoint} unreachable (${causeOf(error)})`;
    const end = Date.now() + delayMs;
    const seconds = () => Math.max(1, Math.ceil((end - Date.now()) / 1000));
    if (!out.interactive) {
      out.say(`${what}; retrying in ${seconds()} s`);
      await sleep(delayMs, signal);
      return;
    }
    const draw = () => out.progress(`${out.errStyle.yellow(what)}, retrying in ${seconds()} s…`);
    draw();
    const ticker = setInterval(draw, 1000);
    try {
      await sleep(delayMs, signal);
    } finally {
      clearInterval(ticker);
    }
  }

  /** True unless the listener is unreachable now (a wait began and no view came since). */
  get answering(): boolean {
    return this.#since === undefined;
  }

  /** A view came: if the listener was unreachable, says so once. */
  answered(): void {
    if (this.#since === undefined) return;
    const seconds = Math.round((Date.now() - this.#since) / 1000);
    this.#since = undefined;
    this.#ctx.out.clearProgress();
    this.#ctx.out.say(`${this.#ctx.out.style.green("reconnected")} to ${this.#endpoint} after ${seconds} s`);
  }

  stop(): void {
    this.#ctx.out.clearProgress();
  }
}

/**
 * `register --wait … --timeout` ran out while the cluster answered: the registration is still
 * where it was (`registration`), typically waiting for an operator. Not a network failure
 * (exit 18, `STILL_WAITING`): running the same command again goes on waiting.
 */
export class StillWaitingError extends StratumError {
  /** The last view of the registration. */
  readonly registration: Registration;

  constructor(message: string, registration: Registration) {
    super("STILL_WAITING", message);
    this.name = "StillWaitingError";
    this.registration = registration;
  }
}

/** What {@link waitForState} did. */
export interface WaitOutcome {
  registration: Registration;
  /** Where the delivery was written, when one passed by. */
  delivery?: WrittenDelivery | undefined;
}

/**
 * Watches the registration until `until`, printing each change through `report` (pass the
 * reporter that printed the state before the wait, so that state is not printed again). The
 * first view that carries a delivery has it written to `DIR/delivery` (public files and the node
 * key, 0600) and its secrets to `secrets`' destinations, whatever state is awaited: a machine
 * waiting for `joined` must still keep what it was delivered.
 * @throws RegistrationEndedError in a final state other than `until`; after `timeoutMs`,
 *   StillWaitingError while the listener answers, TimeoutError while it does not;
 *   SecretDestinationError (a secret without a destination: nothing written) and what
 *   `writeDelivery` throws; the signal's reason on Ctrl-C
 */
export async function waitForState(
  ctx: CommandContext,
  options: {
    session: JoinSession;
    identity: MachineIdentity;
    dir: string;
    until: JoinState;
    /** Where the delivery's secrets go (`--secrets`); without, a delivery that carries one is refused. */
    secrets?: SecretDestinations | undefined;
    timeoutMs?: number | undefined;
    report?: ((view: Registration) => void) | undefined;
  },
): Promise<WaitOutcome> {
  const timeout = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
  const signal = timeout ? AbortSignal.any([ctx.signal, timeout]) : ctx.signal;
  const report = options.report ?? stateReporter(ctx);
  const outage = new OutageReport(ctx, options.session.endpoint);
  let delivery: WrittenDelivery | undefined;
  let last: Registration | undefined;
  let failures = 0;
  try {
    for (;;) {
      const round = new AbortController();
      let cutOff: unknown;
      try {
        for await (const view of watchRegistration(options.session, options.identity, {
          signal: AbortSignal.any([signal, round.signal]),
          onRetry: (error) => {
            cutOff = error;
            round.abort();
          },
        })) {
          failures = 0;
          outage.answered();
          last = view;
          report(view);
          if (view.delivery && !delivery)
            delivery = await writeDeliveryOf(ctx, options.dir, view.delivery, options.secrets);
          if (view.state === options.until) return { registration: view, ...(delivery ? { delivery } : {}) };
          if (isFinalState(view.state)) throw new RegistrationEndedError(view);
        }
        throw new StratumError("REGISTRATION_ENDED", "the registration's watch ended without a view");
      } catch (error) {
        if (cutOff === undefined || signal.aborted) throw error;
      }
      const retryAfter = cutOff instanceof StratumApiError ? cutOff.retryAfter : undefined;
      await outage.wait(cutOff, Math.max(MIN_RETRY_MS, retryDelay(failures++, retryAfter, OUTAGE_BACKOFF)), signal);
    }
  } catch (error) {
    if (timeout?.aborted && !ctx.signal.aborted) {
      const seconds = Math.round(options.timeoutMs! / 1000);
      // The listener answered all along: the wait ran out, not the network.
      if (outage.answering && last) {
        const extra = describeState(last).split(" — ")[1];
        const still = last.state === "pending" && extra ? extra : `${last.state}${extra ? `: ${extra}` : ""}`;
        throw new StillWaitingError(
          `the registration did not reach ${options.until} within ${seconds} s: the cluster answers, and it is still ${still}`,
          last,
        );
      }
      throw new TimeoutError(
        `the registration did not reach ${options.until} within ${seconds} s, and the join listener ${options.session.endpoint} is not answering`,
      );
    }
    throw error;
  } finally {
    outage.stop();
  }
}
