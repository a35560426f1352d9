/**
 * The reference server as its command runs it: `tsx examples/reference-server/main.ts` in a
 * process of its own, configured by environment, on loopback ports the system picks.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { eventually } from "../helpers/eventually.js";

const root = new URL("../../", import.meta.url).pathname;

/** A started `main.ts`: its process, everything it printed so far, and where it listens. */
export interface MainProcess {
  child: ChildProcess;
  /** stdout and stderr so far, interleaved. */
  output(): string;
  adminUrl: string;
  joinPort: number;
}

/**
 * Starts `main.ts` on `dataDir` (`env` added to the environment); resolves once it has printed
 * its admin token. With `netns`, it runs inside that network namespace (`ip netns exec`).
 */
export async function startMainProcess(
  dataDir: string,
  env: Record<string, string> = {},
  options: { netns?: string } = {},
): Promise<MainProcess> {
  const command = [process.execPath, "--import", "tsx", "examples/reference-server/main.ts"];
  const [file, ...args] = options.netns ? ["ip", "netns", "exec", options.netns, ...command] : command;
  const child = spawn(file!, args, {
    cwd: root,
    env: {
      ...process.env,
      STRATUM_DATA_DIR: dataDir,
      STRATUM_ADMIN_ADDR: "127.0.0.1:0",
      STRATUM_JOIN_ADDR: "127.0.0.1:0",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  try {
    await eventually(
      () => {
        if (child.exitCode !== null) throw new Error(`the reference server exited: ${out}`);
        return /admin token .*\n/.test(out);
      },
      30_000,
      "the admin token line",
    );
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return {
    child,
    output: () => out,
    adminUrl: /admin API\s+(\S+)/.exec(out)![1]!,
    joinPort: Number(/join listener\s+\S+:(\d+)/.exec(out)![1]),
  };
}
