/**
 * The founder's time on the joiner (docs/protocol.md#founder-time). The PAKE answer carries
 * `serverTime`, covered by the channel binding; the joiner measures its own clock against it
 * and, when the two differ by more than {@link CLOCK_TOLERANCE_SECONDS}, judges certificate
 * validity by its own clock corrected by that offset. A bare machine with a dead RTC battery
 * (years off) still joins: the trust comes from the PAKE, and its clock adds nothing.
 * @module
 */
import { CLOCK_TOLERANCE_SECONDS } from "../core/clock.js";
import { ResponseValidationError } from "../errors/index.js";

export { CLOCK_TOLERANCE_SECONDS } from "../core/clock.js";

// RFC 3339 date-time, as `serverTime` must be written; Date.parse alone accepts far more.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/;

/**
 * The founder's time minus this machine's, in ms, from the PAKE answer's `serverTime` and the
 * machine's clock when the answer arrived (`receivedAtMs`, ms since the epoch). The answer's
 * transit is part of the error, milliseconds against a 5-minute tolerance.
 * @throws ResponseValidationError when `serverTime` is not an RFC 3339 date-time
 * @internal
 */
export function measureClockOffset(serverTime: string, receivedAtMs: number): number {
  const founder = RFC3339.test(serverTime) ? Date.parse(serverTime) : NaN;
  if (Number.isNaN(founder)) {
    throw new ResponseValidationError("POST /v1/join/pake", [
      { path: "serverTime", message: "is not an RFC 3339 date-time" },
    ]);
  }
  return founder - receivedAtMs;
}

/**
 * Whether the founder's time is more than {@link CLOCK_TOLERANCE_SECONDS} away from this
 * machine's (`clockOffsetMs`, the founder's minus this machine's, in ms): only then is this
 * machine's clock taken for wrong and the founder's used instead. No offset: not past it.
 * @internal
 */
export function pastTolerance(clockOffsetMs: number | undefined): clockOffsetMs is number {
  return clockOffsetMs !== undefined && Math.abs(clockOffsetMs) > CLOCK_TOLERANCE_SECONDS * 1000;
}

/**
 * The time certificates are judged at, given the offset measured at the PAKE: this machine's
 * clock (`nowMs`, default now) when the offset is within the tolerance, else that clock
 * corrected by the offset, the founder's time.
 * @internal
 */
export function founderNow(clockOffsetMs: number | undefined, nowMs: number = Date.now()): Date {
  return new Date(pastTolerance(clockOffsetMs) ? nowMs + clockOffsetMs : nowMs);
}
