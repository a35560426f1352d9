import { defineConfig } from "tsup";

// One build per entry of package.json "exports" (and the CLI's bin). The root and
// ./testing entries are built for the browser platform so a Node built-in slipping
// into them fails the build instead of a console's bundle.
export default defineConfig([
  {
    entry: {
      index: "src/index.ts",
      "validate/index": "src/validate/index.ts",
      "testing/index": "src/testing/index.ts",
    },
    format: "esm",
    platform: "browser",
    target: "es2022",
    dts: true,
    sourcemap: true,
    clean: true,
    splitting: true,
    treeshake: true,
    external: ["msw", "openapi-msw"],
  },
  {
    entry: {
      "node/index": "src/node/index.ts",
      "release/index": "src/release/index.ts",
      "server/index": "src/server/index.ts",
      "cli/main": "src/cli/main.ts",
    },
    format: "esm",
    platform: "node",
    target: "node20",
    dts: {
      entry: {
        "node/index": "src/node/index.ts",
        "release/index": "src/release/index.ts",
        "server/index": "src/server/index.ts",
      },
    },
    sourcemap: true,
    clean: false,
    splitting: true,
  },
]);
