// The package as a user gets it: built, packed with `npm pack`, and installed from the tarball
// into a fresh project (`"type": "module"`, strict TypeScript) in the system's temp directory.
// The size check, the bundler tests and the README tests all use this project, never `src/`.
//
// The project is keyed by a hash of everything that goes into the tarball, so it is made once
// per change and shared by every test process (a lock directory serialises its making). Set
// STRATUM_PACKED_DIR to use another parent directory.
//
// Usage from a script or a test: `const project = await packedProject();` → { dir, tarball }.
// Usage from the shell: `node scripts/packed-project.mjs` prints the project's directory;
// `node scripts/packed-project.mjs --build` only builds dist/ if its inputs changed.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** What the project installs beside the package, at the repository's own versions. */
const PEERS = ["typescript", "@types/node", "msw", "openapi-msw", "vitest"];

/** Inputs of the tarball: a change to any of them makes a new project. */
const INPUTS = [
  "package.json",
  "tsup.config.ts",
  "README.md",
  "openapi.yaml",
  "LICENSE",
  "CHANGELOG.md",
  "src",
  "browser",
  "generated",
  "docs",
  // built into the package as the stratum-join-reference-server bin
  "examples/reference-server",
];

function* files(path) {
  if (!existsSync(path)) return;
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path).sort()) {
      if (name === "api" && path.endsWith("docs")) continue; // the generated API reference
      yield* files(join(path, name));
    }
  } else yield path;
}

/** A hash of every input of the tarball (paths and contents). */
export function packageInputsHash() {
  const hash = createHash("sha256");
  for (const input of INPUTS) {
    for (const file of files(join(root, input))) {
      hash.update(relative(root, file)).update("\0").update(readFileSync(file)).update("\0");
    }
  }
  return hash.digest("hex").slice(0, 16);
}

function installedVersion(name) {
  return JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/**
 * Builds dist/ unless it was built from exactly the current inputs (dist/.inputs-hash), so
 * that the tests, the package checks and the API reports of one `npm test` share one build.
 */
export async function ensureBuilt() {
  const hash = packageInputsHash();
  const stamp = join(root, "dist", ".inputs-hash");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === hash) return;
  await run(npm, ["run", "build", "--silent"], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  writeFileSync(stamp, hash);
}

/**
 * The fresh project with the packed package installed, made if it does not exist yet.
 * @returns {Promise<{ dir: string, tarball: string, hash: string }>}
 */
export async function packedProject() {
  const hash = packageInputsHash();
  const parent = process.env.STRATUM_PACKED_DIR ?? join(tmpdir(), "stratum-join-packed");
  const base = join(parent, hash);
  const dir = join(base, "project");
  const ready = join(base, "ready.json");
  const lock = `${base}.lock`;
  mkdirSync(parent, { recursive: true });
  while (!existsSync(ready)) {
    try {
      mkdirSync(lock);
    } catch {
      // Another process is making it: wait for it (a lock older than 10 minutes is stale).
      if (Date.now() - statSync(lock, { throwIfNoEntry: false })?.mtimeMs > 600_000) rmSync(lock, { recursive: true });
      await sleep(500);
      continue;
    }
    try {
      if (!existsSync(ready)) await make(base, dir, ready);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  const { tarball } = JSON.parse(readFileSync(ready, "utf8"));
  return { dir, tarball, hash };
}

async function make(base, dir, ready) {
  rmSync(base, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const quiet = { cwd: root, maxBuffer: 64 * 1024 * 1024 };
  await ensureBuilt();
  const { stdout } = await run(npm, ["pack", "--json", "--pack-destination", base], quiet);
  const tarball = join(base, JSON.parse(stdout)[0].filename);
  writeFileSync(
    join(dir, "package.json"),
    `${JSON.stringify({ name: "fresh-project", private: true, type: "module" }, null, 2)}\n`,
  );
  const peers = PEERS.map((name) => `${name}@${installedVersion(name)}`);
  // --prefer-offline: the repository's own install has just put every version in the cache.
  await run(npm, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball, ...peers], {
    ...quiet,
    cwd: dir,
  });
  writeFileSync(ready, JSON.stringify({ tarball }));
  pruneOlder(dirname(base), base);
}

/** Projects kept besides the newest: a bench may compare this build with the one before. */
const KEEP_OLDER = 2;

/**
 * Removes the projects of older builds (about 100 MB each) but the {@link KEEP_OLDER} newest,
 * so that editing and testing for a day does not fill the temporary directory. One made or
 * locked within the last hour may be in use by another checkout's tests, and is left alone.
 */
function pruneOlder(parent, current) {
  const older = readdirSync(parent, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !existsSync(`${join(parent, e.name)}.lock`))
    .map((e) => join(parent, e.name))
    .filter((path) => path !== current)
    .map((path) => ({ path, mtime: statSync(path).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  const hourAgo = Date.now() - 3_600_000;
  for (const { path, mtime } of older.slice(KEEP_OLDER))
    if (mtime < hourAgo) rmSync(path, { recursive: true, force: true });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes("--build")) await ensureBuilt();
  else console.log((await packedProject()).dir);
}
