#!/usr/bin/env node
// `npm run test:mutation`: StrykerJS on the rule-bearing files of test/mutation/targets.mjs,
// then each file's score and the survivors held to test/mutation/equivalent.md. Fails when a
// mutant no test detects is not listed as equivalent, when a listed one no longer survives, or
// when a file scores under 90%.
//
//   npm run test:mutation                          every target
//   npm run test:mutation -- src/core/pairing.ts   one file (or several)
//   npm run test:mutation -- --changed[=BASE]      the lines a change touched in the targets (CI)
//   npm run test:mutation -- --judge               judge the last report again, without running
//
// Other `--` flags go to Stryker as they are (`--concurrency 1`, `--incremental`, `--logLevel debug`).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { MUTATION_TARGETS } from "../test/mutation/targets.mjs";
import { formatScores, judge, parseEquivalentList } from "./mutation-gate.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
process.chdir(root);
const REPORT = "reports/mutation/mutation.json";
const EQUIVALENT = "test/mutation/equivalent.md";
/** The mutation run's own setup: a change to it runs one target whole, to show the setup still runs. */
const SETUP = [
  "stryker.config.mjs",
  "test/mutation/vitest.config.ts",
  "scripts/mutation.mjs",
  "scripts/mutation-gate.mjs",
];

const fail = (message) => {
  console.error(`test:mutation: ${message}`);
  process.exit(1);
};

const git = (...args) => execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
const tryGit = (...args) => {
  try {
    return git(...args);
  } catch {
    return undefined;
  }
};

/**
 * The commit a change is measured from: STRATUM_MUTATION_BASE, else the merge base with main
 * (on a branch), else HEAD's first parent (on main: what the last merge brought).
 */
function changeBase(given) {
  const named = given || process.env.STRATUM_MUTATION_BASE;
  if (named) return named;
  const head = git("rev-parse", "HEAD");
  for (const main of ["main", "origin/main"]) {
    const base = tryGit("merge-base", "HEAD", main);
    if (base && base !== head) return base;
  }
  return tryGit("rev-parse", "HEAD^1");
}

/** The line ranges (`[first, last]`, of the file as it is now) a change made in `file` since `base`. */
function changedLines(base, file) {
  const ranges = [];
  for (const [, at, count] of git("diff", "-U0", "--no-color", base, "--", file).matchAll(
    /^@@ [^+]*\+(\d+)(?:,(\d+))? @@/gm,
  )) {
    const first = Number(at);
    const lines = count === undefined ? 1 : Number(count);
    // lines only removed: the code on either side of the cut is what changed
    ranges.push(lines === 0 ? [Math.max(1, first), first + 1] : [first, first + lines - 1]);
  }
  return ranges;
}

