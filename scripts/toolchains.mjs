// The other runtimes and compilers the packed package is tested with, beside this repository's
// Node and TypeScript: Bun and Deno from their npm packages, the oldest TypeScript the package
// supports and TypeScript 7. Installed from the registry at the versions pinned here (npm
// aliases for the two TypeScripts) into one directory in the system's temp directory, shared
// by every test process and made once per set of versions (a lock directory serialises it).
//
// Installed with --ignore-scripts: bun's and deno's postinstall scripts would only copy the
// binary their platform package already holds, or download one when it is missing. The tests
// run the binary of the platform package itself, so nothing but registry packages is fetched.
//
// Usage: `const tools = await toolchains();` → { bun, deno, tsc: { oldest, "7" } } (paths);
// from the shell, `node scripts/toolchains.mjs` prints them.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * The pinned versions. `typescript-oldest` is the oldest TypeScript the package's types
 * support (the README says so); TypeScript 7, the native compiler, is the `typescript`
 * package's 7.x, its binary in a platform package.
 */
export const TOOLCHAIN_VERSIONS = {
  bun: "1.4.4",
  deno: "2.9.6",
  "typescript-oldest": "5.7.3",
  "typescript-7": "7.0.2",
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/** The platform packages holding the two runtimes' binaries, for this machine. */
function binaries(dir) {
  const arch = process.arch;
  const platform = process.platform;
  const modules = join(dir, "node_modules");
  return {
    bun: join(modules, "@oven", `bun-${platform}-${arch === "arm64" ? "aarch64" : arch}`, "bin", "bun"),
    deno: join(modules, "@deno", `${platform}-${arch}-glibc`, "deno"),
    tsc: {
      oldest: join(modules, "typescript-oldest", "bin", "tsc"),
      7: join(modules, "typescript-7", "bin", "tsc"),
    },
  };
}

/**
 * The toolchains, installed if they are not yet.
 * @returns {Promise<{ dir: string, bun: string, deno: string, tsc: { oldest: string, "7": string } }>}
 */
export async function toolchains() {
  const hash = createHash("sha256").update(JSON.stringify(TOOLCHAIN_VERSIONS)).digest("hex").slice(0, 12);
  const parent = process.env.STRATUM_TOOLCHAINS_DIR ?? join(tmpdir(), "stratum-join-toolchains");
  const dir = join(parent, hash);
  const ready = join(dir, "ready");
  const lock = `${dir}.lock`;
  mkdirSync(parent, { recursive: true });
  while (!existsSync(ready)) {
    try {
      mkdirSync(lock);
    } catch {
      // Another process installs them: wait (a lock older than 10 minutes is stale).
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })?.mtimeMs > 600_000) rmSync(lock, { recursive: true });
      await sleep(500);
      continue;
    }
    try {
      if (!existsSync(ready)) await install(dir, ready);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  const paths = binaries(dir);
  for (const path of [paths.bun, paths.deno, paths.tsc.oldest, paths.tsc[7]])
    if (!existsSync(path)) throw new Error(`${path} is missing: the platform package did not install for this machine`);
  return { dir, ...paths };
}

async function install(dir, ready) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "toolchains", private: true }, null, 2)}\n`);
  const v = TOOLCHAIN_VERSIONS;
  const specs = [
    `bun@${v.bun}`,
    `deno@${v.deno}`,
    `typescript-oldest@npm:typescript@${v["typescript-oldest"]}`,
    `typescript-7@npm:typescript@${v["typescript-7"]}`,
  ];
  await run(npm, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", ...specs], {
    cwd: dir,
    maxBuffer: 64 * 1024 * 1024,
  });
  writeFileSync(ready, JSON.stringify(readFileSync(join(dir, "package.json"), "utf8")));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await toolchains(), null, 2));
}
