#!/usr/bin/env node
// npm run bench:limits — what a code-less attacker can do to the founder at its default limits,
// measured against the reference server's command in its own process (a fresh data directory),
// from many source addresses (127.22.x.y: all of 127.0.0.0/8 is this machine's), and an honest
// machine timed while it happens. Four parts, each printed against its goal:
//
//   flood   KE1s for selectors that name no code, from FLOOD_ADDRESSES addresses, exchanges left
//           waiting; an honest `check` (the real joiner) timed alone and during the flood.
//   bodies  BODY_CONNECTIONS requests to POST /v1/join/pake declaring just under 1 MiB, their
//           bodies held open; the founder's resident memory before and while they are held.
//   sweep   every selector (1,024) × 10 KE1s, from SWEEP_ADDRESSES addresses, with 5 live codes;
//           how fast the codes burn, and a batch of BATCH machines registering while it runs.
//   ipv6    (root: a network namespace) calls from IPV6_ADDRESSES addresses of one /64, counted
//           against the per-address limit.
//
// BENCH_ROOT names the tree whose reference server is measured (default this one), so the same
// client measures an older founder: BENCH_ROOT=/path/to/old/checkout npm run bench:limits.
// BENCH_PARTS picks parts (default flood,bodies,sweep,ipv6).
import { spawn, type ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { fileURLToPath } from "node:url";
import { CROCKFORD_ALPHABET } from "../src/core/base32.js";
import { parseJoinUrl } from "../src/core/join-url.js";
import { createMachineIdentity, type MachineIdentity } from "../src/node/identity.js";
import { checkJoinCode, registerMachine } from "../src/node/join-calls.js";
import { startLogin } from "../src/node/opaque.js";
import { RawConnection } from "../test/reference-server/raw-ke1.js";

const self = fileURLToPath(import.meta.url);
const here = join(self, "..", "..");
const root = process.env.BENCH_ROOT ?? here;
const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const log = (line: string): void => void process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (kib: number) => (kib / 1024).toFixed(0);
interface Minted {
  url: string;
  joinCode: { id: string };
}
interface CodeRow {
  id: string;
  state: string;
  attempts?: number;
}
const mint = (f: Founder) => f.admin<Minted>("POST", "/v1/admin/cluster/join-codes", {});
const codes = async (f: Founder) => (await f.admin<{ items: CodeRow[] }>("GET", "/v1/admin/cluster/join-codes")).items;
const SELECTORS = [...CROCKFORD_ALPHABET].flatMap((a) => [...CROCKFORD_ALPHABET].map((b) => a + b));

// ------------------------------------------------------------------ the founder

interface Founder {
  child: ChildProcess;
  adminUrl: string;
  joinHost: string;
  joinPort: number;
  token: string;
  /** Resident memory now, KiB. */
  rssKiB(): number;
  admin<T>(method: string, path: string, body?: unknown): Promise<T>;
  stop(): Promise<void>;
}

async function startFounder(extraEnv: Record<string, string> = {}, joinHost = "127.0.0.1"): Promise<Founder> {
  const dataDir = mkdtempSync(join(tmpdir(), "stratum-bench-limits-"));
  const child = spawn(process.execPath, ["--import", "tsx", "examples/reference-server/main.ts"], {
    cwd: root,
    env: {
      ...process.env,
      STRATUM_DATA_DIR: dataDir,
      STRATUM_ADMIN_ADDR: "127.0.0.1:0",
      STRATUM_JOIN_ADDR: `${joinHost.includes(":") ? `[${joinHost}]` : joinHost}:0`,
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out = (out + d).slice(-200_000)));
  child.stderr!.on("data", (d) => (out = (out + d).slice(-200_000)));
  for (let i = 0; !/admin token .*\n/.test(out); i++) {
    if (child.exitCode !== null || i > 600) throw new Error(`the founder did not start: ${out}`);
    await sleep(50);
  }
  const adminUrl = /admin API\s+(\S+)/.exec(out)![1]!;
  const joinPort = Number(/join listener\s+\[?[0-9a-f.:]+\]?:(\d+)/.exec(out)![1]);
  const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  return {
    child,
    adminUrl,
    joinHost,
    joinPort,
    token,
    rssKiB: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]),
    admin: async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const response = await fetch(`${adminUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return (await response.json()) as T;
    },
    stop: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ------------------------------------------------------------------ a bare HTTP/1.1 client

/** One keep-alive TLS connection from `localAddress` (test/reference-server/raw-ke1.ts), one request at a time. */
async function raw(f: Founder, localAddress: string, identity: MachineIdentity) {
  const connection = await RawConnection.open({ host: f.joinHost, port: f.joinPort, identity, localAddress });
  let closed = false;
  connection.socket.once("close", () => (closed = true));
  return {
    get closed() {
      return closed;
    },
    /** The status and `Retry-After` of the answer (status 0: the connection went). */
    async request(path: string, body: string): Promise<{ status: number; retryAfter: number }> {
      const [answer] = closed ? [] : await connection.post(path, [body]);
      return answer ? { status: answer.status, retryAfter: answer.retryAfter ?? 0 } : { status: 0, retryAfter: 0 };
    },
    close: () => connection.close(),
  };
}

const address = (i: number) => `127.22.${Math.floor(i / 250)}.${(i % 250) + 1}`;

async function ke1s(n: number): Promise<string[]> {
  return Promise.all(Array.from({ length: n }, async () => (await startLogin("0000000000A")).ke1));
}

// ------------------------------------------------------------------ flood

async function honestCheck(f: Founder, url: string): Promise<{ ms: number; ok: boolean; retries: number }> {
  const started = performance.now();
  let retries = 0;
  try {
    await checkJoinCode({ url, release: "0.6.0", timeoutMs: 45_000, onRetry: () => void retries++ });
    return { ms: performance.now() - started, ok: true, retries };
  } catch {
    return { ms: performance.now() - started, ok: false, retries };
  }
}

async function flood(): Promise<void> {
  const addresses = env("FLOOD_ADDRESSES", 100);
  // Enough waiting exchanges to fill every budget of the selectors with no code (10 each), or
  // the old founder-wide cap of 10,000; the honest check starts once they are held.
  const target = env("FLOOD_EXCHANGES", 10_100);
  const maxSeconds = env("FLOOD_SECONDS", 120);
  // Exchanges that live 150 s: a flood slower than 10,000 a minute still fills what it can.
  const f = await startFounder({ STRATUM_PAKE_SESSION_SECONDS: "150" });
  try {
    const minted = await mint(f);
    const live = parseJoinUrl(minted.url).code.selector;
    const alone = await honestCheck(f, minted.url);
    const unknown = SELECTORS.filter((s) => s !== live);
    const identity = await createMachineIdentity();
    const pool = await ke1s(8);
    let answered = 0;
    let refused = 0;
    let next = 0;
    let stop = false;
    const started = Date.now();
    const rssBefore = f.rssKiB();
    const flooders = Array.from({ length: addresses }, async (_, i) => {
      const c = await raw(f, address(i), identity);
      while (!stop && !c.closed) {
        const selector = unknown[next++ % unknown.length]!;
        const answer = await c.request("/v1/join/pake", JSON.stringify({ selector, ke1: pool[next % pool.length] }));
        if (answer.status === 200) answered++;
        else {
          // An attacker does not wait as told: it comes back a moment later.
          refused++;
          await sleep(100);
        }
      }
      return c;
    });
    while (answered < target && Date.now() - started < maxSeconds * 1000) await sleep(200);
    const held = answered;
    const heldAfter = (Date.now() - started) / 1000;
    const during = await honestCheck(f, minted.url);
    const rssPeak = f.rssKiB();
    stop = true;
    for (const c of await Promise.all(flooders)) c.close();
    log(
      `flood: KE1s for selectors with no code from ${addresses} addresses: ${held} exchanges answered in ${heldAfter.toFixed(1)} s and left waiting, ${refused} KE1s refused in all; founder RSS ${mib(rssBefore)} → ${mib(rssPeak)} MiB`,
    );
    log(
      `  honest check alone ${(alone.ms / 1000).toFixed(1)} s; then, during the flood, ${(during.ms / 1000).toFixed(1)} s with ${during.retries} waits, ${during.ok ? "ok" : "FAILED at its 45 s deadline"} (goal: ok, ≤ 2× alone and ≤ 5 s) ${during.ok && during.ms <= Math.max(5000, 2 * alone.ms) ? "✓" : "✗"}`,
    );
  } finally {
    await f.stop();
  }
}

// ------------------------------------------------------------------ bodies

async function bodies(): Promise<void> {
  const connections = env("BODY_CONNECTIONS", 400);
  const f = await startFounder();
  try {
    await mint(f);
    const identity = await createMachineIdentity();
    await sleep(1000);
    const before = f.rssKiB();
    const declared = 1024 * 1024 - 16;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const sockets = await Promise.all(
      Array.from({ length: connections }, async (_, i) => {
        const socket = tlsConnect({
          host: f.joinHost,
          port: f.joinPort,
          ...({ localAddress: address(i % 100) } as object),
          cert: identity.certPem,
          key: identity.keyPem,
          rejectUnauthorized: false,
        });
        socket.on("error", () => {});
        await new Promise((resolve) => socket.once("secureConnect", resolve));
        socket.write(
          `POST /v1/join/pake HTTP/1.1\r\nHost: founder\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"selector":"00","ke1":"`,
        );
        // All but the last few bytes: the founder holds what it read, waiting for the rest.
        for (let sent = 0; sent + chunk.length < declared - 64 && !socket.destroyed; sent += chunk.length)
          await new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
        return socket;
      }),
    );
    await sleep(3000);
    const held = f.rssKiB();
    const open = sockets.filter((s) => !s.destroyed).length;
    for (const s of sockets) s.destroy();
    const growth = (held - before) / 1024;
    log(
      `bodies: ${connections} requests declaring ${declared} bytes to POST /v1/join/pake, ${open} still open: founder RSS ${mib(before)} → ${mib(held)} MiB (+${growth.toFixed(0)} MiB; goal ≤ 64 MiB) ${growth <= 64 ? "✓" : "✗"}`,
    );
  } finally {
    await f.stop();
  }
}

