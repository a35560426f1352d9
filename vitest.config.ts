import { defineConfig } from "vitest/config";

import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";

// Examples import the package by its name, as a user would; tests run them from source.
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@stratum\/join$/, replacement: source("./src/index.ts") },
      { find: /^@stratum\/join\/validate$/, replacement: source("./src/validate/index.ts") },
      { find: /^@stratum\/join\/node$/, replacement: source("./src/node/index.ts") },
      { find: /^@stratum\/join\/release$/, replacement: source("./src/release/index.ts") },
      { find: /^@stratum\/join\/server$/, replacement: source("./src/server/index.ts") },
      { find: /^@stratum\/join\/testing$/, replacement: source("./src/testing/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    exclude: ["**/node_modules/**", "examples/console/dist/**"],
    // Backstops for a test that hangs, not deadlines of the work: a test of a dozen real
    // Argon2id exchanges takes seconds on a quiet machine and a minute on a loaded one.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Most test files wait on sockets, timers and child processes rather than the CPU, so two
    // files per core (vitest's default is one fewer than the cores). No test depends on the
    // machine's speed: deadlines are measured on what they bound, the timing test compares
    // the fastest answers of interleaved probes.
    maxWorkers: 2 * availableParallelism(),
    // CI writes a JSON report beside the usual output, to check which tests skipped.
    ...(process.env.STRATUM_TEST_REPORT
      ? { reporters: ["default", "json"], outputFile: { json: process.env.STRATUM_TEST_REPORT } }
      : {}),
    typecheck: {
      enabled: true,
      include: ["test/**/*.test-d.ts"],
      tsconfig: "./tsconfig.json",
    },
  },
});
