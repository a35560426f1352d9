/**
 * Everything the CLI prints goes through here, so that two rules hold everywhere:
 * - with `--json`, stdout carries exactly one JSON document (the result, or `{"error":{...}}`),
 *   and anything meant for a person (the pairing code, each state, progress) goes to stderr;
 * - no secret is printed: every API object passes through `redact`, the admin token is never
 *   an input of any output, and a minted join code is printed only by the one call whose
 *   purpose that is, marked as shown once;
 * - no peer's text reaches a terminal as the peer wrote it: the lines a person reads are built
 *   from strings made {@link printable} (errors here, tables in {@link table}, views by each
 *   command with `printableView`), and JSON documents escape what a terminal would act on.
 * @module
 */

import { describeClockOffset } from "../core/clock.js";
import { redact } from "../core/redact.js";
import { StratumError } from "../errors/index.js";
import { exitCodeFor, isInterruption } from "./exit-codes.js";
import { nextSteps } from "./next-step.js";
import { DEFAULT_WIDTH, wrap } from "./help.js";
import {
  colourWanted,
  createStyle,
  printable,
  stripAnsi,
  terminalSafeJson,
  visibleWidth,
  type Style,
} from "./style.js";

/** A stream the CLI writes text to (`process.stdout`, or a capture in tests). */
export interface TextSink {
  write(text: string): unknown;
}

/** The process as `runCli` sees it; tests pass captures. */
export interface CliIo {
  stdout: TextSink;
  stderr: TextSink;
  /**
   * The environment (`STRATUM_API`, `STRATUM_TOKEN`, `STRATUM_JOIN_URL`, `STRATUM_DEBUG`,
   * `NO_COLOR`, `FORCE_COLOR`, `COLUMNS`).
   */
  env: Readonly<Record<string, string | undefined>>;
  /** Stderr is a terminal: progress bars and updating lines are drawn there, in colour. Without it, none. */
  isTTY: boolean;
  /** Stdout is a terminal: results are coloured. Default: as `isTTY`. */
  stdoutIsTTY?: boolean | undefined;
  /** The terminal's width, for help; unknown (a pipe) means `COLUMNS`, else 80. */
  columns?: number | undefined;
  /** Standard input, read by `progress --log -`. */
  stdin?: AsyncIterable<string | Uint8Array> | undefined;
  /** Aborted on Ctrl-C (main.ts wires SIGINT to it): waits and downloads stop, exit 130. */
  signal?: AbortSignal | undefined;
}

/** Where a failed command was, for the error's next step. */
export interface ErrorContext {
  signal?: AbortSignal | undefined;
  /** The command whose `--help` a usage error points to ("" for the top level). */
  usageOf?: string | undefined;
  /** The flag that sets a refused field (`mgmt.address` → `--address`), said after its problem. */
  fieldHint?: ((field: string) => string | undefined) | undefined;
}

/** The human or JSON face of one run. */
export class Output {
  /** `--json` was given. */
  readonly json: boolean;
  /** Paints what {@link say} and the human result print (stdout; nothing with `--json`). */
  readonly style: Style;
  /** Paints what goes to stderr: errors, warnings, progress (nothing with `--json`). */
  readonly errStyle: Style;
  readonly #io: CliIo;
  #progressShown = false;

  constructor(io: CliIo, json: boolean) {
    this.#io = io;
    this.json = json;
    // No colour with --json at all: the person reading stderr then is usually a log file.
    this.style = createStyle(!json && colourWanted(io.env, io.stdoutIsTTY ?? io.isTTY));
    this.errStyle = createStyle(!json && colourWanted(io.env, io.isTTY));
  }

  /** Stderr is a terminal: a line can be redrawn in place. */
  get interactive(): boolean {
    return this.#io.isTTY;
  }