// ------------------------------------------------------------------ sweep

async function sweep(): Promise<void> {
  const addresses = env("SWEEP_ADDRESSES", 100);
  const seconds = env("SWEEP_SECONDS", 120);
  const batch = env("BATCH", 8);
  const f = await startFounder();
  try {
    const minted = await Promise.all(Array.from({ length: 5 }, () => mint(f)));
    const ids = new Set(minted.map((m) => m.joinCode.id));
    const identity = await createMachineIdentity();
    const pool = await ke1s(8);
    const started = Date.now();
    const until = started + seconds * 1000;
    let allBurnedAt: number | undefined;
    const work = SELECTORS.flatMap((s) => Array(10).fill(s) as string[]);
    let next = 0;
    const sweepers = Array.from({ length: addresses }, async (_, i) => {
      while (Date.now() < until && allBurnedAt === undefined && next < work.length) {
        const c = await raw(f, address(i), identity).catch(() => undefined);
        if (!c) continue;
        // Ten KE1s on a connection, then it closes: each exchange ends unproven at once.
        for (let k = 0; k < 10 && next < work.length && !c.closed; k++) {
          const selector = work[next++]!;
          const answer = await c.request("/v1/join/pake", JSON.stringify({ selector, ke1: pool[k % pool.length] }));
          if (answer.status === 503 || answer.status === 429) {
            next--; // the sweep comes back for it
            work[next] = selector;
            await sleep(Math.max(1, answer.retryAfter) * 1000);
          }
        }
        c.close();
      }
    });
    // The batch starts while the sweep runs, with the first code.
    await sleep(5000);
    const batchStart = performance.now();
    const failures: string[] = [];
    const registering = Promise.all(
      Array.from({ length: batch }, async (_, i) =>
        registerMachine({
          url: minted[0]!.url,
          identity: await createMachineIdentity(),
          release: "0.6.0",
          hostname: `batch-${i}`,
        }).then(
          () => performance.now() - batchStart,
          (error: unknown) => void failures.push((error as { code?: string }).code ?? String(error)),
        ),
      ),
    );
    const watcher = (async () => {
      while (Date.now() < until && allBurnedAt === undefined) {
        const ours = (await codes(f)).filter((c) => ids.has(c.id));
        if (ours.every((c) => c.state === "revoked")) allBurnedAt = Date.now();
        await sleep(1000);
      }
    })();
    const times = await registering;
    await Promise.all([...sweepers, watcher]);
    const ours = (await codes(f)).filter((c) => ids.has(c.id));
    const attempts = ours.reduce((sum, c) => sum + (c.attempts ?? 0), 0);
    const burned = ours.filter((c) => c.state === "revoked").length;
    const elapsedMin = ((allBurnedAt ?? Date.now()) - started) / 60_000;
    const projectedMin = allBurnedAt ? elapsedMin : (50 / Math.max(1, attempts)) * elapsedMin;
    // The founder-wide rate's promise: after its burst, no more attempts than its refill allows.
    const burst = env("BENCH_LIVE_BURST", 5);
    const perMinute = env("BENCH_LIVE_PER_MINUTE", 10);
    const allowed = burst + perMinute * elapsedMin;
    log(
      `sweep: 1,024 selectors × 10 KE1s from ${addresses} addresses, 5 live codes: ${burned} burned, ${attempts} attempts counted in ${(elapsedMin * 60).toFixed(0)} s (${(attempts / elapsedMin).toFixed(1)} a minute)${allBurnedAt ? "" : ", stopped"}; all 5 burned ${allBurnedAt ? `in ${(elapsedMin * 60).toFixed(0)} s` : `in ≈ ${projectedMin.toFixed(1)} min at that rate`}`,
    );
    log(
      `  goal: at most the rate's ${burst} + ${perMinute} a minute (${allowed.toFixed(1)} in that time) ${attempts <= allowed ? "✓" : "✗"}`,
    );
    const done = times.filter((t): t is number => t !== undefined);
    const last = done.length ? Math.max(...done) : Infinity;
    log(
      `  a batch of ${batch} registering during the sweep with the first code (${ours.find((c) => c.id === minted[0]!.joinCode.id)?.state ?? "?"} now): ${done.length}/${batch} registered${done.length ? `, the last after ${(last / 1000).toFixed(1)} s` : ""}${failures.length ? `; failed: ${[...new Set(failures)].join(", ")}` : ""} (goal: all, within the joiner's 120 s deadline) ${done.length === batch && last <= 120_000 ? "✓" : "✗"}`,
    );
  } finally {
    await f.stop();
  }
}

