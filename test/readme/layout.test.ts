// The README's entries and CONTRIBUTING's layout against the package and the tree as they are:
// every entry of package.json's exports is in the README's entries table, every folder of src/
// and every module of the reference server is in CONTRIBUTING's layout table (a module by its
// name or by a `name*.ts` pattern).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));

/** The section `heading` (a `## ` line) of `file`, up to the next `## `. */
function section(file: string, heading: string): string {
  const text = readFileSync(join(root, file), "utf8");
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `${file} has a '${heading}' section`).toBeGreaterThan(0);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}
const layoutSection = () => section("CONTRIBUTING.md", "## Layout");

/** The first cells of the section's table rows, as written (code spans kept). */
function firstCells(section: string): string[] {
  return section
    .split("\n")
    .filter((line) => line.startsWith("| ") && !line.startsWith("| ---"))
    .map((line) => line.split("|")[1]!.trim());
}

describe("the README's entries and CONTRIBUTING's layout", () => {
  it("lists every entry of package.json's exports", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      name: string;
      exports: Record<string, unknown>;
    };
    const entries = Object.keys(pkg.exports)
      .filter((subpath) => subpath !== "./package.json")
      .map((subpath) => (subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`));
    expect(entries).toHaveLength(6);
    const listed = firstCells(section("README.md", "## Entries")).filter((cell) => cell.startsWith("`@stratum/"));
    expect(listed.map((cell) => cell.replace(/`/g, "")).sort()).toEqual(entries.sort());
  });

  it("names every folder of src/", () => {
    const section = layoutSection();
    const folders = readdirSync(join(root, "src"), { withFileTypes: true }).filter((e) => e.isDirectory());
    const missing = folders.map((e) => `src/${e.name}/`).filter((path) => !section.includes(`\`${path}\``));
    expect(missing).toEqual([]);
  });

  it("names every module of the reference server", () => {
    const row = layoutSection()
      .split("\n")
      .find((line) => line.startsWith("| `examples/reference-server/`"));
    expect(row, "a row for examples/reference-server/").toBeDefined();
    const named = [...row!.matchAll(/`([\w.*-]+\.ts)`/g)].map((m) => m[1]!);
    const covers = (file: string) =>
      named.some((name) =>
        name.includes("*")
          ? new RegExp(`^${name.replace(/\./g, "\\.").replace(/\*/g, ".*")}$`).test(file)
          : name === file,
      );
    const modules = readdirSync(join(root, "examples", "reference-server")).filter(
      (file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && file !== "index.ts",
    );
    expect(modules.filter((file) => !covers(file))).toEqual([]);
  });
});
