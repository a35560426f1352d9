#!/usr/bin/env node
// npm run bench:batch — a batch of machines joining with one code at once: the reference
// server in its own process (a fresh data directory, the per-address and waiting limits raised,
// since every machine here is 127.0.0.1), N machines registering with the real joiner
// (`registerMachine`) from this one process. Prints, per run: the wall time until the last is
// registered, the server's CPU time (user + system) and its peak RSS while it served them (from
// /proc/<pid>/status VmHWM, and `process.resourceUsage()` as the server reports it), how many
// 503s the joiners waited out (`JOIN_CODE_BUSY`: more machines than the code has slots), and
// the code's attempts afterwards (0: a batch never burns its code).
//
// The joiners' Argon2 (about 0.3 s each on a fast core) runs in this one process, one after
// another, so the wall time here is mostly theirs: N real machines would run them side by side.
// The server's CPU time is what the founder pays for the batch.
//
// Env: BENCH_MACHINES (default 64), BENCH_RUNS (default 3; each run a fresh server).
// Run with: npm run bench:batch
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const self = fileURLToPath(import.meta.url);
const root = join(self, "..", "..");

function log(line) {
  process.stdout.write(`${line}\n`);
}

// ------------------------------------------------------------------ the server's process

/**
 * `--serve <dataDir>`: starts the reference server, prints where it listens as one JSON line,
 * then answers each `usage` line on stdin with its resource usage, and stops on `stop`.
 */
async function serve(dataDir) {
  const { startReferenceServer } = await import("../examples/reference-server/server.ts");
  const server = await startReferenceServer({
    dataDir,
    adminAddr: "127.0.0.1:0",
    joinAddr: "127.0.0.1:0",
    log: () => {},
    limits: { perAddressCalls: 1_000_000, perAddressRegistrations: 1_000_000, maxWaiting: 1_000_000 },
  });
  const usage = () => {
    const u = process.resourceUsage();
    return { cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000, maxRssKiB: u.maxRSS };
  };
  process.stdout.write(
    `${JSON.stringify({ adminUrl: server.adminUrl, token: server.adminToken, endpoint: server.joinEndpoint })}\n`,
  );
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === "usage") process.stdout.write(`${JSON.stringify(usage())}\n`);
    if (line === "stop") break;
  }
  await server.close();
  process.exit(0);
}

// ------------------------------------------------------------------ the joiners' process

/** A started server process: a line-based conversation over its stdin and stdout. */
async function startServer(dataDir) {
  const child = spawn(process.execPath, ["--import", "tsx", self, "--serve", dataDir], {
    cwd: root,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const { value, done } = await lines.next();
    if (done) throw new Error("the server process ended");
    return JSON.parse(value);
  };
  const started = await next();
  return {
    ...started,
    pid: child.pid,
    usage: async () => {
      child.stdin.write("usage\n");
      return next();
    },
    stop: async () => {
      child.stdin.write("stop\n");
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

/** A /proc/<pid>/status field in KiB (VmHWM: peak resident set; VmRSS: now); undefined off Linux. */
function procKiB(pid, field) {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

async function run(machines) {
  const { createAdminClient } = await import("../src/index.ts");
  const { createMachineIdentity, registerMachine } = await import("../src/node/index.ts");
  const dataDir = mkdtempSync(join(tmpdir(), "stratum-bench-batch-"));
  const server = await startServer(dataDir);
  try {
    const admin = createAdminClient({ baseUrl: server.adminUrl, token: server.token });
    const minted = await admin.mintJoinCode({ endpoint: server.endpoint });
    const identities = await Promise.all(Array.from({ length: machines }, () => createMachineIdentity()));
    const before = await server.usage();
    const rssBefore = procKiB(server.pid, "VmRSS");
    let waits = 0;
    const waited = new Set();
    const joinersCpu = process.cpuUsage();
    const started = performance.now();
    const results = await Promise.all(
      identities.map((identity, i) =>
        registerMachine({
          url: minted.url,
          identity,
          release: "0.6.0",
          hostname: `rack-${i}`,
          // One process runs every joiner's Argon2 and TLS in turn: far slower than N machines.
          timeoutMs: 900_000,
          connectTimeoutMs: 600_000,
          onRetry: (error) => {
            if (error.code === "JOIN_CODE_BUSY") {
              waits++;
              waited.add(i);
            }
          },
        }),
      ),
    );
    const wallMs = performance.now() - started;
    const { user, system } = process.cpuUsage(joinersCpu);
    const after = await server.usage();
    const peakKiB = procKiB(server.pid, "VmHWM");
    const code = (await admin.listJoinCodes()).items.find((c) => c.id === minted.joinCode.id);
    if (!results.every((r) => r.created)) throw new Error("a machine was not registered anew");
    return {
      wallMs,
      joinersCpuMs: (user + system) / 1000,
      cpuMs: after.cpuMs - before.cpuMs,
      peakKiB: peakKiB ?? after.maxRssKiB,
      reportedMaxRssKiB: after.maxRssKiB,
      rssBeforeKiB: rssBefore,
      waits,
      machinesThatWaited: waited.size,
      attempts: code?.attempts,
      state: code?.state,
    };
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const machines = Number(process.env.BENCH_MACHINES ?? 64);
  const runs = Number(process.env.BENCH_RUNS ?? 3);
  log(`bench:batch — ${machines} machines, one code, at once; ${runs} run(s), Node ${process.version}`);
  const results = [];
  for (let i = 0; i < runs; i++) {
    const r = await run(machines);
    results.push(r);
    const mib = (kib) => (kib === undefined ? "?" : (kib / 1024).toFixed(1));
    log(
      `  run ${i + 1}: wall ${(r.wallMs / 1000).toFixed(1)} s (the joiners' process: CPU ${(r.joinersCpuMs / 1000).toFixed(1)} s), server CPU ${(r.cpuMs / 1000).toFixed(2)} s ` +
        `(${(r.cpuMs / machines).toFixed(1)} ms per machine), server peak RSS ${mib(r.peakKiB)} MiB ` +
        `(reported maxRSS ${mib(r.reportedMaxRssKiB)} MiB; ${mib(r.rssBeforeKiB)} MiB before the batch), ` +
        `503 JOIN_CODE_BUSY waited out: ${r.waits} by ${r.machinesThatWaited} machines, ` +
        `code attempts ${r.attempts} (${r.state})`,
    );
    if (r.attempts !== 0 || r.state !== "live") throw new Error("the batch spent the code's attempts");
  }
  const sorted = (key) => results.map((r) => r[key]).sort((a, b) => a - b);
  const span = (key, unit, scale, digits) => {
    const xs = sorted(key).map((x) => (x / scale).toFixed(digits) + unit);
    return `best ${xs[0]}, median ${xs[xs.length >> 1]}, worst ${xs.at(-1)}`;
  };
  log(`  wall:            ${span("wallMs", " s", 1000, 1)}`);
  log(`  server CPU:      ${span("cpuMs", " s", 1000, 2)}`);
  log(`  server peak RSS: ${span("peakKiB", " MiB", 1024, 1)}`);
  log(`  503s waited out: ${span("waits", "", 1, 0)}`);
}

if (process.argv[2] === "--serve") await serve(process.argv[3]);
else await main();
