// The console example's production bundle: it builds from the SDK's source through the root
// entry alone, and nothing Node-only is in its graph or its output (no built-in, none of
// src/node, src/release, src/cli), so the page runs in a browser as it is.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole, type ConsoleBuild } from "./build-console.js";

const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
const NODE_ONLY_SOURCE = /^src\/(node|release|cli)\//;

let outDir: string;
let built: ConsoleBuild;

beforeAll(async () => {
  outDir = mkdtempSync(join(tmpdir(), "stratum-console-build-"));
  built = await buildConsole(outDir);
}, 120_000);
afterAll(() => {
  rmSync(outDir, { recursive: true, force: true });
});

/** A module id as the repository names it (`src/admin/index.ts`), or as Vite gave it when outside. */
const fromRoot = (id: string): string => {
  const path = id.split("?")[0]!;
  const rel = relative(repoRoot, path).split(sep).join("/");
  return rel.startsWith("..") ? path : rel;
};

describe("the console bundle", () => {
  it("is built from the SDK's source through the root entry", () => {
    const ids = built.moduleIds.map(fromRoot);
    expect(ids).toContain("src/index.ts");
    expect(ids).toContain("src/admin/watch.ts");
    expect(ids.some((id) => id.startsWith("examples/console/src/main.ts"))).toBe(true);
    // The page's own imports name only the package root (and qrcode), never a path into src/.
    const files = readdirSync(join(repoRoot, "examples/console/src")).filter((f) => f.endsWith(".ts"));
    expect(files).toContain("main.ts");
    for (const file of files) {
      const source = readFileSync(join(repoRoot, "examples/console/src", file), "utf8");
      const specifiers = [...source.matchAll(/\bfrom\s+"([^"]+)"/g)].map((m) => m[1]!);
      for (const specifier of specifiers)
        expect(specifier, `${file} imports ${specifier}`).toMatch(/^(@stratum\/join|qrcode|\.\/[\w-]+\.js)$/);
    }
  });

  it("has no Node built-in or Node-only module in its graph", () => {
    expect(built.moduleIds.length).toBeGreaterThan(10);
    const offending = built.moduleIds
      .map(fromRoot)
      // Vite swaps a built-in for a stub named `__vite-browser-external:<name>` rather than failing.
      .filter(
        (id) =>
          builtins.has(id) ||
          id.startsWith("node:") ||
          id.includes("__vite-browser-external") ||
          NODE_ONLY_SOURCE.test(id),
      );
    expect(offending).toEqual([]);
  });

  it("imports nothing at run time and names no node: module in its code", () => {
    const chunks = built.output.output.filter((o) => o.type === "chunk");
    expect(chunks.length).toBeGreaterThan(0);
    for (const chunk of chunks) {
      expect(
        chunk.imports.filter((i) => !chunk.fileName.includes(i) && !chunks.some((c) => c.fileName === i)),
        chunk.fileName,
      ).toEqual([]);
      expect(
        chunk.dynamicImports.filter((i) => !chunks.some((c) => c.fileName === i)),
        chunk.fileName,
      ).toEqual([]);
      expect(chunk.code).not.toMatch(/["'`]node:[a-z_/]+["'`]/);
      expect(chunk.code).not.toMatch(/\brequire\(\s*["'](fs|path|crypto|net|tls|http|https|os|child_process)["']\s*\)/);
    }
    const html = readFileSync(join(outDir, "index.html"), "utf8");
    expect(html).toMatch(/<script type="module" crossorigin src="\.\/assets\/[^"]+\.js">/);
  });
});
