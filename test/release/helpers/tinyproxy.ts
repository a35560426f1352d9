/**
 * A real HTTP proxy for the proxy tests: Debian's tinyproxy, started in the foreground with a
 * config written to a temp directory (127.0.0.1 only, a free port, CONNECT allowed to the
 * given ports, Basic credentials when asked), its log read back by the tests.
 *
 * tinyproxy is Debian's package of that name, which `npm test` installs as root
 * (scripts/test-machine.mjs); without it the proxy tests fail, saying how to install it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expectInstalled } from "../../machine/tools.js";

/** A running tinyproxy. */
export interface Tinyproxy {
  /** `http://127.0.0.1:PORT` (no credentials). */
  url: string;
  port: number;
  /** The log so far. */
  log(): Promise<string>;
  /** The `CONNECT host:port` requests in the log so far. */
  connects(): Promise<string[]>;
  close(): Promise<void>;
}

/** Options of {@link startTinyproxy}. */
export interface TinyproxyOptions {
  /** Ports CONNECT may reach (every other is refused with 403). */
  connectPorts: number[];
  /** Require these Basic credentials (407 without them). */
  basicAuth?: { user: string; password: string };
}

/** A port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts tinyproxy in the foreground and resolves once it accepts connections. */
export async function startTinyproxy(options: TinyproxyOptions): Promise<Tinyproxy> {
  const tinyproxy = expectInstalled("tinyproxy")!;
  const dir = await mkdtemp(join(tmpdir(), "stratum-tinyproxy-"));
  const logFile = join(dir, "tinyproxy.log");
  const port = await freePort();
  const lines = [
    `Port ${port}`,
    "Listen 127.0.0.1",
    "Timeout 60",
    "MaxClients 64",
    "Allow 127.0.0.1",
    ...options.connectPorts.map((p) => `ConnectPort ${p}`),
    `LogFile "${logFile}"`,
    "LogLevel Info",
    ...(options.basicAuth ? [`BasicAuth ${options.basicAuth.user} ${options.basicAuth.password}`] : []),
  ];
  const conf = join(dir, "tinyproxy.conf");
  await writeFile(conf, `${lines.join("\n")}\n`);
  const child: ChildProcess = spawn(tinyproxy, ["-d", "-c", conf], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d) => (stderr += d));
  const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
  const log = () => readFile(logFile, "utf8").catch(() => "");
  const close = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  for (let i = 0; !(await log()).includes("Accepting connections"); i++) {
    const failed = await Promise.race([spawnError, new Promise<undefined>((r) => setTimeout(r, 50, undefined))]);
    if (failed || child.exitCode !== null || i > 200) {
      await close();
      throw new Error(`tinyproxy did not start (${failed ? failed.message : `exit ${child.exitCode}`}): ${stderr}`);
    }
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log,
    async connects() {
      return [...(await log()).matchAll(/Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g)].map((m) => m[1]!);
    },
    close,
  };
}
