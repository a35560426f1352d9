#!/usr/bin/env node
// What a newcomer measures first: a fresh clone, `npm ci` on a warm npm cache, then
// `npm run demo`. Clones this repository's current HEAD into a temporary directory (the
// commit, not the working tree: uncommitted changes are not measured), times each step and
// prints the total against the goal of 45 s.
//
// Run the same commit once before to warm the npm cache (`npm ci` anywhere in this tree does);
// a cold cache measures the network, not the project.
//
// Env: BENCH_RUNS (default 3; each run is a fresh clone), BENCH_DIR (default os.tmpdir()),
// BENCH_REV (a commit or branch to measure instead of HEAD).
// Run with: npm run bench:first-run
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
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

/** Runs a command to its end; throws with its output when it fails. Returns seconds taken. */
function timed(cwd, cmd, args) {
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
  return seconds;
}

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
    const total = clone + install + demo;
    results.push({ clone, install, demo, total });
    log(
      `run ${run}: clone ${clone.toFixed(1)} s, npm ci ${install.toFixed(1)} s, demo ${demo.toFixed(1)} s, ` +
        `total ${total.toFixed(1)} s`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const pick = (key) => results.map((r) => r[key]).sort((a, b) => a - b);
const best = (key) => pick(key)[0];
const worst = (key) => pick(key).at(-1);
const spread = (key) => `${best(key).toFixed(1)}–${worst(key).toFixed(1)} s`;
log("");
log(`npm ci:  best ${best("install").toFixed(1)} s (${spread("install")} over ${results.length} runs)`);
log(`demo:    best ${best("demo").toFixed(1)} s (${spread("demo")})`);
const total = best("total");
log(
  `total:   best ${total.toFixed(1)} s (${spread("total")}) against the goal of ${GOAL_SECONDS} s: ` +
    `${total <= GOAL_SECONDS ? "met" : "missed"} (${(total / GOAL_SECONDS).toFixed(2)} of the goal)`,
);
