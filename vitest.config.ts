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
    exclude: ["**/node_modules/**", "examples/console/dist/**", ".stryker-tmp/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Most test files wait on sockets, timers and child processes rather than the CPU, so two
    // files at once even on a 2-core machine (vitest's default there is one): the suite takes
    // about 3.5 minutes instead of 6. The timing tests compare interleaved probes, not clocks.
    maxWorkers: Math.max(2, availableParallelism() - 1),
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
