import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    exclude: ["**/node_modules/**", "examples/console/dist/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    typecheck: {
      enabled: true,
      include: ["test/**/*.test-d.ts"],
      tsconfig: "./tsconfig.json",
    },
  },
});
