/**
 * `stratum-join progress`: the joiner's half after the delivery, from a shell. Reports one
 * step (and install log lines) to the founder over the session's pinned connection; the
 * founder moves the join on: the first report makes it `installing`, step `join` done makes it
 * `joined`, a failed step makes it `failed`.
 *
 * The command's declaration (words, flags, help) is `src/cli/commands/progress.ts`; this module is
 * loaded only when the command runs.
 * @module
 */

import { abortReason, retryDelay, sleep, throwIfAborted } from "../../core/retry.js";
import { JoinProtocolError, NetworkError, StratumApiError, TimeoutError } from "../../errors/index.js";
import type { MachineIdentity } from "../../node/identity.js";
import type { JoinSession } from "../../node/join-session.js";
import { reportProgress } from "../../node/registration.js";
import type { ProgressReport, Registration } from "../../types.js";
import { CliError } from "../../errors/cli.js";
import { numberFlag, requiredFlag, stringFlag, type CommandContext, type CommandAction } from "../args.js";
import { openMachineDir, readSession, readTextFile } from "../files.js";
import { describeState } from "../joiner-steps.js";
import type { progress } from "../commands/progress.js";

type StepStatus = "running" | "done" | "failed";
const STATUSES: readonly StepStatus[] = ["running", "done", "failed"];

// What a person is told a step is when --title is not given (the spec's own step names).
const TITLES: Record<string, string> = {
  join: "Joining the cluster",
  upgrade: "Upgrading to the cluster's release",
  storage: "Preparing the disks",
};

// The spec's limits on one report: at most 2,000 log lines of at most 4,096 characters. The
// byte budget keeps a report well under the founder's body limit whatever the lines hold.
const MAX_LINES = 2_000;
const MAX_LINE_CHARS = 4_096;
const MAX_REPORT_BYTES = 1024 * 1024;
// Lines read from stdin are sent at least this often, so the console shows a long install as
// it goes rather than at its end.
const FLUSH_MS = 2_000;
// A report that gets no answer is tried this many times in all before the command fails (exit 9).
const ATTEMPTS = 5;

/** Splits text into log lines, each cut into pieces the spec takes (counted in code points). */
function* logLines(text: string): Generator<string> {
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const points = [...line];
    if (points.length <= MAX_LINE_CHARS) yield line;
    else for (let i = 0; i < points.length; i += MAX_LINE_CHARS) yield points.slice(i, i + MAX_LINE_CHARS).join("");
  }
}

/**
 * The lines of `source` in batches of at most {@link MAX_LINES} lines and {@link MAX_REPORT_BYTES}
 * bytes; a batch that is not full is let go {@link FLUSH_MS} after its first line.
 */
async function* batches(source: AsyncIterable<string | Uint8Array>, signal: AbortSignal): AsyncGenerator<string[]> {
  const decoder = new TextDecoder();
  const iterator = source[Symbol.asyncIterator]();
  let partial = "";
  let batch: string[] = [];
  let bytes = 0;
  let firstAt = 0;
  const full: string[][] = [];
  const add = (line: string) => {
    const size = Buffer.byteLength(line) + 4;
    if (batch.length >= MAX_LINES || (batch.length > 0 && bytes + size > MAX_REPORT_BYTES)) {
      full.push(batch);
      batch = [];
      bytes = 0;
    }
    if (batch.length === 0) firstAt = Date.now();
    batch.push(line);
    bytes += size;
  };
  let next = iterator.next();
  try {
    for (;;) {
      throwIfAborted(signal);
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      const flush = new Promise<"flush">((resolve) => {
        if (batch.length > 0) timer = setTimeout(() => resolve("flush"), Math.max(0, firstAt + FLUSH_MS - Date.now()));
      });
      const aborted = new Promise<"abort">((resolve) => {
        onAbort = () => resolve("abort");
        signal.addEventListener("abort", onAbort, { once: true });
      });
      const outcome = await Promise.race([next, flush, aborted]).finally(() => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort!);
      });
      if (outcome === "abort") throw abortReason(signal);
      if (outcome === "flush") {
        yield batch;
        batch = [];
        bytes = 0;
        continue;
      }
      if (outcome.done) break;
      next = iterator.next();
      partial += typeof outcome.value === "string" ? outcome.value : decoder.decode(outcome.value, { stream: true });
      const end = partial.lastIndexOf("\n");
      if (end >= 0) {
        for (const line of logLines(partial.slice(0, end))) add(line);
        partial = partial.slice(end + 1);
      }
      while (full.length > 0) yield full.shift()!;
    }
    partial += decoder.decode();
    if (partial !== "") for (const line of logLines(partial)) add(line);
    yield* full.splice(0);
    if (batch.length > 0) yield batch;
  } finally {
    await iterator.return?.();
  }
}

