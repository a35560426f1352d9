#!/usr/bin/env node
// Fails a CI run in which a test was skipped that is not on the allow-list: a test that
// cannot run where CI runs it is a test that never runs. Reads vitest's JSON report (written
// when STRATUM_TEST_REPORT names a file: see vitest.config.ts) and .ci/allowed-skips.txt
// (one test name per line, `#` comments; each entry says why it may skip).
// Usage: node scripts/check-skips.mjs REPORT.json
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const report = JSON.parse(readFileSync(process.argv[2], "utf8"));
const allowed = new Set(
  readFileSync(join(root, ".ci/allowed-skips.txt"), "utf8")
    .split("\n")
    .map((line) => line.replace(/#.*/, "").trim())
    .filter(Boolean),
);

const skipped = [];
for (const file of report.testResults ?? []) {
  for (const test of file.assertionResults ?? []) {
    if (test.status === "skipped" || test.status === "pending" || test.status === "todo") {
      skipped.push(`${relative(root, file.name)} > ${test.fullName ?? test.title}`);
    }
  }
}
const unexpected = skipped.filter((name) => !allowed.has(name));
console.log(`skipped: ${skipped.length} test(s), ${skipped.length - unexpected.length} on the allow-list`);
for (const name of skipped) console.log(`  ${allowed.has(name) ? "allowed " : "NOT ALLOWED"}  ${name}`);
if (unexpected.length > 0) {
  console.error(
    `check-skips: ${unexpected.length} test(s) skipped in CI that are not on .ci/allowed-skips.txt: make them run here, or fail`,
  );
  process.exit(1);
}
