#!/usr/bin/env node
// Benchmark of the release downloader (`npm run bench:release`):
// a release with one large file on a loopback HTTPS mirror, fetched by
//   1. the SDK: downloadRelease (manifest verify, SHA-256 while streaming, fsync, rename),
//   2. `curl -o` (no verification),
//   3. `curl -o` then `sha256sum`,
// from the same server and file, in one run; then a kill at half way and a resume.
// Prints throughputs, the ratios against the goals, and the SDK's peak RSS.
//
// The SDK runs in its own process, bundled with esbuild as the package ships (compiled JS),
// so that its peak RSS is the SDK's and not the TypeScript loader's; BENCH_TSX=1 runs the
// sources through tsx instead.
//
// Env: BENCH_SIZE_MIB (default 1024), BENCH_RUNS (best of, default 3), BENCH_DIR (default os.tmpdir()).
// Run with: node scripts/bench-release.mjs
import { spawn, spawnSync } from "node:child_process";
import { randomFillSync } from "node:crypto";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeSync, closeSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { register } from "tsx/esm/api";

register();
const { generateReleaseKeyPair, signReleaseDirectory } = await import("../src/release/index.ts");

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const MiB = 1024 * 1024;
const sizeMiB = Number(process.env.BENCH_SIZE_MIB ?? 1024);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const size = sizeMiB * MiB;
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "stratum-bench-release-"));
const releaseDir = join(work, "release");
const caPath = join(work, "ca.pem");
const path = "os/blobs/bench";

function log(line) {
  process.stdout.write(`${line}\n`);
}

function fmtRate(bytes, seconds) {
  return `${(bytes / MiB / seconds).toFixed(0)} MiB/s`;
}

