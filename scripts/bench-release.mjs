#!/usr/bin/env node
// Benchmark of the release downloader (`npm run bench:release`), as a user meets it: a signed
// release of one large file served by nginx (Debian's nginx-light: TLS 1.3, `sendfile on`, what
// real mirrors run) on loopback, fetched by
//   1. the SDK exactly as a user imports it: the packed package installed in a fresh project
//      (scripts/packed-project.mjs), `downloadRelease` of `@stratum/join/node` with
//      `mirror: { ca }`, in a process of its own (node start, import, manifest verify, download,
//      SHA-256, fsync, rename);
//   2. `curl -o` (no verification);
//   3. `curl -o` then `sha256sum`;
//   4. `curl -o /dev/null` and a bare Node TLS read (scripts/bench-tls-read.mjs): TLS alone,
//      nothing verified or written, what each client spends at the least;
// interleaved, best of BENCH_RUNS in one run, at each size; then a SIGKILL at half way and a
// resume at the largest size. Prints the figures and the ratios against the goals, and where
// the cores went: each client's CPU and nginx's (user + system) in its fastest run, the least
// wall time that CPU allows on this machine's cores, and how busy the cores were.
//
// Env: BENCH_SIZES_MIB (default "512,1024"; BENCH_SIZE_MIB for one), BENCH_RUNS (default 3),
// BENCH_DIR (default os.tmpdir()), BENCH_MEM (=1: the SDK's memory peaks, on stderr), BENCH_CONNECTIONS (passed as `connections` when set), BENCH_BEFORE_PROJECT
// (another build's packed project, run interleaved as "SDK before"), BENCH_COMPARE_CONNECTIONS
// (e.g. "1,3": this build again with that many connections per file, interleaved), BENCH_PROXY
// (=1: this build again through tinyproxy, Debian's, with HTTPS_PROXY, interleaved),
// BENCH_NODE_ARGS (node flags for the SDK's process, e.g. "--cpu-prof --cpu-prof-dir=DIR").
// Run with: npm run bench:release
import { spawn, spawnSync } from "node:child_process";
import { randomFillSync } from "node:crypto";
import {
  chmodSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { createRequire } from "node:module";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { processGroupCpu, runMeasured, sha256CpuSeconds } from "./bench-cpu.mjs";
import { ensureNginx, startNginx, startTinyproxy } from "./bench-release-nginx.mjs";
import { packedProject } from "./packed-project.mjs";

const MiB = 1024 * 1024;
// BENCH_SIZE_MIB, one size, is the older spelling
const sizes = (process.env.BENCH_SIZES_MIB ?? process.env.BENCH_SIZE_MIB ?? "512,1024").split(",").map(Number);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "stratum-bench-release-"));
// nginx's workers may run as another user: they read the release below this directory
chmodSync(work, 0o755);
const path = "os/blobs/bench";
const TLS_READ = fileURLToPath(new URL("./bench-tls-read.mjs", import.meta.url));

/** Goals, each a ratio within one run on one machine (see docs/measurements.md). */
const GOALS = { inside: 1.0, process: 0.9, sha: 1.5, rssMiB: 150, resumeExtra: MiB };

const log = (line = "") => process.stdout.write(`${line}\n`);
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const rate = (bytes, seconds) => `${(bytes / MiB / seconds).toFixed(0)} MiB/s`;
const mark = (ok) => (ok ? "ok  " : "MISS");

