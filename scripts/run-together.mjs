#!/usr/bin/env node
// Runs npm scripts at the same time, for the checks of `npm test` that neither read nor write
// what another writes (tsc, ESLint, Prettier, TypeDoc): on two cores they take about the time of
// the longest instead of the sum. Each script's output is held and printed whole when it ends,
// under its name, so the log reads as if they had run one after the other. Exits 1 naming the
// scripts that failed, after all have ended.
// Usage: node scripts/run-together.mjs SCRIPT...
import { spawn } from "node:child_process";

const scripts = process.argv.slice(2);
if (scripts.length === 0) {
  console.error("usage: node scripts/run-together.mjs SCRIPT...");
  process.exit(2);
}

/** Runs `npm run -s NAME`; resolves with its exit status and what it printed (stdout and stderr, in order). */
function run(name) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn("npm", ["run", "-s", name], { stdio: ["ignore", "pipe", "pipe"] });
    const output = [];
    child.stdout.on("data", (d) => output.push(d));
    child.stderr.on("data", (d) => output.push(d));
    child.on("error", (error) => output.push(Buffer.from(`${error.message}\n`)));
    child.on("close", (code, signal) => {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const status = code === 0 ? "ok" : `failed (${signal ?? `exit ${code}`})`;
      process.stdout.write(`\n> npm run ${name}: ${status} in ${seconds} s\n`);
      process.stdout.write(Buffer.concat(output));
      resolve(code === 0);
    });
  });
}

const results = await Promise.all(scripts.map(run));
const failed = scripts.filter((_, i) => !results[i]);
if (failed.length > 0) {
  console.error(`\nfailed: ${failed.map((name) => `npm run ${name}`).join(", ")}`);
  process.exitCode = 1;
}
