#!/usr/bin/env node
// What a newcomer measures first: a fresh clone, `npm ci` on a warm npm cache, then
// `npm run demo`. Clones this repository's current HEAD into a temporary directory (the
// commit, not the working tree: uncommitted changes are not measured), times each step and
// prints the total against the goal of 45 s.
//
// Run the same commit once before to warm the npm cache (`npm ci` anywhere in this tree does);
// a cold cache measures the network, not the project.
//
// On a shared machine the wall times swing with the load; each step's CPU time (user + system
// of its processes, from /proc on Linux) does not, and says what a quiet machine would need.
//
// Env: BENCH_RUNS (default 3; each run is a fresh clone), BENCH_DIR (default os.tmpdir()),
// BENCH_REV (a commit or branch to measure instead of HEAD).
// Run with: npm run bench:first-run
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The goal of the issue "Fast where users measure it": clone to a joined demo machine. */
const GOAL_SECONDS = 45;

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const runs = Number(process.env.BENCH_RUNS ?? 3);
const rev = process.env.BENCH_REV ?? "HEAD";

function log(line) {
  process.stdout.write(`${line}\n`);
}

const ticksPerSecond = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout) || 100;

/** CPU seconds (user + system) of every child process this one has waited for; undefined off Linux. */
function childCpuSeconds() {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    // The fields after the command name; cutime and cstime are fields 16 and 17 of the line.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[13]) + Number(fields[14])) / ticksPerSecond;
  } catch {
    return undefined;
  }
}

/** Runs a command to its end; throws with its output when it fails. Returns wall and CPU seconds. */
function timed(cwd, cmd, args) {
  const cpuBefore = childCpuSeconds();
  const started = performance.now();
  const result = spawnSync(cmd, args, {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
    maxBuffer: 64 * 1024 * 1024,
    // CI=true keeps npm and the demo from drawing progress for a terminal nobody watches.
    env: { ...process.env, CI: "true" },
  });
  const seconds = (performance.now() - started) / 1000;
  if (result.status !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} failed (exit ${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  const cpuAfter = childCpuSeconds();
  return { seconds, cpu: cpuBefore === undefined ? undefined : cpuAfter - cpuBefore };
}

const fmt = ({ seconds, cpu }) => `${seconds.toFixed(1)} s${cpu === undefined ? "" : ` (CPU ${cpu.toFixed(1)} s)`}`;

function git(...args) {
  const result = spawnSync("git", args, { cwd: root, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout.trim();
}

const commit = git("rev-parse", rev);
log(`first run of ${git("log", "-1", "--format=%h %s", commit)}`);
log(`node ${process.version}, npm ${spawnSync("npm", ["--version"], { encoding: "utf8" }).stdout.trim()}`);

const results = [];
for (let run = 1; run <= runs; run++) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "stratum-first-run-"));
  try {
    const clone = timed(dir, "git", ["clone", "--quiet", "--no-checkout", root, "repo"]);
    const repo = join(dir, "repo");
    timed(repo, "git", ["checkout", "--quiet", commit]);
    const install = timed(repo, "npm", ["ci"]);
    const demo = timed(repo, "npm", ["run", "demo"]);
    const total = {
      seconds: clone.seconds + install.seconds + demo.seconds,
      cpu: install.cpu === undefined ? undefined : clone.cpu + install.cpu + demo.cpu,
    };
    results.push({ clone, install, demo, total });
    log(`run ${run}: clone ${fmt(clone)}, npm ci ${fmt(install)}, demo ${fmt(demo)}, total ${fmt(total)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const sorted = (key, field) => results.map((r) => r[key][field]).sort((a, b) => a - b);
const summary = (key) => {
  const wall = sorted(key, "seconds");
  const cpu = results[0][key].cpu === undefined ? undefined : sorted(key, "cpu");
  const range = (xs) => `${xs[0].toFixed(1)}–${xs.at(-1).toFixed(1)} s`;
  return `best ${wall[0].toFixed(1)} s (${range(wall)} over ${results.length} runs)${cpu ? `, CPU ${range(cpu)}` : ""}`;
};
log("");
log(`npm ci:  ${summary("install")}`);
log(`demo:    ${summary("demo")}`);
log(`total:   ${summary("total")}`);
const best = sorted("total", "seconds")[0];
log(
  `goal:    best total ${best.toFixed(1)} s against ${GOAL_SECONDS} s: ` +
    `${best <= GOAL_SECONDS ? "met" : "missed"} (${(best / GOAL_SECONDS).toFixed(2)} of the goal)`,
);
