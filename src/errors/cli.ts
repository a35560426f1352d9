/**
 * The errors of the `stratum-join` command itself, beside the SDK's (every other family is a
 * file of this folder too). Not exported by any entry: the CLI maps them to its exit codes.
 * @module
 */
import { StratumError } from "./stratum-error.js";

/**
 * An error of the CLI itself: `USAGE` (a flag or argument is missing or wrong; exit 2),
 * `FILE_ERROR` (a file named on the command line cannot be read or written; exit 15),
 * `JOIN_SESSION_MISSING`, `NO_UPGRADE`. Like every SDK error it carries no secret.
 */
export class CliError extends StratumError {
  /** The command whose `--help` explains the usage, for `USAGE`. */
  readonly command: string | undefined;

  constructor(
    code: "USAGE" | "FILE_ERROR" | "JOIN_SESSION_MISSING" | "NO_UPGRADE",
    message: string,
    options: { command?: string; cause?: unknown } = {},
  ) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CliError";
    this.command = options.command;
  }
}
