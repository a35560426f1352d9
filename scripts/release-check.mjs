// What CI checks before it publishes a version (CONTRIBUTING.md, "Cutting a release"): the
// package.json a publish reads, the CHANGELOG section of the version, and the tarball's
// contents, by `npm publish --dry-run` on a fresh build: every file an export, a bin or the
// README names is in it, nothing else is (no source, test, CI or map of a file not shipped),
// and npm corrects nothing in package.json on the way (a correction means the published
// manifest differs from the one in git). `--tag vX.Y.Z` also checks that the tag names this
// version and that CHANGELOG.md has its section; without it, an "Unreleased" section must exist.
//
// Usage: `npm run release:check` (builds dist/ if its inputs changed), or
// `node scripts/release-check.mjs --tag v0.2.0` in the publishing job, before
// `npm publish --provenance`.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Paths that must never be in the tarball. */
const NEVER = [/^src\//, /^test\//, /^scripts\//, /^\.ci\//, /^generated\//, /^api\//, /^node_modules\//, /\.test\./];

/** Every file package.json makes a promise about: export targets, types, bins, main. */
export function promisedFiles(pkg) {
  const files = new Set();
  const walk = (value) => {
    if (typeof value === "string") files.add(value.replace(/^\.\//, ""));
    else if (value && typeof value === "object") for (const v of Object.values(value)) walk(v);
  };
  walk(pkg.exports);
  walk(pkg.bin);
  walk(pkg.main);
  walk(pkg.types);
  files.delete("package.json");
  return [...files].sort();
}

/**
 * What is wrong with a publish of `pkg` whose tarball holds `files` (paths) and for which npm
 * printed `warnings`; `changelog` is CHANGELOG.md, `tag` the git tag being published (or
 * undefined). An empty list: it may be published.
 */
export function releaseProblems({ pkg, files, warnings, changelog, tag }) {
  const problems = [];
  const inTarball = new Set(files);
  for (const file of promisedFiles(pkg))
    if (!inTarball.has(file)) problems.push(`package.json names ${file}, which is not in the tarball`);
  for (const file of files) {
    if (NEVER.some((pattern) => pattern.test(file))) problems.push(`the tarball holds ${file}, which must not ship`);
    if (file.endsWith(".map") && !inTarball.has(file.slice(0, -4)))
      problems.push(`the tarball holds ${file} without the file it maps`);
  }
  for (const needed of ["README.md", "LICENSE", "CHANGELOG.md", "package.json"])
    if (!inTarball.has(needed)) problems.push(`the tarball lacks ${needed}`);
  for (const line of warnings)
    if (/errors corrected|was invalid|removed|renamed/.test(line))
      problems.push(`npm corrected package.json on publish: ${line.trim()}`);
  if (pkg.private) problems.push("package.json is private");
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(String(pkg.version)))
    problems.push(`version ${pkg.version} is not semver`);
  if (pkg.publishConfig?.provenance !== true)
    problems.push("publishConfig.provenance is not true: a publish must carry its provenance");
  if (tag === undefined) {
    if (!/^## \[Unreleased\]/m.test(changelog)) problems.push('CHANGELOG.md has no "## [Unreleased]" section');
  } else {
    if (tag !== `v${pkg.version}`) problems.push(`the tag ${tag} is not v${pkg.version}, the version in package.json`);
    const escaped = String(pkg.version).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    if (!new RegExp(`^## \\[${escaped}\\] - \\d{4}-\\d{2}-\\d{2}$`, "m").test(changelog))
      problems.push(`CHANGELOG.md has no "## [${pkg.version}] - YYYY-MM-DD" section`);
  }
  return problems;
}

async function main(args) {
  const tagAt = args.indexOf("--tag");
  const tag = tagAt >= 0 ? args[tagAt + 1] : undefined;
  await run(process.execPath, [resolve(root, "scripts/packed-project.mjs"), "--build"], { cwd: root });
  // --offline: the dry run needs nothing from the registry; `--ignore-scripts`: dist/ is built above.
  const { stdout, stderr } = await run(
    "npm",
    ["publish", "--dry-run", "--json", "--offline", "--ignore-scripts", ...(tag ? [] : ["--tag", "next"])],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  );
  const report = JSON.parse(stdout);
  const pkg = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8"));
  const entry = report[pkg.name] ?? report;
  const files = entry.files.map((f) => f.path);
  const warnings = stderr.split("\n").filter((line) => /npm warn/.test(line) && !/logged in/.test(line));
  const changelog = readFileSync(resolve(root, "CHANGELOG.md"), "utf8");
  const problems = releaseProblems({ pkg, files, warnings, changelog, tag });
  if (problems.length > 0) {
    for (const problem of problems) console.error(`release-check: ${problem}`);
    process.exit(1);
  }
  console.log(
    `release-check: ${pkg.name}@${pkg.version} may be published: ${files.length} files, ${entry.size} bytes packed, ${entry.unpackedSize} unpacked`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
