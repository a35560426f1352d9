// The folder rules of src/ (CONTRIBUTING.md, "Layers"), read off the import statements of every
// source file: the browser-safe folders and the shared protocol code never reach the joiner or
// the founder, the founder's half never imports the joiner's, and what a browser entry loads
// (statically or by `import()`) never names a Node built-in.
import { builtinModules } from "node:module";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const src = join(root, "src");

/** Every .ts file under src/, as a path relative to the repository (`src/core/x.ts`). */
function sourceFiles(dir = src): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [relative(root, path)] : [];
  });
}

interface Import {
  /** The specifier as written. */
  specifier: string;
  /** `import type` / `export type`: erased at build, loads nothing. */
  typeOnly: boolean;
}

// Static `import … from "x"`, `export … from "x"`, side-effect `import "x"`, and `import("x")`.
// Comments are stripped first, so an example in a doc comment is not taken for an import.
const STATIC = /(?:^|[;\n])\s*(import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s+)?["']([^"']+)["']/g;
const DYNAMIC = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

function importsOf(file: string): Import[] {
  const text = readFileSync(join(root, file), "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  const found: Import[] = [];
  for (const m of text.matchAll(STATIC)) found.push({ specifier: m[3]!, typeOnly: m[2] !== undefined });
  for (const m of text.matchAll(DYNAMIC)) found.push({ specifier: m[1]!, typeOnly: false });
  return found;
}

/** The source file a relative specifier names (`./x.js` → `src/…/x.ts`), or undefined for a package. */
function target(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  return relative(root, resolve(root, dirname(file), specifier)).replace(/\.js$/, ".ts");
}

const NODE_BUILTINS = new Set(builtinModules);
const isBuiltin = (specifier: string) => specifier.startsWith("node:") || NODE_BUILTINS.has(specifier.split("/")[0]!);

const files = sourceFiles();
const graph = new Map(files.map((file) => [file, importsOf(file)]));
const folderOf = (file: string) => file.split("/")[1]!;

/** Each file of `folders` that imports a file of `forbidden`, as `from → to`. */
function crossings(folders: readonly string[], forbidden: readonly string[]): string[] {
  const out: string[] = [];
  for (const [file, imports] of graph) {
    if (!folders.includes(folderOf(file))) continue;
    for (const { specifier } of imports) {
      const to = target(file, specifier);
      if (to !== undefined && forbidden.includes(folderOf(to))) out.push(`${file} → ${to}`);
    }
  }
  return out;
}

/** The Node built-ins reachable from `entry` by imports that load code, with the path to each. */
function builtinsReachedFrom(entry: string): string[] {
  const reached: string[] = [];
  const seen = new Set<string>();
  const walk = (file: string, path: string[]) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const { specifier, typeOnly } of graph.get(file) ?? []) {
      if (typeOnly) continue;
      if (isBuiltin(specifier)) reached.push([...path, file, specifier].join(" → "));
      const to = target(file, specifier);
      if (to !== undefined) walk(to, [...path, file]);
    }
  };
  walk(entry, []);
  return reached;
}

describe("the folder rules of src/", () => {
  it("the scan sees the imports it checks", () => {
    // Without this, a scanner that found nothing would pass every rule below.
    expect(files.length).toBeGreaterThan(100);
    expect(crossings(["node"], ["protocol"]).length).toBeGreaterThan(0);
    expect(builtinsReachedFrom("src/node/index.ts").length).toBeGreaterThan(0);
    expect(importsOf("src/protocol/opaque.ts").map((i) => i.specifier)).toContain("@serenity-kit/opaque");
  });

  it("src/core, src/errors and src/protocol import neither the joiner nor the founder", () => {
    expect(crossings(["core", "errors", "protocol"], ["node", "server", "cli", "transport"])).toEqual([]);
  });

  it("src/protocol imports only errors, core and itself", () => {
    const allowed = new Set(["errors", "core", "protocol"]);
    const other = [...new Set(files.map(folderOf))].filter((folder) => !allowed.has(folder));
    expect(crossings(["protocol"], other)).toEqual([]);
  });

  it("the founder's half (src/server) never imports the joiner's (src/node)", () => {
    expect(crossings(["server"], ["node", "cli", "transport"])).toEqual([]);
  });

  it("the publisher's tools (src/release) import neither the joiner nor its transport", () => {
    expect(crossings(["release"], ["node", "server", "cli", "transport"])).toEqual([]);
  });

  it("the joiner's release transport (src/transport) imports neither the joiner nor the founder", () => {
    expect(crossings(["transport"], ["node", "server", "cli"])).toEqual([]);
  });

  it("the browser entries never reach a Node built-in", () => {
    for (const entry of ["src/index.ts", "src/validate/index.ts", "src/testing/index.ts"]) {
      expect(builtinsReachedFrom(entry), entry).toEqual([]);
    }
  });
});
