// Every relative link of the Markdown a reader browses resolves: in the repository (every tracked
// .md file) and in the packed package (every .md file the tarball ships, README.md first), to a
// file that exists there and, with an anchor, to a heading or an `<a id>` of that file. A link to
// a file the package does not ship fails the tarball's half.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";
import { anchors, relativeLinks } from "./markdown.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));

/** What is wrong with each relative link of the .md files under `base` (paths relative to it). */
function brokenLinks(base: string, files: string[]): string[] {
  const problems: string[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  const anchorsIn = (file: string) => {
    if (!anchorsOf.has(file)) anchorsOf.set(file, anchors(readFileSync(file, "utf8")));
    return anchorsOf.get(file)!;
  };
  for (const file of files) {
    const path = join(base, file);
    for (const { target, line } of relativeLinks(readFileSync(path, "utf8"))) {
      const at = `${file}:${line} → ${target}`;
      const [pathPart = "", anchor] = decodeURI(target).split("#", 2);
      const resolved = pathPart === "" ? path : resolve(dirname(path), pathPart);
      if (resolved !== base && !resolved.startsWith(base + sep)) {
        problems.push(`${at}: points outside (${relative(base, resolved)})`);
        continue;
      }
      if (!existsSync(resolved)) {
        problems.push(`${at}: no such file`);
        continue;
      }
      if (anchor === undefined || anchor === "") continue;
      if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) {
        problems.push(`${at}: an anchor into a file that is not Markdown`);
      } else if (!anchorsIn(resolved).has(anchor)) {
        problems.push(`${at}: no heading or <a id> "${anchor}" in ${relative(base, resolved)}`);
      }
    }
  }
  return problems;
}

/** Every .md file under `dir`, relative to it. */
function markdownFiles(dir: string, prefix = ""): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const name = join(prefix, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : markdownFiles(dir, name);
    return name.endsWith(".md") ? [name] : [];
  });
}

describe("relative links in the repository", () => {
  it("every tracked .md file's links resolve (README.md, docs/, CHANGELOG.md, examples/)", async () => {
    const { stdout } = await run("git", ["ls-files", "*.md"], { cwd: root });
    const files = stdout.split("\n").filter(Boolean);
    expect(files).toEqual(expect.arrayContaining(["README.md", "CHANGELOG.md", "docs/protocol.md"]));
    expect(relativeLinks(readFileSync(join(root, "README.md"), "utf8")).length).toBeGreaterThan(10);
    expect(brokenLinks(resolve(root), files)).toEqual([]);
  });

  it("the checker finds a broken file link and a broken anchor", () => {
    const dir = mkdtempSync(join(tmpdir(), "stratum-links-"));
    try {
      const readme = "# T\n\n## Real heading\n\nSee [a](missing.md), [b](#real-heading), [c](#nope), `[d](x.md)`.\n";
      writeFileSync(join(dir, "README.md"), readme);
      expect(brokenLinks(dir, ["README.md"])).toEqual([
        "README.md:5 → missing.md: no such file",
        'README.md:5 → #nope: no heading or <a id> "nope" in README.md',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("relative links in the packed package", () => {
  let unpacked: string;
  beforeAll(async () => {
    const { tarball } = (await packedProject()) as { tarball: string };
    unpacked = mkdtempSync(join(tmpdir(), "stratum-tarball-"));
    await run("tar", ["-xzf", tarball, "-C", unpacked]);
  }, 600_000);
  afterAll(() => rmSync(unpacked, { recursive: true, force: true }));

  it("every .md file the tarball ships has links that resolve inside the package", () => {
    const base = join(unpacked, "package");
    const files = markdownFiles(base);
    expect(files).toEqual(expect.arrayContaining(["README.md", "CHANGELOG.md", join("docs", "protocol.md")]));
    expect(brokenLinks(base, files)).toEqual([]);
  });
});
