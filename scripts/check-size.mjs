#!/usr/bin/env node
// The browser budget: an app that imports createAdminClient and parseJoinCode from the root
// entry must bundle (esbuild, minified, platform browser, ESM) to at most 15 kB gzip without
// validation, with no Node built-in or Node-only module anywhere in its graph. Prints the
// figure with and without validation (validateResponses, which brings zod); only the first has
// a budget, since validation is the console's opt-in. Exit 1 past the budget or on a Node
// module. Usage: node scripts/check-size.mjs
import { builtinModules } from "node:module";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BUDGET = 15_000; // bytes of gzip, "15 kB" read strictly (1 kB = 1000 B)

// Node-only code the browser graph must never reach, beyond the built-ins themselves.
const NODE_ONLY = [
  /(^|\/)node_modules\/undici\//,
  /(^|\/)node_modules\/better-sqlite3\//,
  /^src\/(node|release|cli)\//,
];
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** Bundles `contents` as an app would, and measures it. */
async function bundle(contents) {
  const result = await build({
    stdin: { contents, resolveDir: root, sourcefile: "app.js", loader: "js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const code = result.outputFiles[0].contents;
  return { minified: code.length, gzip: gzipSync(code, { level: 9 }).length, metafile: result.metafile };
}

/** Every Node built-in or Node-only module in the bundle's graph. */
function nodeModulesIn(metafile) {
  const found = new Set();
  for (const [path, input] of Object.entries(metafile.inputs)) {
    if (path.startsWith("node:") || builtins.has(path) || NODE_ONLY.some((re) => re.test(path))) found.add(path);
    for (const imported of input.imports) {
      if (imported.path.startsWith("node:") || builtins.has(imported.path))
        found.add(`${imported.path} (imported by ${path})`);
    }
  }
  return [...found];
}

/** The largest inputs of a bundle, to say where the bytes went when it is over budget. */
function heaviest(metafile, n = 8) {
  const sizes = new Map();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, { bytesInOutput }] of Object.entries(output.inputs))
      sizes.set(path, (sizes.get(path) ?? 0) + bytesInOutput);
  }
  return [...sizes].sort((a, b) => b[1] - a[1]).slice(0, n);
}

const kB = (bytes) => `${(bytes / 1000).toFixed(2)} kB`;

// The goal is the root entry. Until src/index.ts re-exports what the app needs, the module
// files stand in for it, and the script says so.
async function tryRoot(names) {
  if (!existsSync(join(root, "src/index.ts"))) return false;
  try {
    await bundle(`export { ${names.join(", ")} } from "./src/index.ts";`);
    return true;
  } catch {
    return false;
  }
}

const plain = ["createAdminClient", "parseJoinCode"];
const rootHasPlain = await tryRoot(plain);
const rootHasValidation = rootHasPlain && (await tryRoot([...plain, "validateResponses"]));

const plainEntry = rootHasPlain
  ? `export { createAdminClient, parseJoinCode } from "./src/index.ts";`
  : `export { createAdminClient } from "./src/admin/index.ts";\nexport { parseJoinCode } from "./src/core/join-code.ts";`;
const validatedEntry = rootHasValidation
  ? `export { createAdminClient, parseJoinCode, validateResponses } from "./src/index.ts";`
  : `${plainEntry}\nexport { validateResponses } from "./src/schemas/index.ts";`;

let failed = false;
const results = {};
for (const [name, entry] of [
  ["without validation", plainEntry],
  ["with validation", validatedEntry],
]) {
  let measured;
  try {
    measured = await bundle(entry);
  } catch (error) {
    // platform: browser cannot resolve a Node built-in: the build itself fails.
    console.error(`check-size: the ${name} bundle does not build for the browser:`);
    for (const e of error.errors ?? [error])
      console.error(`  ${e.text ?? e.message}${e.location ? ` (${e.location.file}:${e.location.line})` : ""}`);
    failed = true;
    continue;
  }
  results[name] = measured;
  const node = nodeModulesIn(measured.metafile);
  if (node.length) {
    console.error(`check-size: the ${name} bundle reaches Node-only modules:\n  ${node.join("\n  ")}`);
    failed = true;
  }
}

const source = rootHasPlain
  ? "the root entry (src/index.ts)"
  : "src/admin + src/core/join-code (src/index.ts does not export both yet)";
console.log(`check-size: an app importing createAdminClient and parseJoinCode from ${source}`);
const without = results["without validation"];
const withValidation = results["with validation"];
if (without) {
  const over = without.gzip > BUDGET;
  console.log(
    `  without validation: ${kB(without.gzip)} gzip (${kB(without.minified)} minified), budget ${kB(BUDGET)}: ${over ? "OVER" : "ok"}`,
  );
  if (over) {
    failed = true;
    console.error("  heaviest inputs (minified bytes):");
    for (const [path, bytes] of heaviest(without.metafile)) console.error(`    ${String(bytes).padStart(7)}  ${path}`);
  }
}
if (withValidation) {
  console.log(
    `  with validation (+ validateResponses${rootHasValidation ? "" : " from src/schemas"}): ${kB(withValidation.gzip)} gzip (${kB(withValidation.minified)} minified), no budget`,
  );
}
// Inputs are the whole graph, tree-shaken or not; what counts here is bytes in the output.
const zodBytes = without
  ? heaviest(without.metafile, Infinity).filter(([path, bytes]) => path.includes("node_modules/zod/") && bytes > 0)
  : [];
if (zodBytes.length) {
  console.error("check-size: zod is in the bundle without validation: validation no longer tree-shakes away");
  failed = true;
}
process.exit(failed ? 1 : 0);
