/**
 * The CLI as a function: `runCli(argv, io)` parses, dispatches and returns the exit code, so
 * tests run it in-process with captured output and `main.ts` only wires the process to it.
 * @module
 */

import packageJson from "../../package.json" with { type: "json" };
import { CliError, commandHelp, parseCommandArgs, type CommandSpec } from "./args.js";
import {
  adminApprove,
  adminCodes,
  adminJoins,
  adminMint,
  adminReject,
  adminRetry,
  adminRevoke,
} from "./commands/admin.js";
import { check } from "./commands/check.js";
import { codeCheck } from "./commands/code.js";
import { register } from "./commands/register.js";
import { releaseDownload, releaseKeygen, releaseSign, releaseVerify } from "./commands/release.js";
import { status } from "./commands/status.js";
import { EXIT_OK } from "./exit-codes.js";
import { Output, type CliIo } from "./output.js";

export type { CliIo, TextSink } from "./output.js";
export { EXIT_CODE_TABLE, exitCodeFor, exitCodeForCode } from "./exit-codes.js";

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  codeCheck,
  check,
  register,
  status,
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
];

const GROUPS: Record<string, string> = {
  code: "offline join-code checks",
  release: "release keys, signed manifests, verified downloads",
  admin: "the founder's admin API: join codes and joins",
};

const GLOBAL_FLAGS = new Set(["--json", "--help", "-h", "--version"]);

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.path.join(" ").length));
  return [
    "Usage: stratum-join <command> [flags]",
    "",
    "Join a machine to a Stratum cluster, and admit machines, from the command line.",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.path.join(" ").padEnd(width)}  ${c.summary}`),
    "",
    'Every command takes --json (one JSON document on stdout; errors as {"error":{"code",...}})',
    "and --help. Exit codes are documented per error code in the README (CLI reference).",
    "",
  ].join("\n");
}

function groupHelp(group: string): string {
  const commands = COMMANDS.filter((c) => c.path[0] === group);
  const width = Math.max(...commands.map((c) => c.path.join(" ").length));
  return [
    `Usage: stratum-join ${group} <command> [flags]`,
    "",
    `${group}: ${GROUPS[group] ?? ""}`,
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.path.join(" ").padEnd(width)}  ${c.summary}`),
    "",
  ].join("\n");
}

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
 * Runs the CLI with `argv` (without `node` and the script) and returns the exit code. Output
 * goes to `io.stdout` and `io.stderr`; `io.signal` aborting (Ctrl-C) stops any wait or
 * download and returns 130. Never throws: every failure is printed (as JSON with `--json`)
 * and mapped to its exit code (see `EXIT_CODE_TABLE`).
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const json = argv.includes("--json");
  const out = new Output(io, json);
  const signal = io.signal ?? new AbortController().signal;
  const helpAt = argv.findIndex((a) => !GLOBAL_FLAGS.has(a));
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
      io.stdout.write(mainHelp());
      return EXIT_OK;
    }
    if (!json) io.stderr.write(mainHelp());
    const flag = argv.find((a) => a.startsWith("-") && !GLOBAL_FLAGS.has(a));
    return out.error(
      new CliError("USAGE", flag ? `unknown flag ${flag} (flags go after the command)` : "no command given"),
      { usageOf: "" },
    );
  }
  if (words[0] === "help") {
    io.stdout.write(mainHelp());
    return EXIT_OK;
  }
  const spec = COMMANDS.find((c) => c.path.join(" ") === words.join(" "));
  if (!spec) {
    if (words.length === 1 && GROUPS[words[0]!] !== undefined) {
      if (wantsHelp) {
        io.stdout.write(groupHelp(words[0]!));
        return EXIT_OK;
      }
      if (!json) io.stderr.write(groupHelp(words[0]!));
      return out.error(new CliError("USAGE", `${words[0]} needs a command`), { usageOf: words[0]! });
    }
    return out.error(new CliError("USAGE", `unknown command ${JSON.stringify(words.join(" "))}`), { usageOf: "" });
  }
  const name = spec.path.join(" ");
  try {
    const args = parseCommandArgs(spec, rest, io.env);
    if (args.values.help) {
      io.stdout.write(commandHelp(spec));
      return EXIT_OK;
    }
    const code = await spec.run({ out, env: io.env, signal, isTTY: io.isTTY }, args);
    return code ?? EXIT_OK;
  } catch (error) {
    return out.error(error, { signal, usageOf: name });
  }
}
