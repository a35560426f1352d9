import { defineConfig } from "tsup";

const publicEntries = {
  index: "src/index.ts",
  "validate/index": "src/validate/index.ts",
  "testing/index": "src/testing/index.ts",
  "node/index": "src/node/index.ts",
  "release/index": "src/release/index.ts",
  "server/index": "src/server/index.ts",
};

// One build for every entry of package.json "exports" and the CLI's bin, so a module two
// entries share (the error classes above all) is one chunk: an error thrown by ./node is an
// `instanceof` the class imported from the root entry. ES2022 output runs in the browsers the
// root entry supports and in Node 20. That no Node built-in reaches a browser entry is checked
// on the packed package (scripts/check-size.mjs, test/package/bundlers.test.ts), where it
// matters: in the bundles users build.
// The reference server (examples/reference-server) ships as the `stratum-join-reference-server`
// bin: a founder a console team or an installer's author starts from the installed package.
// What only it uses (libsql, its store's engine; yaml, for node.yaml) are optional dependencies:
// the SDK's entries never load them.
export default defineConfig({
  entry: {
    ...publicEntries,
    "cli/main": "src/cli/main.ts",
    "reference-server/main": "examples/reference-server/main.ts",
  },
  format: "esm",
  platform: "node",
  target: "es2022",
  dts: { entry: publicEntries },
  sourcemap: true,
  clean: true,
  splitting: true,
  treeshake: true,
  external: ["msw", "openapi-msw", "libsql", "yaml"],
});