function sh(cmd, args) {
  const started = performance.now();
  const result = spawnSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"], maxBuffer: 16 * MiB });
  if (result.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${result.stderr}`);
  return { seconds: (performance.now() - started) / 1000, stdout: result.stdout.toString() };
}

function settle() {
  // write back the previous run's dirty pages outside any timing
  spawnSync("sync");
}

let sdkEntry = ["--import", "tsx", join(root, "scripts/bench-release-sdk.mjs")];

function sdk(config, onLine) {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...sdkEntry, JSON.stringify(config)], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    });
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
    child.on("exit", (code, signal) => done({ code, signal, result: last }));
    child.on("error", fail);
  });
}

try {
  if (!process.env.BENCH_TSX) {
    const { build } = await import("esbuild");
    const outfile = join(work, "bench-release-sdk.bundle.mjs");
    await build({
      entryPoints: [join(root, "scripts/bench-release-sdk.mjs")],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      logLevel: "warning",
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    });
    sdkEntry = [outfile];
  }
  log(
    `release of one ${sizeMiB} MiB file, best of ${runs}, in ${work} (SDK ${process.env.BENCH_TSX ? "via tsx" : "bundled with esbuild"}; load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}; ${cpus().length} CPUs)`,
  );
  mkdirSync(join(releaseDir, "os/blobs"), { recursive: true });
  const fd = openSync(join(releaseDir, path), "w");
  const block = Buffer.allocUnsafe(4 * MiB);
  for (let done = 0; done < size; done += block.length) {
    randomFillSync(block);
    writeSync(fd, block, 0, Math.min(block.length, size - done));
  }
  closeSync(fd);
  const key = generateReleaseKeyPair();
  await signReleaseDirectory(releaseDir, { release: "bench", keys: [key.privateKeyPem] });
  settle();

  const server = spawn(
    process.execPath,
    ["--import", "tsx", join(root, "scripts/bench-release-server.mjs"), JSON.stringify({ root: releaseDir, caPath })],
    {
      cwd: root,
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const { url } = await new Promise((done) => server.stdout.once("data", (d) => done(JSON.parse(d.toString()))));
  const fileUrl = `${url}/${path}`;
  const out = join(work, "curl.out");
  const sdkConfig = (destDir, progress = false) => ({
    url,
    ca: caPath,
    destDir,
    release: "bench",
    key: key.publicKeyPem,
    progress,
  });

  const best = { curl: Infinity, curlSha: Infinity, sdk: Infinity, sdkWall: Infinity, curlSync: Infinity };
  let rssKiB = 0;
  for (let run = 0; run < runs; run++) {
    rmSync(out, { force: true });
    settle();
    const curl = sh("curl", ["-sS", "--fail", "--cacert", caPath, "-o", out, fileUrl]);
    if (statSync(out).size !== size) throw new Error("curl fetched a wrong size");
    best.curl = Math.min(best.curl, curl.seconds);

    rmSync(out, { force: true });
    settle();
    const curl2 = sh("curl", ["-sS", "--fail", "--cacert", caPath, "-o", out, fileUrl]);
    const sum = sh("sha256sum", [out]);
    best.curlSha = Math.min(best.curlSha, curl2.seconds + sum.seconds);
    const sync = sh("sync", []);
    best.curlSync = Math.min(best.curlSync, curl2.seconds + sync.seconds);
    // curl's file goes before the SDK's run, as the SDK's goes before curl's: same page-cache state
    rmSync(out, { force: true });

    const dest = join(work, `sdk-${run}`);
    settle();
    const started = performance.now();
    const { code, result } = await sdk(sdkConfig(dest));
    const wall = (performance.now() - started) / 1000;
    if (code !== 0 || !result) throw new Error(`the SDK run failed (exit ${code})`);
    best.sdk = Math.min(best.sdk, result.seconds);
    best.sdkWall = Math.min(best.sdkWall, wall);
    rssKiB = Math.max(rssKiB, result.maxRssKiB);
    rmSync(dest, { recursive: true, force: true });
  }

  // killed at half way, then resumed: the resumed run must fetch only what is missing (+1 MiB)
  const killDest = join(work, "sdk-kill");
  settle();
  const killed = await sdk(sdkConfig(killDest, true), (line, child) => {
    if (line.startsWith("progress ") && Number(line.slice(9)) >= size / 2) child.kill("SIGKILL");
  });
  let partial = 0;
  try {
    partial = statSync(join(killDest, `${path}.partial`)).size;
  } catch {
    // no .partial: the kill came before the first byte
  }
  const resumed = await sdk(sdkConfig(killDest));
  if (resumed.code !== 0 || !resumed.result) throw new Error("the resumed SDK run failed");
  const missing = size - partial;
  const extra = resumed.result.bytesFetched - missing;
  rssKiB = Math.max(rssKiB, resumed.result.maxRssKiB);

  server.stdin.end();
  const ratioCurl = best.curl / best.sdk;
  const ratioSha = best.curlSha / best.sdk;
  const rssMiB = rssKiB / 1024;
  const mark = (ok) => (ok ? "ok  " : "MISS");
  log("");
  log(`curl -o                       ${best.curl.toFixed(2)} s  ${fmtRate(size, best.curl)}`);
  log(`curl -o + sha256sum           ${best.curlSha.toFixed(2)} s  ${fmtRate(size, best.curlSha)}`);
  log(`curl -o + sync (durable)      ${best.curlSync.toFixed(2)} s  ${fmtRate(size, best.curlSync)}   (for reference)`);
  log(
    `SDK download+verify+fsync     ${best.sdk.toFixed(2)} s  ${fmtRate(size, best.sdk)}   (process wall incl. node start: ${best.sdkWall.toFixed(2)} s)`,
  );
  log("");
  log(`${mark(ratioCurl >= 0.9)} SDK / curl throughput            ${ratioCurl.toFixed(2)}x   (goal >= 0.90x)`);
  log(`${mark(ratioSha >= 1.5)} SDK / (curl + sha256sum)         ${ratioSha.toFixed(2)}x   (goal >= 1.50x)`);
  log(`${mark(rssMiB < 150)} SDK peak RSS                     ${rssMiB.toFixed(1)} MiB (goal < 150 MiB)`);
  log(
    `${mark(killed.signal === "SIGKILL" && extra <= MiB)} resume after SIGKILL at half      partial ${(partial / MiB).toFixed(1)} MiB kept, missing ${(missing / MiB).toFixed(1)} MiB, fetched ${(resumed.result.bytesFetched / MiB).toFixed(1)} MiB (extra ${(extra / 1024).toFixed(0)} KiB, goal <= 1024 KiB)`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
