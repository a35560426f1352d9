/**
 * Running a program that receives a secret on its standard input: the only way a secret leaves
 * this process for another one. Never in argv (`/proc/PID/cmdline` is readable by every local
 * user) nor in the environment (`/proc/PID/environ` is readable by the same user, and children
 * inherit it). No shell: the argv is run as given.
 * @module
 */
import { spawn } from "node:child_process";
import { TimeoutError } from "../errors/index.js";

/** How a program run by {@link runWithStdin} ended. */
export interface StdinCommandResult {
  /** The exit code, or null when a signal ended it. */
  exitCode: number | null;
  /** The signal that ended it, if one did. */
  signal: NodeJS.Signals | null;
  /** Everything it printed on stdout (bounded by `maxOutputBytes`). */
  stdout: Buffer;
  /** Everything it printed on stderr, as text (bounded by `maxOutputBytes`). */
  stderr: string;
}

/** Options of {@link runWithStdin}. */
export interface StdinCommandOptions {
  /** Extra environment variables (on top of this process's). */
  env?: Readonly<Record<string, string>>;
  /** Stops the program (SIGKILL) and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Stops the program (SIGKILL) after this long and rejects with a TimeoutError. */
  timeoutMs: number;
  /** What the TimeoutError says is late, e.g. `the command podman`. */
  what: string;
}

// A program's output is read for its status and its words, never for data of any size.
const MAX_OUTPUT_BYTES = 1 << 20;

/**
 * Runs `argv` (no shell) with `input` on its standard input, then stdin closed; resolves when it
 * ends, whatever its exit code. Rejects with the spawn error (`ENOENT`: no such program), the
 * signal's reason on abort, or a TimeoutError; the program is killed in both cases.
 */
export function runWithStdin(
  argv: readonly string[],
  input: Uint8Array | string,
  options: StdinCommandOptions,
): Promise<StdinCommandResult> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...options.env },
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      outcome();
    };
    const stop = (reason: unknown) => {
      child.kill("SIGKILL");
      finish(() => reject(reason));
    };
    const onAbort = () => stop(signal!.reason);
    const timer = setTimeout(
      () => stop(new TimeoutError(`${options.what} did not end within ${Math.round(options.timeoutMs / 1000)} s`)),
      options.timeoutMs,
    );
    signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk: Buffer) => {
      if (outBytes < MAX_OUTPUT_BYTES) out.push(chunk);
      outBytes += chunk.length;
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (errBytes < MAX_OUTPUT_BYTES) err.push(chunk);
      errBytes += chunk.length;
    });
    child.on("error", (error) => finish(() => reject(error)));
    child.on("close", (exitCode, exitSignal) =>
      finish(() =>
        resolve({
          exitCode,
          signal: exitSignal,
          stdout: Buffer.concat(out),
          stderr: Buffer.concat(err).toString("utf8"),
        }),
      ),
    );
    // A program that exits without reading its input closes the pipe: EPIPE is its answer, not ours.
    child.stdin.on("error", () => {});
    child.stdin.end(input);
  });
}
