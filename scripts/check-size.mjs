#!/usr/bin/env node
// The browser budget, measured as a user meets it: the package packed with `npm pack`,
// installed from the tarball into a fresh project (scripts/packed-project.mjs), and bundled
// by both bundlers a console team uses, Vite and esbuild (minified, ES2022, browser):
//
// - the README's console snippet (the first TypeScript block of "The console" section):
//   the whole bundle, at most 10 kB gzip;
// - the console example (examples/console): the SDK's share of its bundle (the bundle's
//   gzip size minus that of the same bundle with the SDK left out), at most 10 kB gzip;
// - the snippet plus `validateResponses` from `@stratum/join/validate`: printed, no budget
//   (validation is the console's opt-in).
//
// Every bundle without validation must hold no zod, and no bundle may reach a Node built-in
// or a Node-only part of the SDK. Exit 1 past a budget or on either. 1 kB = 1000 B.
// Usage: node scripts/check-size.mjs
import { readFileSync, mkdirSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build as esbuild } from "esbuild";
import { build as vite } from "vite";
import { packedProject } from "./packed-project.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const BUDGET = 10_000;
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
/** Parts of the SDK (in the installed package) that only Node may load. */
const NODE_ONLY =
  /node_modules\/(undici|@peculiar|@serenity-kit|libsql)\/|@stratum\/join\/dist\/(node|release|server|cli)\//;

/** The first ```ts block after the heading `## The console…` of README.md. */
export function consoleSnippet(readme = readFileSync(join(root, "README.md"), "utf8")) {
  const at = readme.search(/^## The console\b/m);
  if (at < 0) throw new Error('README.md has no "## The console" section');
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block) throw new Error('README.md\'s "The console" section has no ```ts block');
  return block[1];
}

/**
 * The modules a snippet imports by a relative path are the reader's own (`// yours:`): the
 * page's widgets. Each is written as a stub exporting the names imported, so that the bundle
 * holds the snippet and the SDK and no more.
 */
export function writeReadersModules(source, dir) {
  for (const [, names, path] of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*"(\.\/[\w.-]+)\.js"/g)) {
    const exports = names
      .split(",")
      .map((name) => name.trim())
      .filter(Boolean)
      .map((name) => `export const ${name} = (...args: unknown[]): any => args;`);
    writeFileSync(join(dir, `${path}.ts`), `${exports.join("\n")}\n`);
  }
}

const gzip = (bytes) => gzipSync(bytes, { level: 9 }).length;
const kB = (bytes) => `${(bytes / 1000).toFixed(2)} kB`;

/** esbuild: { gzip, minified, modules } of `entry`, with `external` left out of the bundle. */
async function withEsbuild(entry, { project, external = [], alias = {} }) {
  const result = await esbuild({
    entryPoints: [entry],
    absWorkingDir: project,
    nodePaths: [join(project, "node_modules"), join(root, "node_modules")],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    metafile: true,
    outdir: join(project, "out-esbuild"),
    external,
    alias,
    loader: { ".css": "empty", ".svg": "empty", ".png": "empty" },
    logLevel: "silent",
  });
  const js = result.outputFiles.filter((f) => f.path.endsWith(".js"));
  const code = Buffer.concat(js.map((f) => f.contents));
  const modules = Object.keys(result.metafile.inputs);
  const imports = Object.values(result.metafile.inputs).flatMap((input) => input.imports.map((i) => i.path));
  return { gzip: gzip(code), minified: code.length, modules: [...modules, ...imports] };
}

/** Vite (Rolldown): the same measure. */
async function withVite(entry, { project, external = [], alias = {} }) {
  const modules = [];
  const output = await vite({
    configFile: false,
    root: project,
    logLevel: "silent",
    resolve: { alias },
    plugins: [
      {
        name: "check-size:graph",
        buildEnd() {
          modules.push(...this.getModuleIds());
        },
      },
    ],
    build: {
      write: false,
      minify: true,
      target: "es2022",
      modulePreload: false,
      rollupOptions: { input: entry, external, output: { format: "es" } },
    },
  });
  const outputs = (Array.isArray(output) ? output : [output]).flatMap((o) => o.output);
  const code = Buffer.concat(outputs.filter((o) => o.type === "chunk").map((o) => Buffer.from(o.code)));
  return { gzip: gzip(code), minified: code.length, modules };
}

const BUNDLERS = { esbuild: withEsbuild, vite: withVite };

function problemsIn(modules, { allowZod }) {
  const problems = [];
  for (const id of new Set(modules)) {
    if (id.startsWith("node:") || builtins.has(id) || id.includes("__vite-browser-external"))
      problems.push(`a Node built-in: ${id}`);
    else if (NODE_ONLY.test(id)) problems.push(`Node-only code: ${id}`);
    else if (!allowZod && /node_modules\/zod\//.test(id)) problems.push(`zod without validation: ${id}`);
  }
  return problems;
}

const project = (await packedProject()).dir;
const work = join(project, "size-check");
mkdirSync(work, { recursive: true });
const snippet = join(work, "console-snippet.ts");
writeFileSync(snippet, consoleSnippet());
writeReadersModules(consoleSnippet(), work);
const validated = join(work, "console-snippet-validated.ts");
writeFileSync(
  validated,
  // Used, so that no bundler drops it: an app passes it to createAdminClient({ validate }).
  `import { validateResponses } from "@stratum/join/validate";\n(globalThis as Record<string, unknown>).validate = validateResponses;\n${consoleSnippet()}`,
);
const consoleMain = join(root, "examples/console/src/main.ts");
// The console example imports the package by name: point that name at the installed tarball.
const consoleAlias = { "@stratum/join": join(project, "node_modules/@stratum/join") };

let failed = false;
console.log("check-size: the packed package installed in a fresh project, bundled for the browser (gzip, level 9)");
for (const [name, bundle] of Object.entries(BUNDLERS)) {
  const plain = await bundle(snippet, { project });
  const withValidation = await bundle(validated, { project });
  const app = await bundle(consoleMain, { project, alias: consoleAlias });
  // An alias is resolved before `external` is looked at: leave it out to leave the SDK out.
  const appWithoutSdk = await bundle(consoleMain, {
    project,
    external: name === "vite" ? [/^@stratum\/join/] : ["@stratum/join", "@stratum/join/*"],
  });
  const sdkShare = app.gzip - appWithoutSdk.gzip;
  const lines = [
    [`README console snippet`, plain.gzip, `${kB(plain.minified)} minified`],
    [`console example, the SDK's share`, sdkShare, `whole page ${kB(app.gzip)}`],
  ];
  console.log(`  ${name}:`);
  for (const [what, size, extra] of lines) {
    const over = size > BUDGET;
    failed ||= over;
    console.log(`    ${what}: ${kB(size)} (${extra}), budget ${kB(BUDGET)}: ${over ? "OVER" : "ok"}`);
  }
  console.log(`    README console snippet with validateResponses: ${kB(withValidation.gzip)}, no budget`);
  for (const [what, measured, allowZod] of [
    ["the snippet", plain, false],
    ["the console example", app, false],
    ["the snippet with validation", withValidation, true],
  ]) {
    const problems = problemsIn(measured.modules, { allowZod });
    if (problems.length) {
      failed = true;
      console.error(
        `    ${what} (${name}) reaches what a browser bundle must not:\n      ${problems.join("\n      ")}`,
      );
    }
  }
}
process.exit(failed ? 1 : 0);