/** The lines of a log file, in batches. */
async function* fileBatches(path: string): AsyncGenerator<string[]> {
  const text = await readTextFile(path, "log");
  if (text === "") return;
  const lines = logLines(text.endsWith("\n") ? text.slice(0, -1) : text);
  let batch: string[] = [];
  let bytes = 0;
  for (const line of lines) {
    const size = Buffer.byteLength(line) + 4;
    if (batch.length >= MAX_LINES || (batch.length > 0 && bytes + size > MAX_REPORT_BYTES)) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(line);
    bytes += size;
  }
  if (batch.length > 0) yield batch;
}

/** Worth another try: the listener restarting, busy or briefly unreachable. */
function transient(error: unknown): boolean {
  if (error instanceof StratumApiError) return [429, 502, 503, 504].includes(error.status);
  if (error instanceof JoinProtocolError) return error.code === "CONNECTION_CHANGED" || error.code === "TLS_FAILED";
  return error instanceof NetworkError || error instanceof TimeoutError;
}

/**
 * Sends one report, again after a transient failure. A retried report whose first try was
 * recorded but not answered records its log lines twice: a duplicated line is better than a
 * lost one, and the step itself is idempotent (the founder keeps the last report of each step).
 */
async function send(
  ctx: CommandContext,
  session: JoinSession,
  identity: MachineIdentity,
  report: ProgressReport,
): Promise<Registration> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await reportProgress(session, identity, { ...report, signal: ctx.signal });
    } catch (error) {
      if (ctx.signal.aborted || !transient(error) || attempt + 1 >= ATTEMPTS) throw error;
      const delay = retryDelay(attempt, error instanceof StratumApiError ? error.retryAfter : undefined, {
        baseMs: 1_000,
        maxMs: 10_000,
      });
      ctx.out.warn(
        `the report got no answer from ${session.endpoint} (${(error as { code?: string }).code ?? "error"}); trying again in ${Math.ceil(delay / 1000)} s`,
      );
      await sleep(delay, ctx.signal);
    }
  }
}

/** Runs `progress`. */
export const runProgress: CommandAction<typeof progress.flags> = async (ctx, args) => {
  const dir = requiredFlag(args, "identity");
  const name = requiredFlag(args, "step");
  const status = requiredFlag(args, "status");
  if (!(STATUSES as readonly string[]).includes(status))
    throw new CliError("USAGE", `--status takes one of ${STATUSES.join(", ")}`, { command: "progress" });
  const title = stringFlag(args, "title") ?? TITLES[name] ?? name;
  const message = stringFlag(args, "message");
  const log = stringFlag(args, "log");
  const totalSteps = numberFlag(args, "total-steps");
  if (totalSteps !== undefined && totalSteps > 200)
    throw new CliError("USAGE", "--total-steps takes a whole number from 1 to 200", { command: "progress" });
  if (log === "-" && !ctx.stdin) throw new CliError("USAGE", "--log - needs a standard input", { command: "progress" });

  const session = await readSession(dir);
  const { identity } = await openMachineDir(dir, { create: false, warn: (text) => ctx.out.warn(text) });
  const step = () => ({
    name,
    title,
    status: status as StepStatus,
    at: new Date().toISOString(),
    ...(message !== undefined ? { message } : {}),
  });
  // A running step goes out first, so the console shows it while the log streams; a done or
  // failed one last, since the founder takes no log once the join is over.
  const stepFirst = status === "running";
  // The plan's total goes with the step, so the console says "step 1 of 7" from the start.
  const planned = totalSteps !== undefined ? { totalSteps } : {};
  let registration: Registration | undefined;
  let lines = 0;
  let reports = 0;
  const source = log === undefined ? undefined : log === "-" ? batches(ctx.stdin!, ctx.signal) : fileBatches(log);
  for await (const batch of source ?? []) {
    registration = await send(ctx, session, identity, {
      ...(stepFirst && reports === 0 ? { steps: [step()], ...planned } : {}),
      log: batch,
    });
    reports++;
    lines += batch.length;
  }
  if (!stepFirst || reports === 0) {
    registration = await send(ctx, session, identity, { steps: [step()], ...planned });
    reports++;
  }
  const { delivery: _delivery, ...view } = registration!;
  ctx.out.result(
    {
      joinId: session.joinId,
      state: view.state,
      step: { name, title, status, ...(message !== undefined ? { message } : {}) },
      logLines: lines,
      reports,
      registration: view,
    },
    [
      `reported step ${name} ${status}${lines > 0 ? ` with ${lines} log lines` : ""}`,
      `${session.joinId}: ${describeState(registration!, ctx.out.style)}`,
    ],
  );
};
