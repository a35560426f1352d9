// `npm run release:check` (scripts/release-check.mjs), what CI runs before it publishes: on
// this repository it passes, and each rule it holds refuses a publish that breaks it.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { promisedFiles, releaseProblems } from "../../scripts/release-check.mjs";
import { runToEnd } from "../readme/processes.js";

const root = new URL("../../", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as Record<string, unknown>;
const changelog = readFileSync(new URL("CHANGELOG.md", root), "utf8");

type Check = (input: {
  pkg: Record<string, unknown>;
  files: string[];
  warnings: string[];
  changelog: string;
  tag: string | undefined;
}) => string[];
const problems = releaseProblems as Check;

/** A tarball that keeps every promise of package.json. */
const good = (): string[] => [
  ...(promisedFiles(pkg) as string[]),
  "README.md",
  "LICENSE",
  "CHANGELOG.md",
  "package.json",
];

describe("release:check", () => {
  it("passes on this repository: npm publish --dry-run on a fresh build", async () => {
    // npm keeps its cache and logs under HOME: a home of its own, so none land in the work tree.
    const home = mkdtempSync(join(tmpdir(), "stratum-release-check-"));
    const run = await runToEnd("npm", ["run", "--silent", "release:check"], {
      cwd: root.pathname,
      env: { HOME: home },
    }).finally(() => rmSync(home, { recursive: true, force: true }));
    expect(run.output).toMatch(/release-check: @stratum\/join@\S+ may be published: \d+ files/);
    expect(run.code).toBe(0);
  }, 600_000);

  it("accepts a tarball that keeps package.json's promises", () => {
    expect(problems({ pkg, files: good(), warnings: [], changelog, tag: undefined })).toEqual([]);
  });

  it("refuses a tarball without a file an export or a bin names", () => {
    const files = good().filter((f) => f !== "dist/cli/main.js");
    expect(problems({ pkg, files, warnings: [], changelog, tag: undefined })).toEqual([
      "package.json names dist/cli/main.js, which is not in the tarball",
    ]);
  });

  it("refuses a tarball with source, tests or a map without its file", () => {
    const files = [...good(), "src/index.ts", "test/x.test.ts", "dist/gone.js.map"];
    expect(problems({ pkg, files, warnings: [], changelog, tag: undefined })).toEqual([
      "the tarball holds src/index.ts, which must not ship",
      "the tarball holds test/x.test.ts, which must not ship",
      "the tarball holds dist/gone.js.map without the file it maps",
    ]);
  });

  it("refuses a package.json npm corrects on publish", () => {
    const warnings = ['npm warn publish "bin[x]" script name dist/x.js was invalid and removed'];
    expect(problems({ pkg, files: good(), warnings, changelog, tag: undefined })).toHaveLength(1);
  });

  it("refuses a publish without provenance", () => {
    const unproven = { ...pkg, publishConfig: { access: "public" } };
    expect(problems({ pkg: unproven, files: good(), warnings: [], changelog, tag: undefined })).toEqual([
      "publishConfig.provenance is not true: a publish must carry its provenance",
    ]);
  });

  it("refuses a tag that is not the version, and a version without its CHANGELOG section", () => {
    const version = String(pkg.version);
    expect(problems({ pkg, files: good(), warnings: [], changelog, tag: "v99.0.0" })).toContain(
      `the tag v99.0.0 is not v${version}, the version in package.json`,
    );
    expect(problems({ pkg, files: good(), warnings: [], changelog: "# Changelog\n", tag: `v${version}` })).toEqual([
      `CHANGELOG.md has no "## [${version}] - YYYY-MM-DD" section`,
    ]);
    const released = `# Changelog\n\n## [${version}] - 2026-01-31\n`;
    expect(problems({ pkg, files: good(), warnings: [], changelog: released, tag: `v${version}` })).toEqual([]);
  });
});
