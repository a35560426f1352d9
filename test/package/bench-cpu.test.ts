// The CPU accounting `npm run bench:release` prints next to its wall times (scripts/bench-cpu.mjs):
// a command's CPU, a server's processes' CPU, and what SHA-256 costs. Linux only (/proc).
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { processGroupCpu, runMeasured, sha256CpuSeconds } from "../../scripts/bench-cpu.mjs";

interface Measured {
  status: number | null;
  stdout: Buffer;
  seconds: number;
  cpu: number;
}
const measure = runMeasured as (cmd: string, args: string[]) => Measured;
const groupCpu = processGroupCpu as (pid: number) => number;
const shaCpu = sha256CpuSeconds as (bytes: number) => number;

/** Code for `node -e` that spins for `ms` of CPU (user + system); no single quote, for `sh -c '…'`. */
const spin = (ms: number): string =>
  `const used = () => { const u = process.cpuUsage(); return u.user + u.system; }; const end = used() + ${ms * 1000}; while (used() < end);`;

describe.runIf(process.platform === "linux")("benchmark CPU accounting", () => {
  it("measures a command's CPU, its own children's included, next to its wall time", () => {
    // a shell that runs two spinning nodes one after the other: their CPU adds up
    const node = `"${process.execPath}" -e '${spin(300)}'`;
    const result = measure("sh", ["-c", `${node}; ${node}`]);
    expect(result.status).toBe(0);
    expect(result.cpu).toBeGreaterThanOrEqual(0.55);
    // one thread at a time: never more CPU than wall time (10 ms ticks of slack)
    expect(result.cpu).toBeLessThanOrEqual(result.seconds + 0.05);
  });

  it("keeps the command's output and its exit status", () => {
    const ok = measure("sh", ["-c", "printf hello"]);
    expect(ok.stdout.toString()).toBe("hello");
    expect(ok.status).toBe(0);
    const failed = measure("sh", ["-c", "exit 3"]);
    expect(failed.status).toBe(3);
  });

  it("counts a parent's live children (a server's workers), not only the parent", async () => {
    // an idle parent whose child spins, says so and stays: the group's CPU is mostly the child's
    const parent = spawn(process.execPath, [
      "-e",
      `const { spawn } = require("node:child_process");
       const child = spawn(process.execPath, ["-e", ${JSON.stringify(spin(300))} + "; console.log(1); setTimeout(() => {}, 10000)"], { stdio: "inherit" });
       process.on("SIGTERM", () => { child.kill(); process.exit(0); });`,
    ]);
    try {
      const before = groupCpu(parent.pid!);
      await new Promise<void>((resolve) => parent.stdout.once("data", () => resolve()));
      expect(groupCpu(parent.pid!) - before).toBeGreaterThanOrEqual(0.25);
    } finally {
      parent.kill("SIGTERM");
    }
  });

  it("prices SHA-256 in proportion to the bytes", () => {
    const small = shaCpu(64 * 1024 * 1024);
    const large = shaCpu(4 * 64 * 1024 * 1024);
    expect(small).toBeGreaterThan(0);
    // one sample of 256 MiB at most, scaled: four times the bytes, about four times the CPU
    expect(large / small).toBeGreaterThan(2);
    expect(large / small).toBeLessThan(8);
  });
});
