// An installer bundles its stage 1 into one file for its image: the README's stage 1, bundled
// by esbuild and by rolldown (the two bundlers an installer picks for Node) from the packed
// package, copied alone into an empty directory (no node_modules anywhere above it) and run
// against a reference server: it proves the code (the OPAQUE WebAssembly), makes the machine's
// identity (@peculiar/x509), registers, downloads and verifies the served release (the hashing
// worker) and registers again on it. Its size is held to the goal here (1.2 MB minified);
// its start-up is `npm run bench:startup`'s.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build as esbuild } from "esbuild";
import { rolldown } from "rolldown";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";
import { generateReleaseKeyPair } from "../../src/release/keys.js";
import { signReleaseDirectory } from "../../src/release/manifest.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { supplyConstants } from "../readme/markdown.js";
import { startSnippetFile } from "../readme/processes.js";
import { readmeSnippets, writeSnippets } from "../readme/readme-snippets.js";

/** The goal for the stage 1 bundle, minified. */
const MAX_BUNDLE_BYTES = 1.2 * 1000 * 1000;

/**
 * Preloaded into the bundle's process (from outside its directory): says on stderr when a
 * worker thread starts, so the test sees the hashing worker run from inside the one file.
 */
const WORKER_PROBE = `
const threads = require("node:worker_threads");
const Original = threads.Worker;
threads.Worker = class extends Original {
  constructor(source, options) {
    super(source, options);
    process.stderr.write("worker started: " + (options && options.name) + "\\n");
  }
};
require("node:module").syncBuiltinESMExports();
`;

let project: string;
let work: string;
let releases: string;
let releaseKeyFile: string;
let h: TestServer;
beforeAll(async () => {
  project = ((await packedProject()) as { dir: string }).dir;
  work = mkdtempSync(join(project, "bundle-"));
  writeSnippets(work);
  releases = mkdtempSync(join(tmpdir(), "stratum-bundle-releases-"));
  const dir = join(releases, "0.6.0");
  mkdirSync(join(dir, "os", "blobs"), { recursive: true });
  mkdirSync(join(dir, "sysext"), { recursive: true });
  writeFileSync(join(dir, "os", "blobs", "rootfs.img"), Buffer.alloc(600_000, 7));
  writeFileSync(join(dir, "sysext", "agent.raw"), "agent\n");
  const key = generateReleaseKeyPair();
  await signReleaseDirectory(dir, { release: "0.6.0", keys: [key.privateKeyPem] });
  releaseKeyFile = join(releases, "release-key.pem");
  writeFileSync(releaseKeyFile, key.publicKeyPem);
  writeFileSync(join(releases, "worker-probe.cjs"), WORKER_PROBE);
  h = await startTestServer({ releaseDir: releases, clusterRelease: "0.6.0", timing: { tickMs: 100 } });
}, 300_000);
afterAll(async () => {
  await h?.dispose();
  if (work) rmSync(work, { recursive: true, force: true });
  if (releases) rmSync(releases, { recursive: true, force: true });
});

/** The README's stage 1 with this test's paths, and the installer screen it imports, in `work`. */
function stage1Entry(machineDir: string): string {
  const stage1 = readmeSnippets().find((s) => s.role === "stage-1")!;
  const file = join(work, `stage-1-${Math.random().toString(36).slice(2, 8)}.ts`);
  writeFileSync(
    file,
    supplyConstants(stage1.code, {
      MACHINE_DIR: JSON.stringify(machineDir),
      RELEASE_KEY_FILE: JSON.stringify(releaseKeyFile),
      INSTALLED_RELEASE: JSON.stringify("0.5.0"),
    }),
  );
  return file;
}

const BUNDLERS: Record<string, (entry: string, outfile: string) => Promise<void>> = {
  esbuild: async (entry, outfile) => {
    await esbuild({
      entryPoints: [entry],
      absWorkingDir: project,
      bundle: true,
      platform: "node",
      format: "esm",
      minify: true,
      outfile,
      logLevel: "silent",
    });
  },
  rolldown: async (entry, outfile) => {
    const bundle = await rolldown({ input: entry, cwd: project, platform: "node", logLevel: "silent" });
    try {
      await bundle.write({ file: outfile, format: "esm", minify: true, codeSplitting: false });
    } finally {
      await bundle.close();
    }
  },
};

describe("the README's stage 1 bundled into one file", () => {
  for (const [name, bundle] of Object.entries(BUNDLERS)) {
    it(`by ${name}: runs alone in an empty directory, from the join URL to pending on the served release`, async () => {
      const alone = mkdtempSync(join(tmpdir(), `stratum-stage1-${name}-`));
      const machineDir = mkdtempSync(join(tmpdir(), `stratum-stage1-machine-`));
      try {
        const built = join(work, `stage-1.${name}.mjs`);
        await bundle(stage1Entry(machineDir), built);
        const size = statSync(built).size;
        expect(size, `${name}: ${size} bytes`).toBeLessThanOrEqual(MAX_BUNDLE_BYTES);
        copyFileSync(built, join(alone, "stage-1.mjs"));
        const { url } = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
        const run = startSnippetFile(join(alone, "stage-1.mjs"), {
          cwd: alone,
          env: { STRATUM_JOIN_URL: url },
          nodeArgs: ["--require", join(releases, "worker-probe.cjs")],
        });
        expect(await run.exited(), run.stderr()).toBe(0);
        expect(run.lines[0]).toMatch(/^cluster release 0\.6\.0; the code is valid until \S+$/);
        expect(run.lines.some((l) => /^release 0\.6\.0: \d+ of \d+ bytes$/.test(l))).toBe(true);
        expect(run.lines.at(-1)).toMatch(/^pending: reboot into the installed system/);
        expect(run.stderr()).toContain("worker started: stratum sha256");
        expect(readdirSync(alone)).toEqual(["stage-1.mjs"]);
        expect(statSync(join(machineDir, "release", "0.6.0", "payload", "manifest.json")).isFile()).toBe(true);
      } finally {
        rmSync(alone, { recursive: true, force: true });
        rmSync(machineDir, { recursive: true, force: true });
      }
    }, 300_000);
  }
});
