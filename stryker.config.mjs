// StrykerJS, as `npm run test:mutation` runs it (scripts/mutation.mjs, which also scores each
// file and holds the survivors to test/mutation/equivalent.md). The files mutated and their
// tests are listed in test/mutation/targets.mjs.
import { MUTATION_TARGETS } from "./test/mutation/targets.mjs";

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  mutate: Object.keys(MUTATION_TARGETS),
  testRunner: "vitest",
  vitest: { configFile: "test/mutation/vitest.config.ts" },
  // each mutant runs only the tests that reached it in the first, unmutated run
  coverageAnalysis: "perTest",
  // the machine is shared: two sandboxes at most (STRYKER_CONCURRENCY to change it)
  concurrency: Number(process.env.STRYKER_CONCURRENCY ?? 2),
  // the socket tests wait on real timers: room enough that a loaded machine does not turn a slow
  // run into a timeout, which would count as a mutant detected
  timeoutMS: 10_000,
  reporters: ["progress", "clear-text", "json", "html"],
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  // `--incremental`: results kept between runs, so only mutants whose code or tests changed run again
  incrementalFile: "reports/mutation/incremental.json",
  tempDirName: ".stryker-tmp",
  // each sandbox is a copy of the project: not of the recorded machines (symlinks Stryker cannot
  // copy) nor of what no mutated file's test reads
  ignorePatterns: ["test/node/inventory/fixtures", "examples/console", "docs", "api", "reports"],
  cleanTempDir: true,
};
