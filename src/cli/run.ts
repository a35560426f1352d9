/**
 * The CLI as a function: `runCli(argv, io)` parses, dispatches and returns the exit code, so
 * tests run it in-process with captured output and `main.ts` only wires the process to it.
 * @module
 */

import packageJson from "../../package.json" with { type: "json" };
import { CliError } from "../errors/cli.js";
import { parseCommandArgs, type CommandSpec } from "./args.js";
import {
  adminApprove,
  adminCodes,
  adminExpire,
  adminFail,
  adminJoins,
  adminMint,
  adminReject,
  adminRetry,
  adminRevoke,
} from "./commands/admin.js";
import { check } from "./commands/check.js";
import { codeCheck } from "./commands/code.js";
import { progress } from "./commands/progress.js";
import { register } from "./commands/register.js";
import { releaseDownload, releaseKeygen, releaseSign, releaseVerify } from "./commands/release.js";
import { status } from "./commands/status.js";
import { unseal } from "./commands/unseal.js";
import { EXIT_OK } from "./exit-codes.js";
import { commandHelp, exitCodesHelp, GROUP_WORDS, groupHelp, helpWidth, mainHelp, type HelpLayout } from "./help.js";
import { Output, type CliIo } from "./output.js";
import { colourWanted, createStyle } from "./style.js";
import { closest } from "./suggest.js";

export type { CliIo, TextSink } from "./output.js";
export { EXIT_CODE_TABLE, exitCodeFor, exitCodeForCode } from "./exit-codes.js";

/** Every command, in the order `--help` lists them (within their groups). */
export const COMMANDS: readonly CommandSpec[] = [
  codeCheck,
  check,
  register,
  progress,
  status,
  unseal,
  releaseKeygen,
  releaseSign,
  releaseVerify,
  releaseDownload,
  adminMint,
  adminCodes,
  adminRevoke,
  adminJoins,
  adminApprove,
  adminReject,
  adminRetry,
  adminFail,
  adminExpire,
];

const GLOBAL_FLAGS = new Set(["--json", "--help", "-h", "--version"]);

/**
 * Splits the command words off `argv`. Only the boolean global flags may come before them
 * (`stratum-join --json admin joins`); every other flag belongs to a command.
 */
function resolveCommand(argv: readonly string[]): { words: string[]; rest: string[] } {
  const words: string[] = [];
  const rest: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (GLOBAL_FLAGS.has(arg)) {
      rest.push(arg);
      continue;
    }
    if (arg.startsWith("-")) break;
    words.push(arg);
    const candidate = words.join(" ");
    if (COMMANDS.some((c) => c.path.join(" ") === candidate)) {
      i++;
      break;
    }
    if (!COMMANDS.some((c) => c.path.join(" ").startsWith(`${candidate} `))) {
      i++;
      break;
    }
  }
  return { words, rest: [...rest, ...argv.slice(i)] };
}

/**
 * `unknown command "regster"; did you mean register?`: the closest command of the same group
 * (`admin aprove` → `admin approve`), or of the top level.
 */
function unknownCommand(words: readonly string[]): string {
  const typed = words.join(" ");
  const group = words.length > 1 && GROUP_WORDS.has(words[0]!) ? words[0]! : undefined;
  const candidates = group
    ? COMMANDS.filter((c) => c.path[0] === group).map((c) => c.path.slice(1).join(" "))
    : [...new Set(COMMANDS.map((c) => c.path[0]!))];
  const guess = closest(group ? words.slice(1).join(" ") : words[0]!, candidates);
  return `unknown command ${JSON.stringify(typed)}${guess ? `; did you mean ${group ? `${group} ` : ""}${guess}?` : ""}`;
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and returns the exit code. Output
 * goes to `io.stdout` and `io.stderr`; `io.signal` aborting (Ctrl-C) stops any wait or
 * download and returns 130. Never throws: every failure is printed (as JSON with `--json`)
 * and mapped to its exit code (see `EXIT_CODE_TABLE`).
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const json = argv.includes("--json");
  const out = new Output(io, json);
  const signal = io.signal ?? new AbortController().signal;
  // Help goes to stdout (or stderr after a usage error): each painted for its own stream.
  const layout = (stream: "stdout" | "stderr"): HelpLayout => ({
    width: helpWidth(io.columns, io.env),
    style: createStyle(!json && colourWanted(io.env, stream === "stdout" ? (io.stdoutIsTTY ?? io.isTTY) : io.isTTY)),
  });
  const helpAt = argv.findIndex((a) => !GLOBAL_FLAGS.has(a));
  if (argv[helpAt] === "help" && argv[helpAt + 1] === "exit-codes") {
    io.stdout.write(exitCodesHelp(layout("stdout")));
    return EXIT_OK;
  }
  if (argv[helpAt] === "help" && argv.length > helpAt + 1) {
    // `stratum-join help admin approve` is `stratum-join admin approve --help`.
    return runCli([...argv.slice(0, helpAt), ...argv.slice(helpAt + 1), "--help"], io);
  }
  const { words, rest } = resolveCommand(argv);
  const wantsHelp = rest.includes("--help") || rest.includes("-h");

  if (words.length === 0) {
    if (rest.includes("--version")) {
      out.result({ version: packageJson.version }, packageJson.version);
      return EXIT_OK;
    }
    if (wantsHelp) {
      io.stdout.write(mainHelp(COMMANDS, layout("stdout")));
      return EXIT_OK;
    }
    if (!json) io.stderr.write(mainHelp(COMMANDS, layout("stderr")));
    const flag = argv.find((a) => a.startsWith("-") && !GLOBAL_FLAGS.has(a));
    return out.error(
      new CliError("USAGE", flag ? `unknown flag ${flag} (flags go after the command)` : "no command given"),
      { usageOf: "" },
    );
  }
  if (words[0] === "help") {
    io.stdout.write(mainHelp(COMMANDS, layout("stdout")));
    return EXIT_OK;
  }
  const spec = COMMANDS.find((c) => c.path.join(" ") === words.join(" "));
  if (!spec) {
    if (words.length === 1 && GROUP_WORDS.has(words[0]!)) {
      if (wantsHelp) {
        io.stdout.write(groupHelp(COMMANDS, words[0]!, layout("stdout")));
        return EXIT_OK;
      }
      if (!json) io.stderr.write(groupHelp(COMMANDS, words[0]!, layout("stderr")));
      return out.error(new CliError("USAGE", `${words[0]} needs a command`), { usageOf: words[0]! });
    }
    return out.error(new CliError("USAGE", unknownCommand(words)), { usageOf: "" });
  }
  const name = spec.path.join(" ");
  try {
    const args = parseCommandArgs(spec, rest, io.env);
    if (args.values.help) {
      io.stdout.write(commandHelp(spec, layout("stdout")));
      return EXIT_OK;
    }
    const action = await spec.load();
    const code = await action(
      { out, env: io.env, signal, isTTY: io.isTTY, ...(io.stdin ? { stdin: io.stdin } : {}) },
      args,
    );
    return code ?? EXIT_OK;
  } catch (error) {
    return out.error(error, {
      signal,
      usageOf: name,
      ...(spec.fieldHint ? { fieldHint: (field: string) => spec.fieldHint!(field) } : {}),
    });
  }
}
