/**
 * Times for people: durations ("3 h 12 min"), ages ("4 min ago"), countdowns ("in 3 h 12
 * min") and moments in local time with the zone ("30 Nov 2026, 21:29 CET"). Pure, so it is
 * tested on its own; `now` is always passed in, so a page re-renders from one clock.
 * @module
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * A duration in at most two units, largest first: "45 s", "3 min 12 s", "3 h 12 min",
 * "2 d 4 h". Two units are enough to act on and short enough to read at a glance; seconds
 * are dropped from an hour on, where they only flicker.
 */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms / SECOND)) * SECOND;
  // A no-break space inside each "3 h": a narrow line wraps between amounts, never in one.
  if (total < MINUTE) return `${total / SECOND}\u00a0s`;
  const pick = (big: number, bigUnit: string, small: number, smallUnit: string): string => {
    const whole = Math.floor(total / big);
    const rest = Math.floor((total % big) / small);
    return rest ? `${whole}\u00a0${bigUnit} ${rest}\u00a0${smallUnit}` : `${whole}\u00a0${bigUnit}`;
  };
  if (total < HOUR) return pick(MINUTE, "min", SECOND, "s");
  if (total < DAY) return pick(HOUR, "h", MINUTE, "min");
  return pick(DAY, "d", HOUR, "h");
}

/** How long ago `iso` was: "just now" under 5 s (a poll's jitter), else "4 min ago". */
export function formatAgo(iso: string | undefined, now: number): string | undefined {
  const at = parseTime(iso);
  if (at === undefined) return undefined;
  const ms = now - at;
  // A few seconds either way is clock skew between the page and the server, not the future.
  if (ms < 5 * SECOND) return "just now";
  return `${formatDuration(ms)} ago`;
}

/** A countdown to `iso`: "in 3 h 12 min", or "5 min ago" once it has passed. */
export function formatCountdown(iso: string | undefined, now: number): string | undefined {
  const at = parseTime(iso);
  if (at === undefined) return undefined;
  const ms = at - now;
  if (ms <= 0) return `${formatDuration(-ms)} ago`;
  // Under a minute the seconds matter; above, a whole minute rounded up never says "in 0 min".
  return `in\u00a0${formatDuration(ms < MINUTE ? ms : Math.ceil(ms / MINUTE) * MINUTE)}`;
}

/** True once `iso` has passed. */
export function isPast(iso: string | undefined, now: number): boolean {
  const at = parseTime(iso);
  return at !== undefined && at <= now;
}

// Field by field: `dateStyle`/`timeStyle` refuse to be combined with `timeZoneName`.
const LOCAL = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "numeric",
  minute: "2-digit",
  timeZoneName: "short",
});

/** A moment in the reader's local time, with its zone, so a screenshot or a paste is unambiguous. */
export function formatLocalTime(iso: string | undefined): string | undefined {
  const at = parseTime(iso);
  return at === undefined ? undefined : LOCAL.format(at);
}

function parseTime(iso: string | undefined): number | undefined {
  if (!iso) return undefined;
  const at = Date.parse(iso);
  return Number.isNaN(at) ? undefined : at;
}
