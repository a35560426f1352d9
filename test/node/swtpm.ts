/**
 * A software TPM per test (Debian's swtpm, with tpm2-tools and libtss2-tcti-swtpm0 to reach it):
 * its own state directory, so two of them are two machines' TPMs, on two free loopback ports
 * (commands on P, control on P+1, as the swtpm TCTI expects).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Swtpm {
  /** The TCTI of tpm2-tools, for TPM2TOOLS_TCTI or `tpm.tcti`. */
  tcti: string;
  port: number;
  /** The swtpm process's id (a benchmark reads its CPU time). */
  pid: number;
  stop(): Promise<void>;
}

async function portsFree(port: number): Promise<boolean> {
  const tryOne = (p: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(false));
      server.listen(p, "127.0.0.1", () => server.close(() => resolve(true)));
    });
  return (await tryOne(port)) && (await tryOne(port + 1));
}

async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Starts a fresh software TPM (a new state: a new owner seed, so another machine's TPM). */
export async function startSwtpm(): Promise<Swtpm> {
  const state = mkdtempSync(join(tmpdir(), "stratum-swtpm-"));
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    if (!(await portsFree(port))) continue;
    const child: ChildProcess = spawn(
      "swtpm",
      [
        "socket",
        "--tpm2",
        "--tpmstate",
        `dir=${state}`,
        "--server",
        `type=tcp,port=${port},bindaddr=127.0.0.1`,
        "--ctrl",
        `type=tcp,port=${port + 1},bindaddr=127.0.0.1`,
        "--flags",
        "not-need-init,startup-clear",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    let spawnError: Error | undefined;
    child.once("error", (error) => (spawnError = error));
    const until = Date.now() + 5_000;
    let up = false;
    while (Date.now() < until && child.exitCode === null && !spawnError) {
      if (await answers(port)) {
        up = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    if (spawnError) throw new Error(`swtpm cannot be started (install swtpm, swtpm-tools): ${spawnError.message}`);
    if (!up) {
      child.kill("SIGKILL");
      await exited;
      if (attempt < 19) continue;
      throw new Error(`swtpm did not start: ${stderr}`);
    }
    return {
      tcti: `swtpm:host=127.0.0.1,port=${port}`,
      port,
      pid: child.pid!,
      stop: async () => {
        if (child.exitCode === null) {
          child.kill("SIGTERM");
          await exited;
        }
        rmSync(state, { recursive: true, force: true });
      },
    };
  }
  throw new Error("no free ports for swtpm");
}
