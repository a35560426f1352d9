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
