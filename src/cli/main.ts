#!/usr/bin/env node
/**
 * The `stratum-join` executable: wires the process (argv, stdout/stderr, env, Ctrl-C) to
 * {@link runCli} and exits with its code. Everything else lives in run.ts, so tests run the
 * CLI in-process.
 * @module
 */

import { runCli } from "./run.js";

const controller = new AbortController();
let signalled: NodeJS.Signals | undefined;
const onSignal = (name: NodeJS.Signals) => {
  // The first Ctrl-C stops waits and downloads cleanly (partial downloads stay resumable);
  // a second one means "now", for anything that does not stop.
  if (signalled) process.exit(name === "SIGTERM" ? 143 : 130);
  signalled = name;
  // The reason carries SIGTERM's exit code, so the --json document says the code the process exits with.
  const reason = new DOMException(`stopped by ${name}`, "AbortError");
  controller.abort(name === "SIGTERM" ? Object.assign(reason, { exitCode: 143 }) : reason);
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  isTTY: Boolean(process.stderr.isTTY),
  stdoutIsTTY: Boolean(process.stdout.isTTY),
  // Help fits the terminal that shows it; undefined in a pipe (then COLUMNS, else 80).
  columns: process.stdout.columns || process.stderr.columns || undefined,
  // Touched only when a command reads it (progress --log -), so no other command holds stdin.
  stdin: { [Symbol.asyncIterator]: () => process.stdin[Symbol.asyncIterator]() },
  signal: controller.signal,
});
const exitCode = signalled === "SIGTERM" && code === 130 ? 143 : code;
// Exit explicitly once both streams have flushed: an idle keep-alive socket of fetch must not
// hold a finished command open.
process.stdout.write("", () => process.stderr.write("", () => process.exit(exitCode)));
