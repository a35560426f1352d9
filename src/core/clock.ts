/**
 * A joining machine's clock against the founder's (docs/protocol.md#founder-time): the
 * tolerance past which the joiner judges certificates by the founder's time, and the words a
 * person reads when a machine's clock is that far off. Shared by the joiner, the CLI and the
 * console, so they agree on when to warn and on what they say.
 * @module
 */

import type { ClockReport } from "../types.js";

/**
 * How far, in seconds, a machine's clock may differ from the founder's before the joiner
 * judges certificate validity by the founder's time, and before the machine is shown with a
 * clock warning: 5 minutes. Within it a clock is trusted, which is why leaves are backdated
 * 5 minutes; past it, hours or years off, it is a clock that was never set.
 */
export const CLOCK_TOLERANCE_SECONDS = 300;

/** True when an offset (seconds, either sign) is past {@link CLOCK_TOLERANCE_SECONDS}. */
export function clockIsOff(offsetSeconds: number): boolean {
  return Number.isFinite(offsetSeconds) && Math.abs(offsetSeconds) > CLOCK_TOLERANCE_SECONDS;
}

const UNITS: readonly [seconds: number, name: string][] = [
  [365 * 86_400, "year"],
  [86_400, "day"],
  [3_600, "hour"],
  [60, "minute"],
  [1, "second"],
];

/**
 * An offset in words, from the machine's side: `3 years behind the founder's` for a positive
 * offset (the founder's time minus the machine's: the machine is behind), `1 year ahead of the
 * founder's` for a negative one, in the largest whole unit (years, days, hours, minutes,
 * seconds), rounded.
 */
export function describeClockOffset(offsetSeconds: number): string {
  const size = Math.abs(offsetSeconds);
  const [unit, name] = UNITS.find(([seconds]) => size >= seconds) ?? UNITS[UNITS.length - 1]!;
  const n = Math.round(size / unit);
  return `${n} ${name}${n === 1 ? "" : "s"} ${offsetSeconds > 0 ? "behind" : "ahead of"} the founder's`;
}

/**
 * The warning to show next to a machine whose clock is off (the inventory's `clock`), or
 * undefined when it is within {@link CLOCK_TOLERANCE_SECONDS} or was not reported: e.g. `the
 * machine's clock is 3 years behind the founder's (not synchronised by NTP): fix it`.
 */
export function clockWarning(clock: ClockReport | undefined): string | undefined {
  const offset = clock?.offsetSeconds;
  if (offset === undefined || !clockIsOff(offset)) return undefined;
  const ntp =
    clock?.ntpSynchronized === true
      ? " (though NTP says it is synchronised)"
      : clock?.ntpSynchronized === false
        ? " (not synchronised by NTP)"
        : "";
  return `the machine's clock is ${describeClockOffset(offset)}${ntp}: fix it`;
}
