/**
 * The CLI as a person or a script runs it: a process of the real entry (src/cli/main.ts,
 * bundled once per test file with esbuild, so each run starts in a fraction of what tsx
 * takes), in a pipe or in a pseudo-terminal (`script` from util-linux, as Debian ships it: no
 * native addon to build), and a small screen model that shows what a terminal would.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export const root = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Bundles src/cli/main.ts into node_modules/.cache (where its packages resolve) and returns
 * the file; {@link removeCli} takes it away again.
 */
export async function buildCli(): Promise<string> {
  const dir = join(root, "node_modules", ".cache", "stratum-join-cli-test", String(process.pid));
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, "main.mjs");
  await build({
    entryPoints: [join(root, "src/cli/main.ts")],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "silent",
  });
  return outfile;
}

/** Removes what {@link buildCli} wrote. */
export function removeCli(cli: string): void {
  rmSync(dirname(cli), { recursive: true, force: true });
}

/** A running process and everything it printed so far. */
export interface Proc {
  child: ChildProcess;
  /** stdout (and, in a terminal, everything the terminal showed). */
  out: () => string;
  err: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number>;
  /** Resolves when `test` holds for the output, or rejects after `timeoutMs` naming `what`. */
  until(test: (out: string) => boolean, what: string, timeoutMs?: number): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Ends every process started here that is still running (after a failed test). */
export function killAll(): void {
  for (const child of running) child.kill("SIGKILL");
  running.clear();
}

function track(child: ChildProcess): Proc {
  running.add(child);
  child.on("close", () => running.delete(child));
  let out = "";
  let err = "";
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const waiter of [...waiters]) waiter();
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
    notify();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8");
    notify();
  });
  const exited = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)));
  return {
    child,
    out: () => out,
    err: () => err,
    exited,
    until: (test, what, timeoutMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!test(out)) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${what}; the output so far:\n${out}\n${err}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        void exited.then(() => {
          if (!waiters.has(check)) return;
          cleanup();
          if (test(out)) resolve();
          else reject(new Error(`the process ended before ${what}; the output:\n${out}\n${err}`));
        });
        check();
      }),
  };
}

/** A port on loopback that nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Quotes a word for sh. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs `node cli args…` in a pseudo-terminal 80 columns wide (as `script -qfec` gives one),
 * with `env` added to a clean environment (no NO_COLOR or FORCE_COLOR inherited).
 */
export function inTerminal(
  cli: string,
  args: readonly string[],
  env: Record<string, string> = {},
  options: { cwd?: string } = {},
): Proc {
  return inTerminalShell(`exec ${[process.execPath, cli, ...args].map(shellQuote).join(" ")}`, env, options);
}

/** Runs a shell command line in a pseudo-terminal 80 columns wide (see {@link inTerminal}). */
export function inTerminalShell(
  command: string,
  env: Record<string, string> = {},
  options: { cwd?: string } = {},
): Proc {
  const child = spawn("script", ["-qfec", `stty cols 80 rows 40; ${command}`, "/dev/null"], {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/",
      TERM: "xterm-256color",
      COLUMNS: "80",
      ...env,
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  return track(child);
}

/** Runs `node cli args…` with stdout and stderr as pipes (as a script does). */
export function inPipe(cli: string, args: readonly string[], env: Record<string, string> = {}, stdin?: string): Proc {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  if (stdin !== undefined) child.stdin!.end(stdin);
  else child.stdin!.end();
  return track(child);
}

// eslint-disable-next-line no-control-regex
const CSI = /\x1b\[([0-9;?]*)([A-Za-z])/y;

/**
 * What a terminal shows after `raw`: lines as a screen holds them, colours dropped. Enough of
 * a terminal for this CLI's output: text, `\r`, `\n`, erase-line (`ESC[2K`, `ESC[K`) and SGR.
 * `script` turns each `\n` into `\r\n`; both are handled.
 */
export function screen(raw: string): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  for (let i = 0; i < raw.length;) {
    const ch = raw[i]!;
    if (ch === "\x1b") {
      CSI.lastIndex = i;
      const m = CSI.exec(raw);
      if (m) {
        if (m[2] === "K") {
          const mode = m[1] === "" ? "0" : m[1];
          if (mode === "2") lines[row] = [];
          else if (mode === "0") lines[row]!.length = Math.min(lines[row]!.length, col);
        }
        i += m[0].length;
        continue;
      }
    }
    i++;
    if (ch === "\r") col = 0;
    else if (ch === "\n") {
      row++;
      col = 0;
      lines[row] ??= [];
    } else {
      const line = lines[row]!;
      while (line.length < col) line.push(" ");
      line[col++] = ch;
    }
  }
  return lines.map((l) => l.join("").trimEnd());
}
