// The error codes have one home, src/errors/codes.ts: these tests hold it to every code thrown
// in src/ (read from the source, so a code thrown nowhere or a throw site the table does not
// know fails), to openapi.yaml's problem codes, and to the two pages that list the codes for
// users, docs/protocol.md §19.2–19.3 and docs/errors.md.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { errorCodeClasses } from "../../src/errors/codes.js";
import { STRATUM_ERROR_CODES } from "../../src/errors/index.js";
import { spec } from "../spec/spec.js";

const root = new URL("../..", import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

const sources = sourceFiles(join(root, "src")).map((path) => ({
  file: relative(root, path),
  text: readFileSync(path, "utf8"),
}));

/** The classes that are StratumErrors: StratumError and whatever extends one, in any file. */
function errorClasses(): Set<string> {
  const parents = new Map<string, string>();
  for (const { text } of sources)
    for (const m of text.matchAll(/\bclass\s+(\w+)\s+extends\s+(\w+)/g)) parents.set(m[1]!, m[2]!);
  const classes = new Set(["StratumError"]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [child, parent] of parents)
      if (classes.has(parent) && !classes.has(child)) grew = classes.add(child).has(child);
  }
  return classes;
}

/** The text of a call's first argument, from just after its `(` to the first top-level `,` or `)`. */
function firstArgument(text: string, start: number): string {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      if (depth === 0) return text.slice(start, i);
      depth--;
    } else if (c === "," && depth === 0) return text.slice(start, i);
  }
  return text.slice(start);
}

/**
 * Every code written at a throw site of src/ (`new SomeError("CODE"` and `super("CODE"` in a
 * StratumError class, a code in either branch of a `?:` too), with the classes it is thrown as.
 */
function thrownCodes(): { thrown: Map<string, Set<string>>; files: Map<string, Set<string>> } {
  const classes = errorClasses();
  const thrown = new Map<string, Set<string>>();
  const files = new Map<string, Set<string>>();
  const add = (code: string, cls: string, file: string) => {
    if (!thrown.has(code)) thrown.set(code, new Set());
    thrown.get(code)!.add(cls);
    if (!files.has(code)) files.set(code, new Set());
    files.get(code)!.add(file);
  };
  for (const { file, text } of sources) {
    for (const m of text.matchAll(/\bnew\s+(\w+)\(|\bsuper\(/g)) {
      let cls = m[1];
      if (cls === undefined) {
        // super(…): the class it is in.
        const enclosing = [...text.slice(0, m.index).matchAll(/\bclass\s+(\w+)\s+extends\s+(\w+)/g)].pop();
        cls = enclosing?.[1];
      }
      if (!cls || !classes.has(cls)) continue;
      const argument = firstArgument(text, m.index + m[0].length);
      for (const literal of argument.matchAll(/"([A-Z][A-Z0-9_]+)"/g)) add(literal[1]!, cls, file);
    }
  }
  return { thrown, files };
}

/** openapi.yaml's `ProblemCode`. */
const apiCodes = spec.components.schemas.ProblemCode.enum as string[];

/** The codes in backticks of the first column of the table under `heading`, up to the next heading. */
function tableCodes(page: string, heading: string, column = 0): string[] {
  const text = readFileSync(join(root, page), "utf8");
  const start = text.indexOf(heading);
  expect(start, `${page}: ${heading}`).toBeGreaterThanOrEqual(0);
  const end = text.slice(start + heading.length).search(/\n#{2,3} /);
  const section = text.slice(start, end < 0 ? undefined : start + heading.length + end);
  return section
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .flatMap((line) =>
      [...(line.split("|")[column + 1] ?? "").matchAll(/`([A-Z][A-Z0-9_<>a-z]+)`/g)].map((m) => m[1]!),
    );
}

const sorted = (codes: Iterable<string>) => [...new Set(codes)].sort();
const CLI_CODES = ["USAGE", "NO_UPGRADE", "STILL_WAITING"];

describe("error codes: one list, held to the source, the spec and the docs", () => {
  const { thrown, files } = thrownCodes();

  it("lists every code thrown in src/, the API's problem codes, and nothing else", () => {
    expect(thrown.size).toBeGreaterThan(30); // the scan found the throw sites
    expect(sorted(STRATUM_ERROR_CODES)).toEqual(sorted([...thrown.keys(), ...apiCodes]));
    expect(STRATUM_ERROR_CODES).toHaveLength(new Set(STRATUM_ERROR_CODES).size);
  });

  it("names, for each code, exactly the classes it is thrown as", () => {
    const listed = Object.fromEntries(
      Object.entries(errorCodeClasses)
        .filter(([code]) => !apiCodes.includes(code))
        .map(([code, classes]) => [code, sorted(classes)]),
    );
    const found = Object.fromEntries([...thrown].map(([code, classes]) => [code, sorted(classes)]));
    expect(listed).toEqual(found);
    for (const code of apiCodes)
      expect(errorCodeClasses[code as keyof typeof errorCodeClasses]).toEqual(["StratumApiError"]);
  });

  it("docs/protocol.md lists the API's codes in §19.2 and every other code in §19.3", () => {
    expect(sorted(tableCodes("docs/protocol.md", "### 19.2 The API's codes"))).toEqual(sorted(apiCodes));
    expect(sorted(tableCodes("docs/protocol.md", "### 19.3 The SDK's own codes"))).toEqual(
      sorted([...STRATUM_ERROR_CODES.filter((code) => !apiCodes.includes(code)), "HTTP_<status>"]),
    );
  });

  it("docs/errors.md has a row for every code", () => {
    expect(sorted(tableCodes("docs/errors.md", "## Every code", 1))).toEqual(
      sorted([...STRATUM_ERROR_CODES, "HTTP_<status>"]),
    );
  });

  it("has the command's own codes thrown by the command only", () => {
    for (const code of CLI_CODES) {
      expect(STRATUM_ERROR_CODES).toContain(code);
      expect(
        [...(files.get(code) ?? [])].filter((file) => !file.startsWith("src/cli/")),
        code,
      ).toEqual([]);
    }
  });
});