/** The targets of test/mutation/targets.mjs as they were at `base`; today's when it had none (the setup is new). */
async function targetsAt(base) {
  const text = tryGit("show", `${base}:test/mutation/targets.mjs`);
  if (text === undefined) return MUTATION_TARGETS;
  const dir = mkdtempSync(join(tmpdir(), "stratum-mutation-"));
  try {
    writeFileSync(join(dir, "targets.mjs"), text);
    return (await import(pathToFileURL(join(dir, "targets.mjs")).href)).MUTATION_TARGETS;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What a change asks of the mutation run: the lines it changed in each target's source; a
 * target new since `base` (or its source new), whole; and when the mutation setup itself
 * changed, one target whole, to show the setup still runs. A change to tests alone runs
 * nothing here: the weekly whole run judges the tests (CONTRIBUTING.md).
 */
async function changedTargets(given) {
  const base = changeBase(given);
  if (!base) {
    // a clone without history (or a first commit): no change to measure, so the smoke run only
    console.log("test:mutation: no commit to measure the change from; one target whole, to show the setup runs");
    return { files: [Object.keys(MUTATION_TARGETS)[0]], ranges: {} };
  }
  const changed = new Set(
    [git("diff", "--name-only", base), git("ls-files", "--others", "--exclude-standard")].join("\n").split("\n"),
  );
  changed.delete("");
  console.log(`test:mutation: the change since ${base.slice(0, 12)} touches ${changed.size} file(s)`);
  const before = await targetsAt(base);
  const whole = new Set(
    Object.keys(MUTATION_TARGETS).filter(
      (file) => !(file in before) || tryGit("cat-file", "-e", `${base}:${file}`) === undefined,
    ),
  );
  if (SETUP.some((file) => changed.has(file))) whole.add(Object.keys(MUTATION_TARGETS)[0]);
  const ranges = {};
  for (const file of Object.keys(MUTATION_TARGETS)) {
    if (whole.has(file) || !changed.has(file)) continue;
    const lines = changedLines(base, file);
    if (lines.length > 0) ranges[file] = lines;
  }
  return { files: Object.keys(MUTATION_TARGETS).filter((file) => whole.has(file) || file in ranges), ranges };
}

const args = process.argv.slice(2);
const strykerArgs = [];
let files = [];
let judgeOnly = false;
let changed;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--judge") judgeOnly = true;
  else if (arg === "--changed" || arg.startsWith("--changed=")) changed = arg.slice("--changed=".length);
  else if (arg.startsWith("--")) {
    strykerArgs.push(arg);
    // a value that follows its flag goes with it
    if (args[i + 1] !== undefined && !args[i + 1].startsWith("--") && !(args[i + 1] in MUTATION_TARGETS))
      strykerArgs.push(args[++i]);
  } else files.push(arg.replace(/^\.\//, ""));
}
const unknown = files.filter((file) => !(file in MUTATION_TARGETS));
if (unknown.length > 0) fail(`${unknown.join(", ")}: not a target; add a line for it in test/mutation/targets.mjs`);
let ranges = {};
if (changed !== undefined) {
  ({ files, ranges } = await changedTargets(changed));
  if (files.length === 0) {
    console.log("test:mutation: the change touches no mutation target; nothing to run");
    process.exit(0);
  }
}
// --judge alone judges the files the last report holds
const lastReport = () => (existsSync(REPORT) ? Object.keys(JSON.parse(readFileSync(REPORT, "utf8")).files) : []);
if (files.length === 0 && judgeOnly) files = lastReport().filter((file) => file in MUTATION_TARGETS);
if (files.length === 0) files = Object.keys(MUTATION_TARGETS);
const mutate = files.flatMap((file) =>
  (ranges[file] ?? [undefined]).map((r) => (r ? `${file}:${r[0]}-${r[1]}` : file)),
);
console.log(`test:mutation: ${mutate.join(", ")}`);

if (!judgeOnly) {
  const started = Date.now();
  const run = spawnSync("npx", ["stryker", "run", "--mutate", mutate.join(","), ...strykerArgs], {
    stdio: "inherit",
    env: { ...process.env, STRATUM_MUTATE: files.join(",") },
  });
  if (run.status !== 0) fail(`Stryker exited with ${run.status ?? run.signal}`);
  console.log(`test:mutation: Stryker took ${Math.round((Date.now() - started) / 1000)} s`);
}

if (!existsSync(REPORT)) fail(`no report at ${REPORT}: run without --judge first`);
const report = JSON.parse(readFileSync(REPORT, "utf8"));
let listed;
try {
  listed = parseEquivalentList(readFileSync(EQUIVALENT, "utf8"));
} catch (error) {
  fail(error.message);
}
const { rows, failures } = judge(report, listed, files, { ranges });
console.log(`\nMutation score per file (detected ÷ detected + survived + no coverage; a timeout is detected):\n`);
console.log(formatScores(rows));
if (failures.length > 0) {
  console.error(`\n${failures.length} problem(s):`);
  for (const failure of failures) console.error(`- ${failure}`);
  process.exit(1);
}
console.log(
  Object.keys(ranges).length > 0
    ? "\ntest:mutation: every mutant on the changed lines killed or listed as equivalent"
    : "\ntest:mutation: every file at 90% or more, every survivor listed as equivalent",
);