/** Runs a command to completion; its wall and CPU seconds (user + system, children included). */
function sh(cmd, args) {
  const result = runMeasured(cmd, args, { maxBuffer: 16 * MiB });
  if (result.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${result.stderr}`);
  return { seconds: result.seconds, cpu: result.cpu, stdout: result.stdout.toString() };
}

/** Writes back the previous run's dirty pages outside any timing. */
const settle = () => spawnSync("sync");

// The SDK's process, as a user's script: imports the package by name from the fresh project.
const RUNNER = `// written by scripts/bench-release.mjs
const config = JSON.parse(process.argv[2]);
const { readFileSync } = await import("node:fs");
const { downloadRelease } = await import("@stratum/join/node");
const imported = performance.now();
// BENCH_MEM=1: where the peak RSS goes (V8 heap, Buffers outside it), on stderr
const peak = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
const sampler = process.env.BENCH_MEM
  ? setInterval(() => {
      for (const [key, value] of Object.entries(process.memoryUsage())) if (key in peak) peak[key] = Math.max(peak[key], value);
    }, 50)
  : undefined;
const started = performance.now();
const result = await downloadRelease({
  upgrade: { to: config.release, source: config.url },
  mirror: { ca: readFileSync(config.ca, "utf8") },
  destDir: config.destDir,
  trustedKeys: [config.key],
  ...(config.connections ? { connections: config.connections } : {}),
  ...(config.progress ? { onProgress: (p) => process.stdout.write("progress " + p.bytesDone + "\\n") } : {}),
});
const seconds = (performance.now() - started) / 1000;
if (sampler) {
  clearInterval(sampler);
  process.stderr.write("memory peaks: " + Object.entries(peak).map(([k, v]) => k + " " + (v / 1048576).toFixed(0) + " MiB").join(", ") + "\\n");
}
const usage = process.resourceUsage();
process.stdout.write(JSON.stringify({
  seconds,
  importMs: imported,
  bytesFetched: result.bytesFetched,
  maxRssKiB: usage.maxRSS,
  cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
}) + "\\n");
`;

// Loopback only: no proxy the environment names (curl and the SDK both read them), but in the
// run through tinyproxy.
for (const name of [
  "https_proxy",
  "HTTPS_PROXY",
  "http_proxy",
  "HTTP_PROXY",
  "no_proxy",
  "NO_PROXY",
  "all_proxy",
  "ALL_PROXY",
])
  delete process.env[name];

function sdk(project, config, onLine, proxy) {
  return new Promise((done, fail) => {
    const started = performance.now();
    const env = proxy ? { ...process.env, HTTPS_PROXY: proxy } : process.env;
    const child = spawn(
      process.execPath,
      [
        ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(" ") : []),
        join(project, "bench-release-run.mjs"),
        JSON.stringify(config),
      ],
      {
        cwd: project,
        env,
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let buffered = "";
    let last;
    child.stdout.on("data", (d) => {
      buffered += d;
      const lines = buffered.split("\n");
      buffered = lines.pop();
      for (const line of lines) {
        if (line.startsWith("{")) last = JSON.parse(line);
        else onLine?.(line, child);
      }
    });
    child.on("exit", (code, signal) =>
      done({ code, signal, result: last, wall: (performance.now() - started) / 1000 }),
    );
    child.on("error", fail);
  });
}

function makeFile(at, size) {
  mkdirSync(join(at, ".."), { recursive: true });
  const fd = openSync(at, "w");
  const block = Buffer.allocUnsafe(4 * MiB);
  for (let done = 0; done < size; done += block.length) {
    randomFillSync(block);
    writeSync(fd, block, 0, Math.min(block.length, size - done));
  }
  closeSync(fd);
}

let mirror;
let proxy;
// Ctrl-C or a kill: nginx and the temp directory go with the benchmark
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, async () => {
    await mirror?.stop();
    await proxy?.stop();
    rmSync(work, { recursive: true, force: true });
    process.exit(130);
  });
}
try {
  const nginx = ensureNginx(log);
  log(`packing the package (scripts/packed-project.mjs)…`);
  const project = (await packedProject()).dir;
  writeFileSync(join(project, "bench-release-run.mjs"), RUNNER);
  // BENCH_BEFORE_PROJECT: a fresh project with another build of the package installed (made by
  // `node scripts/packed-project.mjs` in a checkout of it), run interleaved with this one
  const variants = [{ name: "SDK", project }];
  // BENCH_PROXY=1: this build again through tinyproxy (HTTPS_PROXY), its CONNECT tunnel to nginx
  if (process.env.BENCH_PROXY) variants.push({ name: "SDK through tinyproxy", project, proxy: true });
  // BENCH_COMPARE_CONNECTIONS: e.g. "1,3": this build again with that many connections per file
  for (const n of (process.env.BENCH_COMPARE_CONNECTIONS ?? "").split(",").filter(Boolean))
    variants.push({ name: `SDK connections ${n}`, project, connections: Number(n) });
  if (process.env.BENCH_BEFORE_PROJECT) {
    writeFileSync(join(process.env.BENCH_BEFORE_PROJECT, "bench-release-run.mjs"), RUNNER);
    variants.push({ name: "SDK before", project: process.env.BENCH_BEFORE_PROJECT });
  }
  const require = createRequire(join(project, "package.json"));
  const { generateReleaseKeyPair, signReleaseDirectory } = await import(
    pathToFileURL(require.resolve("@stratum/join/release")).href
  );
  const key = generateReleaseKeyPair();
  const connections = process.env.BENCH_CONNECTIONS ? Number(process.env.BENCH_CONNECTIONS) : undefined;
  log(
    `release of one file at ${sizes.join(", ")} MiB from nginx ${spawnSync(nginx, ["-v"], { encoding: "utf8" }).stderr.trim().replace("nginx version: ", "")} on loopback, best of ${runs}; the SDK packed and imported from @stratum/join/node${connections ? ` (connections ${connections})` : ""}; load ${loadavg()}; ${cpus().length} CPUs; Node ${process.version}`,
  );
  const rows = [];
  let resume;
  for (const sizeMiB of sizes) {
    const size = sizeMiB * MiB;
    const releaseDir = join(work, `release-${sizeMiB}`);
    makeFile(join(releaseDir, path), size);
    await signReleaseDirectory(releaseDir, { release: "bench", keys: [key.privateKeyPem] });
    await mirror?.stop();
    await proxy?.stop();
    mirror = await startNginx({ root: releaseDir, work, nginx });
    if (process.env.BENCH_PROXY) proxy = await startTinyproxy({ work, port: Number(new URL(mirror.url).port) });
    const fileUrl = `${mirror.url}/${path}`;
    const out = join(work, "curl.out");
    const config = (destDir, progress = false) => ({
      url: mirror.url,
      ca: mirror.caPath,
      destDir,
      release: "bench",
      key: key.publicKeyPem,
      progress,
      ...(connections ? { connections } : {}),
    });
    const best = { curl: Infinity, curlSha: Infinity, curlNull: Infinity, nodeNull: Infinity };
    // CPU seconds (user + system) of the fastest run, the client's and the mirror's meanwhile
    const cpu = { curl: undefined, curlNull: undefined, nodeNull: undefined };
    const sdks = variants.map((variant) => ({
      ...variant,
      inside: Infinity,
      process: Infinity,
      importMs: Infinity,
      cpuRun: undefined,
      rssKiB: 0,
    }));
    /** Runs `fetch`; its result, and the mirror's CPU seconds meanwhile. */
    const withMirrorCpu = async (fetch) => {
      const before = processGroupCpu(mirror.pid);
      const result = await fetch();
      return { ...result, mirrorCpu: processGroupCpu(mirror.pid) - before };
    };
    /** The CPU of the run that took `wall`, kept when it is the fastest so far. */
    const fastest = (kept, wall, client, mirrorCpu) =>
      kept === undefined || wall < kept.wall ? { wall, client, mirrorCpu } : kept;
    for (let run = 0; run < runs; run++) {
      rmSync(out, { force: true });
      settle();
      const curl = await withMirrorCpu(() =>
        sh("curl", ["-sS", "--fail", "--cacert", mirror.caPath, "-o", out, fileUrl]),
      );
      if (statSync(out).size !== size) throw new Error("curl fetched a wrong size");
      best.curl = Math.min(best.curl, curl.seconds);
      cpu.curl = fastest(cpu.curl, curl.seconds, curl.cpu, curl.mirrorCpu);

      rmSync(out, { force: true });
      settle();
      const curl2 = sh("curl", ["-sS", "--fail", "--cacert", mirror.caPath, "-o", out, fileUrl]);
      const sum = sh("sha256sum", [out]);
      best.curlSha = Math.min(best.curlSha, curl2.seconds + sum.seconds);
      // curl's file goes before the SDK's run, as the SDK's goes before curl's: same page-cache state
      rmSync(out, { force: true });

      // the same transfer written nowhere: what TLS alone costs curl on these cores
      settle();
      const curlNull = await withMirrorCpu(() =>
        sh("curl", ["-sS", "--fail", "--cacert", mirror.caPath, "-o", "/dev/null", fileUrl]),
      );
      best.curlNull = Math.min(best.curlNull, curlNull.seconds);
      cpu.curlNull = fastest(cpu.curlNull, curlNull.seconds, curlNull.cpu, curlNull.mirrorCpu);
      settle();
      const nodeNull = await withMirrorCpu(() => sh(process.execPath, [TLS_READ, fileUrl, mirror.caPath]));
      if (JSON.parse(nodeNull.stdout).bytes < size) throw new Error("the bare TLS read fetched too little");
      best.nodeNull = Math.min(best.nodeNull, nodeNull.seconds);
      cpu.nodeNull = fastest(cpu.nodeNull, nodeNull.seconds, nodeNull.cpu, nodeNull.mirrorCpu);

      for (const variant of sdks) {
        const dest = join(work, `sdk-${run}`);
        settle();
        const { code, result, wall, mirrorCpu } = await withMirrorCpu(() =>
          sdk(
            variant.project,
            { ...config(dest), ...(variant.connections ? { connections: variant.connections } : {}) },
            undefined,
            variant.proxy ? proxy.url : undefined,
          ),
        );
        if (code !== 0 || !result) throw new Error(`the ${variant.name} run failed (exit ${code})`);
        variant.inside = Math.min(variant.inside, result.seconds);
        variant.process = Math.min(variant.process, wall);
        variant.importMs = Math.min(variant.importMs, result.importMs);
        variant.cpuRun = fastest(variant.cpuRun, wall, result.cpuSeconds, mirrorCpu);
        variant.rssKiB = Math.max(variant.rssKiB, result.maxRssKiB);
        rmSync(dest, { recursive: true, force: true });
      }
    }
    const shaCpu = sha256CpuSeconds(size);
    rows.push({ sizeMiB, size, best, sdks });
    log(
      `${sizeMiB} MiB: curl -o ${best.curl.toFixed(2)} s (${rate(size, best.curl)}), curl + sha256sum ${best.curlSha.toFixed(2)} s, curl -o /dev/null ${best.curlNull.toFixed(2)} s, node TLS read ${best.nodeNull.toFixed(2)} s; load ${loadavg()}`,
    );
    for (const v of sdks)
      log(
        `  ${v.name}: inside downloadRelease ${v.inside.toFixed(2)} s (${rate(size, v.inside)}), process ${v.process.toFixed(2)} s (import ${v.importMs.toFixed(0)} ms), peak RSS ${(v.rssKiB / 1024).toFixed(1)} MiB`,
      );
    // Where the cores went in each one's fastest run: the client's CPU and nginx's, and the least
    // wall time that much CPU takes on this machine's cores, had neither ever waited
    const cores = cpus().length;
    const budget = (name, { client, mirrorCpu, wall }, extra = "") => {
      const total = client + mirrorCpu;
      log(
        `  CPU ${name}: ${client.toFixed(2)} s${extra} + nginx ${mirrorCpu.toFixed(2)} s = ${total.toFixed(2)} s; on ${cores} cores at least ${(total / cores).toFixed(2)} s, took ${wall.toFixed(2)} s (cores ${Math.round((100 * total) / cores / wall)}% busy)`,
      );
    };
    budget("curl -o", cpu.curl);
    budget("curl -o /dev/null", cpu.curlNull);
    budget("node TLS read", cpu.nodeNull);
    for (const v of sdks) budget(`${v.name} process`, v.cpuRun, ` (SHA-256 alone ${shaCpu.toFixed(2)} s)`);

    if (sizeMiB === Math.max(...sizes)) {
      // killed at half way, then resumed: the resumed run must fetch only what is missing (+1 MiB)
      const killDest = join(work, "sdk-kill");
      settle();
      const killed = await sdk(project, config(killDest, true), (line, child) => {
        if (line.startsWith("progress ") && Number(line.slice(9)) >= size / 2) child.kill("SIGKILL");
      });
      let partial = 0;
      try {
        partial = statSync(join(killDest, `${path}.partial`)).size;
      } catch {
        // no .partial: the kill came before the first byte
      }
      const resumed = await sdk(project, config(killDest));
      if (resumed.code !== 0 || !resumed.result) throw new Error("the resumed SDK run failed");
      const missing = size - partial;
      resume = { killed, partial, missing, fetched: resumed.result.bytesFetched };
      rmSync(killDest, { recursive: true, force: true });
    }
    rmSync(releaseDir, { recursive: true, force: true });
  }

  log();
  log("| 1 release file | curl -o | curl + sha256sum | SDK | inside downloadRelease | as a process | peak RSS |");
  log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const { sizeMiB, best, sdks } of rows) {
    for (const v of sdks) {
      const r = (x) => (best.curl / x).toFixed(2);
      log(
        `| ${sizeMiB} MiB | ${best.curl.toFixed(2)} s | ${best.curlSha.toFixed(2)} s | ${v.name} | ${v.inside.toFixed(2)} s (${r(v.inside)}×) | ${v.process.toFixed(2)} s (${r(v.process)}×) | ${(v.rssKiB / 1024).toFixed(1)} MiB |`,
      );
    }
  }
  log();
  for (const { sizeMiB, best, sdks } of rows) {
    const v = sdks[0];
    const inside = best.curl / v.inside;
    const proc = best.curl / v.process;
    const sha = best.curlSha / v.inside;
    const rssMiB = v.rssKiB / 1024;
    log(
      `${mark(inside >= GOALS.inside)} ${sizeMiB} MiB: inside downloadRelease / curl -o   ${inside.toFixed(2)}x (goal >= ${GOALS.inside.toFixed(2)}x)`,
    );
    if (sizeMiB >= 1024)
      log(
        `${mark(proc >= GOALS.process)} ${sizeMiB} MiB: SDK process / curl -o             ${proc.toFixed(2)}x (goal >= ${GOALS.process.toFixed(2)}x)`,
      );
    else log(`     ${sizeMiB} MiB: SDK process / curl -o             ${proc.toFixed(2)}x (goal at 1 GiB)`);
    log(
      `${mark(sha >= GOALS.sha)} ${sizeMiB} MiB: inside / (curl + sha256sum)       ${sha.toFixed(2)}x (goal >= ${GOALS.sha.toFixed(2)}x)`,
    );
    log(
      `${mark(rssMiB <= GOALS.rssMiB)} ${sizeMiB} MiB: SDK peak RSS                     ${rssMiB.toFixed(1)} MiB (goal <= ${GOALS.rssMiB} MiB)`,
    );
  }
  if (resume) {
    const extra = resume.fetched - resume.missing;
    log(
      `${mark(resume.killed.signal === "SIGKILL" && extra <= GOALS.resumeExtra)} resume after SIGKILL at half: ${(resume.partial / MiB).toFixed(1)} MiB kept, ${(resume.missing / MiB).toFixed(1)} MiB missing, ${(resume.fetched / MiB).toFixed(1)} MiB fetched (extra ${(extra / 1024).toFixed(0)} KiB, goal <= 1024 KiB)`,
    );
  }
} finally {
  await mirror?.stop();
  await proxy?.stop();
  rmSync(work, { recursive: true, force: true });
}