// ------------------------------------------------------------------ ipv6

const V6_PREFIX = "fd00:22::";

/** Inside the namespace: a founder on fd00:22::1, calls from many addresses of fd00:22::/64. */
async function ipv6Inner(): Promise<void> {
  const addresses = env("IPV6_ADDRESSES", 200);
  const f = await startFounder({}, `${V6_PREFIX}1`);
  try {
    await mint(f);
    const identity = await createMachineIdentity();
    let admitted = 0;
    let limited = 0;
    await Promise.all(
      Array.from({ length: addresses }, async (_, i) => {
        const c = await raw(f, `${V6_PREFIX}${(i + 2).toString(16)}:${((i * 7919) % 65535).toString(16)}`, identity);
        for (let k = 0; k < 5; k++) {
          const answer = await c.request("/v1/join/pake", "{}");
          if (answer.status === 429) limited++;
          else if (answer.status !== 0) admitted++;
        }
        c.close();
      }),
    );
    process.stdout.write(`${JSON.stringify({ addresses, admitted, limited })}\n`);
  } finally {
    await f.stop();
  }
}

async function ipv6(): Promise<void> {
  if (process.getuid?.() !== 0) {
    log("ipv6: not measured: a network namespace needs root (run as root to measure it)");
    return;
  }
  const ns = `s22-bench-${process.pid}`;
  execFileSync("ip", ["netns", "add", ns]);
  try {
    execFileSync("ip", [
      "netns",
      "exec",
      ns,
      "sh",
      "-c",
      "ip link set lo up && sysctl -q -w net.ipv6.ip_nonlocal_bind=1 && ip -6 route add local fd00:22::/64 dev lo",
    ]);
    const out = execFileSync("ip", ["netns", "exec", ns, process.execPath, "--import", "tsx", self, "--ipv6-inner"], {
      encoding: "utf8",
      env: process.env,
      cwd: here,
    });
    const { addresses, admitted, limited } = JSON.parse(out.trim().split("\n").at(-1)!);
    log(
      `ipv6: ${addresses} addresses of one /64, 5 calls each: ${admitted} admitted, ${limited} refused 429 (goal: ≤ 120 admitted, the per-address limit) ${admitted <= 120 ? "✓" : "✗"}`,
    );
  } finally {
    execFileSync("ip", ["netns", "del", ns]);
  }
}

// ------------------------------------------------------------------ main

if (process.argv.includes("--ipv6-inner")) {
  await ipv6Inner();
} else {
  const parts = (process.env.BENCH_PARTS ?? "flood,bodies,sweep,ipv6").split(",");
  log(`bench:limits against the reference server of ${root}`);
  const runs: Record<string, () => Promise<void>> = { flood, bodies, sweep, ipv6 };
  for (const part of parts) await runs[part]!();
}
process.exit(0);
