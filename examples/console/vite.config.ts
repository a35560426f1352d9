/**
 * Vite for the console example. `@stratum/join` is aliased to the SDK's source so the page
 * builds without `npm run build` first, exactly as an app would import the published package's
 * root entry. A guard makes the build fail if anything Node-only reaches the page.
 */
import { builtinModules } from "node:module";
import { relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));
const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
/** The SDK's Node-only source (the `./node` entry and what only it uses). */
const NODE_ONLY_SOURCE = /^src\/(node|release|cli)\//;

/**
 * Refuses a Node built-in or the SDK's Node-only source anywhere in the page's graph. Vite
 * would otherwise swap a built-in for an empty stub with only a warning, and the page would
 * break at run time, far from the import that caused it.
 */
export function browserOnly(): Plugin {
  return {
    name: "stratum-console:browser-only",
    enforce: "pre",
    async resolveId(source, importer, options) {
      if (builtins.has(source)) this.error(`"${source}" is a Node built-in, imported by ${importer ?? "the page"}`);
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
      if (resolved && !resolved.external) {
        const path = relative(repoRoot, resolved.id.split("?")[0]!).split(sep).join("/");
        if (NODE_ONLY_SOURCE.test(path)) this.error(`${path} is Node-only, imported by ${importer ?? "the page"}`);
      }
      return resolved;
    },
  };
}

export default defineConfig({
  root: here,
  // Relative asset URLs: the built page works from any directory, a test's temp dir included.
  base: "./",
  plugins: [browserOnly()],
  resolve: {
    // The exact name only: `@stratum/join/node` must not be rewritten to a path under src/index.ts.
    alias: [{ find: /^@stratum\/join$/, replacement: fileURLToPath(new URL("../../src/index.ts", import.meta.url)) }],
  },
  server: { host: "127.0.0.1", port: 5173 },
  preview: { host: "127.0.0.1", port: 4173 },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
  },
});