  /**
   * The width results are wrapped to: the terminal's (80 when unknown) when stdout is one;
   * undefined in a pipe, where each line stays whole for grep and logs.
   */
  get resultWidth(): number | undefined {
    return (this.#io.stdoutIsTTY ?? this.#io.isTTY) && !this.json ? (this.#io.columns ?? DEFAULT_WIDTH) : undefined;
  }

  /** A line for the person running the command: stdout, or stderr with `--json` so stdout stays one document. */
  say(text = ""): void {
    this.clearProgress();
    (this.json ? this.#io.stderr : this.#io.stdout).write(`${text}\n`);
  }

  /** A warning, always on stderr. */
  warn(text: string): void {
    this.clearProgress();
    const line = `${this.errStyle.yellow(this.errStyle.bold("warning:"))} ${text}`;
    this.#io.stderr.write(`${this.#fit([line]).join("\n")}\n`);
  }

  /**
   * The command's result: with `--json` the document (redacted), else the human lines. The
   * document is redacted even though commands build it from public fields: a field the API
   * adds later and marks sensitive is then hidden without touching the CLI. `local` names
   * top-level fields the CLI made itself on this machine (file paths keyed by the role of each
   * file, such as `nodeKey`): they hold no secret, only names that look like one, so they are
   * printed as they are.
   */
  result(document: unknown, human: string | readonly string[], options: { local?: readonly string[] } = {}): void {
    if (!options.local?.length || typeof document !== "object" || document === null) {
      this.#emit(redact(document), human);
      return;
    }
    const source = document as Record<string, unknown>;
    const api = Object.fromEntries(Object.entries(source).filter(([key]) => !options.local!.includes(key)));
    const redacted = redact(api);
    // Rebuilt in the document's own key order.
    const out = Object.fromEntries(
      Object.keys(source).map((key) => [key, options.local!.includes(key) ? source[key] : redacted[key]]),
    );
    this.#emit(out, human);
  }

  /**
   * A result that carries a secret on purpose (a minted join code, shown once: that is the
   * only reason to mint). The caller marks it in the document and in the human lines.
   */
  resultWithSecret(document: unknown, human: string | readonly string[]): void {
    this.#emit(document, human);
  }

  #emit(document: unknown, human: string | readonly string[]): void {
    this.clearProgress();
    if (this.json) this.#io.stdout.write(`${terminalSafeJson(document)}\n`);
    else for (const line of typeof human === "string" ? [human] : human) this.#io.stdout.write(`${line}\n`);
  }

  /** A progress line, redrawn in place; only on a terminal. */
  progress(line: string): void {
    if (!this.#io.isTTY) return;
    // A line wider than the terminal wraps, and the carriage return then redraws only its
    // last part: cut it to fit instead (its colour goes with the cut).
    const width = this.#io.columns ?? DEFAULT_WIDTH;
    const fitted = visibleWidth(line) < width ? line : `${[...stripAnsi(line)].slice(0, width - 2).join("")}…`;
    this.#io.stderr.write(`\r\x1b[2K${fitted}`);
    this.#progressShown = true;
  }

  /** Ends a progress line, if one is shown, so the next output starts on its own line. */
  clearProgress(): void {
    if (!this.#progressShown) return;
    this.#io.stderr.write("\r\x1b[2K");
    this.#progressShown = false;
  }

  /** Prints `error` (stderr, or the JSON document on stdout) and returns the exit code. */
  error(error: unknown, options: ErrorContext = {}): number {
    this.clearProgress();
    const exitCode = exitCodeFor(error, options.signal);
    const document = errorDocument(error, exitCode);
    if (this.json) {
      this.#io.stdout.write(`${terminalSafeJson({ error: document })}\n`);
      return exitCode;
    }
    const s = this.errStyle;
    // The message and everything below may quote a peer (a refusal's detail, field errors).
    const text = printable(
      document.message.startsWith(`${document.code}:`)
        ? document.message.slice(document.code.length + 1).trimStart()
        : document.message,
    );
    // After Ctrl-C the terminal has echoed "^C" where the cursor was: start a line of our own.
    const lines = [
      `${isInterruption(exitCode) && this.#io.isTTY ? "\n" : ""}${s.bold("stratum-join:")} ${s.red(s.bold(`${printable(document.code)}:`))} ${text}`,
    ];
    const fieldErrors = document.errors as { field: string; message: string }[] | undefined;
    for (const problem of fieldErrors ?? []) {
      const hint = options.fieldHint?.(problem.field);
      lines.push(
        `  - ${printable(problem.field || "(request)")}: ${printable(problem.message)}${hint ? ` (${hint})` : ""}`,
      );
    }
    const details = document.details as Record<string, unknown> | undefined;
    for (const [key, value] of Object.entries(details ?? {})) {
      if (["string", "number", "boolean"].includes(typeof value))
        lines.push(`  ${printable(key)}: ${printable(String(value))}`);
    }
    if (typeof document.retryAfter === "number") lines.push(`  retry in ${document.retryAfter} s`);
    if (typeof document.requestId === "string") lines.push(`  request id: ${printable(document.requestId)}`);
    const suggestion = suggestionOf(error);
    if (suggestion !== undefined) {
      // The fix of one adjacent swap is the real join code, a secret: shown to the person at
      // a terminal only, never into a pipe or a log (where stderr goes when it is not one).
      lines.push(
        this.#io.isTTY
          ? `  did you mean ${s.bold(suggestion)}?`
          : "  swapping two adjacent symbols gives a valid code: run this on a terminal to see which",
      );
    }
    for (const step of nextSteps(document, { command: options.usageOf ?? "" })) lines.push(`${s.cyan("→")} ${step}`);
    if (this.#io.env.STRATUM_DEBUG && error instanceof Error && error.stack)
      lines.push(s.dim(withoutSuggestion(error.stack, suggestion)));
    this.#io.stderr.write(`${this.#fit(lines).join("\n")}\n`);
    return exitCode;
  }

  /**
   * Lines for stderr: on a terminal wrapped at word boundaries to its width, each continuation
   * indented under its text; elsewhere as they are, one line each, as a log wants them.
   */
  #fit(lines: readonly string[]): string[] {
    if (!this.#io.isTTY) return [...lines];
    const width = this.#io.columns ?? DEFAULT_WIDTH;
    return lines.flatMap((line) => {
      if (visibleWidth(line) <= width || line.includes("\n")) return [line];
      const plain = stripAnsi(line);
      const lead = /^\s*/.exec(plain)![0].length;
      const marker = /^\s*(→ |- )/.test(plain) ? 2 : 0;
      return wrap(line.trimStart(), width, lead + marker || 2, lead);
    });
  }
}

/** A `JoinCodeError`'s `suggestion` (read by name, so a copy of the SDK from another realm works). */
function suggestionOf(error: unknown): string | undefined {
  const suggestion = StratumError.is(error) ? (error as { suggestion?: unknown }).suggestion : undefined;
  return typeof suggestion === "string" && suggestion !== "" ? suggestion : undefined;
}

/** `text` with a suggested join code taken out, however the SDK worded it. */
function withoutSuggestion(text: string, suggestion: string | undefined): string {
  if (suggestion === undefined) return text;
  return text
    .replace(/;?\s*did you mean [^?\n]*\?/gi, "")
    .split(suggestion)
    .join("[a valid code]");
}

/** The `error` object of the JSON error document: `code`, `message`, `exitCode`, and the error's branchable fields. */
export interface ErrorDocument {
  code: string;
  message: string;
  exitCode: number;
  [field: string]: unknown;
}

// The fields a caller may branch on, per error class (StratumApiError, JoinCodeError,
// JoinProtocolError, release errors). Read by name so a copy of the SDK from another realm works.
// Not `suggestion`: a JoinCodeError's suggested fix is the real code, shown on a terminal only.
const FIELDS = [
  "status",
  "requestId",
  "title",
  "detail",
  "errors",
  "details",
  "retryAfter",
  "reason",
  "position",
  "character",
  "check",
  "rule",
  "path",
  "attempts",
  // UnprovenRefusalError: the refusal is not proven to be the cluster's.
  "proven",
  "claimedCode",
  "step",
  "feature",
  "runtime",
  // SecretDestinationError: the bundle fields concerned, and those already in their homes.
  "fields",
  "placed",
] as const;

/** The JSON form of any error a command threw. */
export function errorDocument(error: unknown, exitCode: number): ErrorDocument {
  if (isInterruption(exitCode)) return { code: "ABORTED", message: "interrupted", exitCode };
  if (!StratumError.is(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return { code: "UNEXPECTED", message: `unexpected error: ${message}`, exitCode };
  }
  // A JoinCodeError's suggestion is the real join code (a secret): never in a document.
  const document: ErrorDocument = {
    code: error.code,
    message: withoutSuggestion(error.message, suggestionOf(error)),
    exitCode,
  };
  const source = error as unknown as Record<string, unknown>;
  for (const field of FIELDS) {
    const value = source[field];
    if (value === undefined || (Array.isArray(value) && value.length === 0)) continue;
    document[field] = redact(value);
  }
  const registration = source.registration as Record<string, unknown> | undefined;
  if (registration && typeof registration === "object") {
    // RegistrationEndedError: the final view, without any delivery.
    const { joinId, state, reason, failedStep, failedError } = registration;
    document.registration = redact({ joinId, state, reason, failedStep, failedError });
  }
  return document;
}

/** The pairing code as a boxed banner, spaced out so it is read aloud and compared without mistakes; the code in bold where `style` paints. */
export function pairingBanner(pairingCode: string, style?: Style): string[] {
  const spaced = [...pairingCode].join(" ");
  const body = [
    "PAIRING CODE",
    "",
    spaced,
    "",
    "Approve this machine only if the",
    "cluster's console shows this code.",
  ];
  const width = Math.max(...body.map((l) => l.length)) + 6;
  const centre = (text: string) => {
    const left = Math.floor((width - text.length) / 2);
    const painted = text === spaced && style ? style.bold(text) : text;
    return `┃${" ".repeat(left)}${painted}${" ".repeat(width - text.length - left)}┃`;
  };
  return [`┏${"━".repeat(width)}┓`, centre(""), ...body.map(centre), centre(""), `┗${"━".repeat(width)}┛`];
}

/**
 * A labelled fingerprint (`AB:CD:…`, 95 characters for SHA-256) as a person compares it: in
 * two halves of 16 bytes, the second under the first, so that it fits 80 columns and is read
 * in two glances. `label` is padded to `width`.
 */
export function fingerprintLines(label: string, fingerprint: string, width = label.length + 1): string[] {
  const bytes = fingerprint.split(":");
  if (bytes.length <= 16) return [`${label.padEnd(width)}${fingerprint}`];
  return [`${label.padEnd(width)}${bytes.slice(0, 16).join(":")}`, `${" ".repeat(width)}${bytes.slice(16).join(":")}`];
}

/**
 * A moment for a person: `2026-11-30 21:29 UTC (in 3 h 12 min)`, or `(5 min ago)` once
 * passed. UTC, since a machine being installed has no time zone worth trusting; `now` is the
 * founder's time where the caller knows it (a clock that is off would count wrongly).
 */
export function formatMoment(iso: string, now: number = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso;
  const text = `${new Date(at).toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const ms = at - now;
  const span = duration(Math.abs(ms));
  return `${text} (${ms >= 0 ? `in ${span}` : `${span} ago`})`;
}

/** A duration in at most two units: `45 s`, `3 min 12 s`, `3 h 12 min`, `2 d 4 h`. */
export function duration(ms: number): string {
  const s = Math.floor(ms / 1000);
  const two = (big: number, bigUnit: string, small: number, smallUnit: string): string => {
    const whole = Math.floor(s / big);
    const rest = Math.floor((s % big) / small);
    return rest ? `${whole} ${bigUnit} ${rest} ${smallUnit}` : `${whole} ${bigUnit}`;
  };
  if (s < 60) return `${s} s`;
  if (s < 3600) return two(60, "min", 1, "s");
  if (s < 86400) return two(3600, "h", 60, "min");
  return two(86400, "d", 3600, "h");
}

/** Bytes for a person: `12.3 MiB`. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * A text table: a header row (in bold where `style` paints) and left-aligned columns. Cells
 * are made {@link printable} (they are mostly a peer's strings), then `paint` colours a cell
 * after it is padded, so escapes never throw the columns out of line.
 */
export function table(
  headers: readonly string[],
  unsafeRows: readonly (readonly string[])[],
  options: { style?: Style; paint?: (cell: string, column: number, raw: string) => string } = {},
): string[] {
  const rows = unsafeRows.map((row) => row.map(printable));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[], paint: (cell: string, column: number, raw: string) => string) =>
    cells
      .map((c, i) => paint(i === cells.length - 1 ? c : c.padEnd(widths[i]!), i, c))
      .join("  ")
      .trimEnd();
  const header = line(headers, (cell) => cell);
  return [
    options.style ? options.style.bold(header) : header,
    ...rows.map((row) => line(row, options.paint ?? ((cell) => cell))),
  ];
}

/**
 * The warning for a machine whose clock is more than 5 minutes off the founder's
 * (docs/protocol.md#founder-time): it joined, with certificates judged by the founder's time,
 * but its clock needs fixing. `offsetMs` is the founder's time minus this machine's.
 */
export function clockLine(offsetMs: number): string {
  return `this machine's clock is ${describeClockOffset(offsetMs / 1000)} (founder's time ${new Date(Date.now() + offsetMs).toISOString()}): certificates were judged by the founder's time; set the clock (NTP)`;
}
