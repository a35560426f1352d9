/**
 * Running the README's snippets as a user would: TypeScript files in the packed test project,
 * each in a Node process of its own (tsx only strips the types: `@stratum/join` resolves to the
 * installed tarball), their stdout read line by line; and tsc over the project.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The tsx loader, from this repository's dev dependencies (the project under test has none). */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** A snippet running in its own process. */
export interface SnippetProcess {
  /** Every stdout line so far. */
  readonly lines: string[];
  /** Everything on stderr so far. */
  stderr(): string;
  /** The first line (already seen or to come) matching `pattern`; rejects after `timeoutMs` or at exit. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** The exit: the code (or 128 + the signal's number when killed), rejects after `timeoutMs` (then kills it). */
  exited(timeoutMs?: number): Promise<number>;
  readonly child: ChildProcess;
}

const SIGNALS: Record<string, number> = { SIGTERM: 15, SIGKILL: 9, SIGINT: 2 };

/** Starts `node --import tsx file args…` in `cwd` with exactly `env` (plus PATH and HOME). */
export function startSnippet(
  file: string,
  options: { cwd: string; env?: Record<string, string>; args?: string[] },
): SnippetProcess {
  return startSnippetFile(file, { ...options, nodeArgs: ["--import", TSX] });
}

/** Starts `node nodeArgs… file args…` (a JavaScript file: no tsx) in `cwd` with exactly `env` (plus PATH and HOME). */
export function startSnippetFile(
  file: string,
  options: { cwd: string; env?: Record<string, string>; args?: string[]; nodeArgs?: string[] },
): SnippetProcess {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), file, ...(options.args ?? [])], {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: options.cwd, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  let partial = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  child.stdout!.on("data", (chunk: Buffer) => {
    const parts = (partial + chunk.toString("utf8")).split("\n");
    partial = parts.pop()!;
    lines.push(...parts);
    for (const wake of waiters) wake();
  });
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const exit = new Promise<number>((resolve) =>
    child.once("close", (code, signal) => {
      if (partial) lines.push(partial);
      resolve(code ?? 128 + (SIGNALS[signal ?? ""] ?? 0));
    }),
  );
  const describe = () => `stdout:\n${lines.join("\n")}\nstderr:\n${stderr}`;
  return {
    lines,
    child,
    stderr: () => stderr,
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise<string>((resolve, reject) => {
        const check = () => {
          const line = lines.find((l) => pattern.test(l));
          if (line === undefined) return false;
          done();
          resolve(line);
          return true;
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms\n${describe()}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(wake);
        };
        const wake = () => void check();
        if (check()) return;
        waiters.add(wake);
        void exit.then(() => {
          if (!check()) {
            done();
            reject(new Error(`exited without a line matching ${pattern}\n${describe()}`));
          }
        });
      });
    },
    async exited(timeoutMs = 120_000) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          child.kill("SIGKILL");
          reject(new Error(`still running after ${timeoutMs} ms\n${describe()}`));
        }, timeoutMs);
      });
      try {
        return await Promise.race([exit, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Runs a program to its end; its exit code and output, never throwing for a non-zero exit. */
export async function runToEnd(
  file: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: options.cwd, ...options.env },
      timeout: options.timeoutMs ?? 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string; message: string };
    return { code: typeof e.code === "number" ? e.code : 1, output: `${e.stdout ?? ""}${e.stderr ?? ""}${e.message}` };
  }
}

/** tsc of the project, with `-p config`, from `dir`. */
export function tsc(project: string, dir: string, config: string): Promise<{ code: number; output: string }> {
  return runToEnd(process.execPath, [join(project, "node_modules", "typescript", "bin", "tsc"), "-p", config], {
    cwd: dir,
  });
}
