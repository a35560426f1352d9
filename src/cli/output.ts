/**
 * Everything the CLI prints goes through here, so that two rules hold everywhere:
 * - with `--json`, stdout carries exactly one JSON document (the result, or `{"error":{...}}`),
 *   and anything meant for a person (the pairing code, each state, progress) goes to stderr;
 * - no secret is printed: every API object passes through `redact`, the admin token is never
 *   an input of any output, and a minted join code is printed only by the one call whose
 *   purpose that is, marked as shown once.
 * @module
 */

import { redact } from "../core/redact.js";
import { StratumError } from "../errors/index.js";
import { EXIT_INTERRUPTED, exitCodeFor } from "./exit-codes.js";

/** A stream the CLI writes text to (`process.stdout`, or a capture in tests). */
export interface TextSink {
  write(text: string): unknown;
}

/** The process as `runCli` sees it; tests pass captures. */
export interface CliIo {
  stdout: TextSink;
  stderr: TextSink;
  /** The environment (`STRATUM_API`, `STRATUM_TOKEN`, `STRATUM_JOIN_URL`, `STRATUM_DEBUG`). */
  env: Readonly<Record<string, string | undefined>>;
  /** Stderr is a terminal: progress bars are drawn there. Without it, no progress is printed. */
  isTTY: boolean;
  /** Aborted on Ctrl-C (main.ts wires SIGINT to it): waits and downloads stop, exit 130. */
  signal?: AbortSignal;
}

const ATTACK_CODES = new Set(["LISTENER_CERTIFICATE", "BINDING_MISMATCH", "PAIRING_MISMATCH"]);

/** The human or JSON face of one run. */
export class Output {
  /** `--json` was given. */
  readonly json: boolean;
  readonly #io: CliIo;
  #progressShown = false;

  constructor(io: CliIo, json: boolean) {
    this.#io = io;
    this.json = json;
  }

  /** A line for the person running the command: stdout, or stderr with `--json` so stdout stays one document. */
  say(text = ""): void {
    this.clearProgress();
    (this.json ? this.#io.stderr : this.#io.stdout).write(`${text}\n`);
  }

  /** A warning, always on stderr. */
  warn(text: string): void {
    this.clearProgress();
    this.#io.stderr.write(`warning: ${text}\n`);
  }

  /**
   * The command's result: with `--json` the document (redacted), else the human lines. The
   * document is redacted even though commands build it from public fields: a field the API
   * adds later and marks sensitive is then hidden without touching the CLI.
   */
  result(document: unknown, human: string | readonly string[]): void {
    this.#emit(redact(document), human);
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
    if (this.json) this.#io.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
    else for (const line of typeof human === "string" ? [human] : human) this.#io.stdout.write(`${line}\n`);
  }

  /** A progress line, redrawn in place; only on a terminal. */
  progress(line: string): void {
    if (!this.#io.isTTY) return;
    this.#io.stderr.write(`\r\x1b[2K${line}`);
    this.#progressShown = true;
  }

  /** Ends a progress line, if one is shown, so the next output starts on its own line. */
  clearProgress(): void {
    if (!this.#progressShown) return;
    this.#io.stderr.write("\r\x1b[2K");
    this.#progressShown = false;
  }

  /** Prints `error` (stderr, or the JSON document on stdout) and returns the exit code. */
  error(error: unknown, options: { signal?: AbortSignal; usageOf?: string } = {}): number {
    this.clearProgress();
    const exitCode = exitCodeFor(error, options.signal);
    const document = errorDocument(error, exitCode);
    if (this.json) {
      this.#io.stdout.write(`${JSON.stringify({ error: document }, null, 2)}\n`);
      return exitCode;
    }
    const lines = [
      `stratum-join: ${document.message.startsWith(`${document.code}:`) ? document.message : `${document.code}: ${document.message}`}`,
    ];
    const fieldErrors = document.errors as { field: string; message: string }[] | undefined;
    for (const problem of fieldErrors ?? []) lines.push(`  - ${problem.field || "(request)"}: ${problem.message}`);
    const details = document.details as Record<string, unknown> | undefined;
    for (const [key, value] of Object.entries(details ?? {})) {
      if (["string", "number", "boolean"].includes(typeof value)) lines.push(`  ${key}: ${String(value)}`);
    }
    if (typeof document.retryAfter === "number") lines.push(`  retry in ${document.retryAfter} s`);
    if (typeof document.requestId === "string") lines.push(`  request id: ${document.requestId}`);
    if (ATTACK_CODES.has(document.code)) {
      lines.push(
        "  Someone may be on the line between this machine and the cluster. Do not approve this machine, do not retry blindly.",
      );
    }
    if (document.code === "USAGE" && options.usageOf !== undefined)
      lines.push(`Run 'stratum-join ${options.usageOf}${options.usageOf ? " " : ""}--help' for usage.`);
    if (this.#io.env.STRATUM_DEBUG && error instanceof Error && error.stack) lines.push(error.stack);
    this.#io.stderr.write(`${lines.join("\n")}\n`);
    return exitCode;
  }
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
  "suggestion",
  "check",
  "rule",
  "path",
  "attempts",
] as const;

/** The JSON form of any error a command threw. */
export function errorDocument(error: unknown, exitCode: number): ErrorDocument {
  if (exitCode === EXIT_INTERRUPTED) return { code: "ABORTED", message: "interrupted", exitCode };
  if (!StratumError.is(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return { code: "UNEXPECTED", message: `unexpected error: ${message}`, exitCode };
  }
  const document: ErrorDocument = { code: error.code, message: error.message, exitCode };
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

/** The pairing code as a boxed banner, spaced out so it is read aloud and compared without mistakes. */
export function pairingBanner(pairingCode: string): string[] {
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
    return `┃${" ".repeat(left)}${text}${" ".repeat(width - text.length - left)}┃`;
  };
  return [`┏${"━".repeat(width)}┓`, centre(""), ...body.map(centre), centre(""), `┗${"━".repeat(width)}┛`];
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

/** A plain text table: a header row and left-aligned columns. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}
