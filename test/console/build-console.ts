/**
 * Builds the console example with Vite's JS API (its own vite.config.ts, into a temp dir) and
 * serves the result on loopback, for the console's tests. A production build rather than the
 * dev server: no dependency pre-bundling or reload in the middle of a test, and it is the
 * bundle a browser would really get.
 */
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin, type Rolldown } from "vite";

/** The console example's directory. */
export const CONSOLE_DIR = fileURLToPath(new URL("../../examples/console/", import.meta.url));

/** A finished build. */
export interface ConsoleBuild {
  outDir: string;
  /** What Vite wrote (chunks and assets). */
  output: Rolldown.RolldownOutput;
  /** Every module of the graph, tree-shaken ones included, as Vite resolved them. */
  moduleIds: string[];
}

/** Builds the console into `outDir` (written, so it can be served). */
export async function buildConsole(outDir: string): Promise<ConsoleBuild> {
  const moduleIds: string[] = [];
  // The graph, not the output: a module tree-shaken to nothing still says it was reachable.
  const recordGraph: Plugin = {
    name: "test:record-graph",
    buildEnd() {
      moduleIds.push(...this.getModuleIds());
    },
  };
  const result = await build({
    configFile: join(CONSOLE_DIR, "vite.config.ts"),
    root: CONSOLE_DIR,
    logLevel: "warn",
    plugins: [recordGraph],
    build: { outDir, emptyOutDir: true, write: true },
  });
  const output = Array.isArray(result) ? result[0] : result;
  if (!output || !("output" in output)) throw new Error("vite build did not return its output");
  return { outDir, output, moduleIds };
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json",
};

/** Serves `dir` on 127.0.0.1 (a free port); `/` is index.html. Returns its URL and a close. */
export async function serveStatic(dir: string): Promise<{ url: string; close(): Promise<void> }> {
  const root = normalize(dir + sep);
  const server = createServer((req, res) => {
    void (async () => {
      const pathname = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
      const file = normalize(join(root, pathname === "/" ? "index.html" : pathname));
      const found = file.startsWith(root) && (await stat(file).catch(() => undefined))?.isFile();
      if (!found) {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found");
        return;
      }
      res.writeHead(200, {
        "content-type": TYPES[extname(file)] ?? "application/octet-stream",
        "cache-control": "no-store",
      });
      createReadStream(file).pipe(res);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
