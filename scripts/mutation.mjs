#!/usr/bin/env node
// `npm run test:mutation`: StrykerJS on the rule-bearing files of test/mutation/targets.mjs,
// then each file's score and the survivors held to test/mutation/equivalent.md. Fails when a
// mutant no test detects is not listed as equivalent, when a listed one no longer survives, or
// when a file scores under 90%.
//
//   npm run test:mutation                          every target
//   npm run test:mutation -- src/core/pairing.ts   one file (or several)
//   npm run test:mutation -- --changed[=BASE]      the targets a change touches (CI)
//   npm run test:mutation -- --judge               judge the last report again, without running
//
// Other `--` flags go to Stryker as they are (`--concurrency 1`, `--incremental`, `--logLevel debug`).
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

import { MUTATION_TARGETS } from "../test/mutation/targets.mjs";
import { formatScores, judge, parseEquivalentList } from "./mutation-gate.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
process.chdir(root);
const REPORT = "reports/mutation/mutation.json";
const EQUIVALENT = "test/mutation/equivalent.md";
/** A change to any of these can change every target's verdict. */
const SETUP = ["stryker.config.mjs", "test/mutation/targets.mjs", "test/mutation/vitest.config.ts", "vitest.config.ts"];

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

/** The test files' relative imports inside the repository, followed to the end (helpers, fixtures' code). */
function testSources(tests) {
  const seen = new Set();
  const queue = [...tests];
  while (queue.length > 0) {
    const file = queue.pop();
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const [, spec] of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
      const target = normalize(join(dirname(file), spec));
      // sources import each other with the .js suffix NodeNext wants; the file is .ts
      for (const candidate of [target, target.replace(/\.js$/, ".ts"), target.replace(/\.mjs$/, ".mts")]) {
        if (existsSync(candidate) && !candidate.startsWith("src/")) queue.push(relative(".", candidate));
      }
    }
  }
  return seen;
}

/** The targets a change touches: its source, one of its tests or what they import, or the setup itself. */
function changedTargets(given) {
  const base = changeBase(given);
  if (!base) return Object.keys(MUTATION_TARGETS);
  const changed = new Set(
    [git("diff", "--name-only", base), git("ls-files", "--others", "--exclude-standard")].join("\n").split("\n"),
  );
  console.log(`test:mutation: the change since ${base.slice(0, 12)} touches ${changed.size - 1} file(s)`);
  if (SETUP.some((file) => changed.has(file)) || [...changed].some((file) => file.startsWith("scripts/mutation")))
    return Object.keys(MUTATION_TARGETS);
  return Object.entries(MUTATION_TARGETS)
    .filter(([file, tests]) => changed.has(file) || [...testSources(tests)].some((t) => changed.has(t)))
    .map(([file]) => file);
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
if (changed !== undefined) {
  files = changedTargets(changed);
  if (files.length === 0) {
    console.log("test:mutation: the change touches no mutation target; nothing to run");
    process.exit(0);
  }
}
// --judge alone judges the files the last report holds
const lastReport = () => (existsSync(REPORT) ? Object.keys(JSON.parse(readFileSync(REPORT, "utf8")).files) : []);
if (files.length === 0 && judgeOnly) files = lastReport().filter((file) => file in MUTATION_TARGETS);
if (files.length === 0) files = Object.keys(MUTATION_TARGETS);
console.log(`test:mutation: ${files.join(", ")}`);

if (!judgeOnly) {
  const started = Date.now();
  const run = spawnSync("npx", ["stryker", "run", "--mutate", files.join(","), ...strykerArgs], {
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
const { rows, failures } = judge(report, listed, files);
console.log(`\nMutation score per file (detected ÷ detected + survived + no coverage; a timeout is detected):\n`);
console.log(formatScores(rows));
if (failures.length > 0) {
  console.error(`\n${failures.length} problem(s):`);
  for (const failure of failures) console.error(`- ${failure}`);
  process.exit(1);
}
console.log(`\ntest:mutation: every file at 90% or more, every survivor listed as equivalent`);
