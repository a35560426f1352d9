/**
 * Colour and emphasis for a person at a terminal, and nothing for anyone else: a pipe, a file,
 * a script reading `--json`, or someone who set `NO_COLOR`. Plain SGR escapes (bold, dim and
 * the eight basic colours, which every terminal and tmux render and a user's theme maps), so
 * no dependency decides it for us.
 * @module
 */

import type { JoinState } from "../types.js";

/** Whether to colour a stream, from the environment and whether the stream is a terminal. */
export function colourWanted(env: Readonly<Record<string, string | undefined>>, isTTY: boolean): boolean {
  // FORCE_COLOR wins over everything, as in Node itself and most CLIs: "0" or "false" turn
  // colour off, any other value (even empty) on. Then NO_COLOR (no-color.org: present and not
  // empty), then the terminal itself; TERM=dumb is a terminal that cannot show it.
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== "0" && force.toLowerCase() !== "false";
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return isTTY && env.TERM !== "dumb";
}

/** Paints text for one stream: each method returns its input unchanged when colour is off. */
export interface Style {
  /** Colour is on for this stream. */
  readonly enabled: boolean;
  /** Emphasis: headings, names, the pairing code. */
  bold(text: string): string;
  /** Less: timestamps, comments in examples. */
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  blue(text: string): string;
  magenta(text: string): string;
  cyan(text: string): string;
  /** A join state in its colour: green when joined, red when it ended badly, yellow while a person must act. */
  state(state: JoinState | string): string;
}

const sgr = (open: number, close: number) => (text: string) => `\x1b[${open}m${text}\x1b[${close}m`;

// A state's colour says whether anyone has to do something: yellow waits on a person (approve,
// upgrade), cyan is the machinery at work, green is done, red is over or broken.
const STATE_COLOURS: Record<string, keyof Omit<Style, "enabled" | "state" | "bold" | "dim">> = {
  "needs-upgrade": "yellow",
  pending: "yellow",
  approved: "cyan",
  delivering: "cyan",
  installing: "cyan",
  joined: "green",
  failed: "red",
  rejected: "red",
  expired: "red",
};

/** A {@link Style} that paints (`enabled`) or passes text through. */
export function createStyle(enabled: boolean): Style {
  if (!enabled) {
    const plain = (text: string) => text;
    return {
      enabled,
      bold: plain,
      dim: plain,
      red: plain,
      green: plain,
      yellow: plain,
      blue: plain,
      magenta: plain,
      cyan: plain,
      state: plain,
    };
  }
  const style: Style = {
    enabled,
    bold: sgr(1, 22),
    dim: sgr(2, 22),
    red: sgr(31, 39),
    green: sgr(32, 39),
    yellow: sgr(33, 39),
    blue: sgr(34, 39),
    magenta: sgr(35, 39),
    cyan: sgr(36, 39),
    state: (state) => {
      const colour = STATE_COLOURS[state];
      return colour ? style.bold(style[colour](state)) : style.bold(state);
    },
  };
  return style;
}

// CSI sequences (colours, erase line) and a lone carriage return take no column.
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** `text` without escape sequences. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/** The columns `text` takes on a terminal: escapes take none, each code point one (the CLI prints no wide characters). */
export function visibleWidth(text: string): number {
  return [...stripAnsi(text)].length;
}

// What a terminal acts on or hides, as it may arrive in a peer's text (a registrant's host name,
// a refusal's detail, a failure reason): C0 controls (ESC starts every escape sequence), DEL,
// C1 controls (0x9B is CSI to a terminal that reads 8-bit controls), the line and paragraph
// separators, and the invisible format characters that reorder or hide text (bidi overrides
// and isolates, zero-width characters, the byte order mark).
// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** The escape a person can read for one unprintable character: `\x1b`, `\u202e`. */
function visibleEscape(char: string): string {
  const n = char.codePointAt(0)!;
  return n < 0x100 ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`;
}

/**
 * `text` as a terminal may show it: every control character, escape and invisible format
 * character written out as a visible escape (`\x1b[8m` stays on the screen as those six
 * characters), so a peer's string can neither redraw, colour, hide nor reorder what is around
 * it. Every string from a peer goes through this before the CLI prints it for a person.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, visibleEscape);
}

/** `value` with every string in it (deep: arrays, plain objects) made {@link printable}, for building the lines a person reads. */
export function printableView<T>(value: T): T {
  if (typeof value === "string") return printable(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => printableView(item)) as T;
  if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, printableView(item)])) as T;
  }
  return value;
}

// The same characters as JSON may carry them: JSON.stringify writes C0 controls as escapes but
// leaves C1 controls and the format characters as they are, which a terminal showing the
// document would act on. Written as \uXXXX, the value stays the same.
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** `JSON.stringify(value, null, 2)`, with the characters a terminal acts on escaped (same value). */
export function terminalSafeJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    UNPRINTABLE_IN_JSON,
    (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, "0")}`,
  );
}
