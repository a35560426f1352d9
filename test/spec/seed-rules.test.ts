// docs/seed-rules.md lists every behavioural rule of the four seed pages with the tests that
// hold it. This reads the page and holds it to the tests as they are: every test it names must
// exist (by file and name), every held or fixed rule must name one, every rule left must say
// why, and the counts at its end must be the rows' own.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
const page = readFileSync(join(root, "docs/seed-rules.md"), "utf8");

/** One row of the matrix. */
interface Rule {
  id: string;
  status: string;
  who: string;
  heldBy: string;
  tests: { file: string; name: string }[];
}

/** The rows of the matrix's tables (a row's first cell is its number: A1, B12, …). */
function rules(text: string): Rule[] {
  const out: Rule[] = [];
  for (const line of text.split("\n")) {
    const cells = line.split(" | ");
    const id = /^\| ([A-E]\d+) $/.exec(`${cells[0]} `)?.[1];
    if (!id || cells.length < 5) continue;
    const [, , who = "", status = "", ...rest] = cells;
    const heldBy = rest.join(" | ").replace(/ \|$/, "");
    const tests = [...heldBy.matchAll(/`(test\/[^`]+)` › "((?:[^"\\]|\\.)*)"/g)].map((m) => ({
      file: m[1]!,
      name: m[2]!,
    }));
    out.push({ id, status: status.trim(), who: who.trim(), heldBy, tests });
  }
  return out;
}

/** The names of the tests a file declares: it("…"), test('…'), it.each(…)(`…`), it.skipIf(…)("…"). */
function testNames(file: string): Set<string> {
  const source = readFileSync(join(root, file), "utf8");
  const names = new Set<string>();
  const call =
    /\b(?:it|test)(?:\.(?:each|skipIf|runIf|concurrent|sequential)\([^)]*\))*\(\s*(["'`])((?:\\.|(?!\1)[^\\])*)\1/gs;
  for (const m of source.matchAll(call)) names.add(m[2]!.replace(/\\(["'`\\])/g, "$1"));
  return names;
}

const all = rules(page);

describe("docs/seed-rules.md", () => {
  it("lists the seed pages' rules, numbered once each", () => {
    expect(all.length).toBeGreaterThan(200);
    const ids = all.map((r) => r.id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it("says who holds each rule and whether it is held, fixed or left", () => {
    for (const rule of all) {
      expect(["held", "fixed", "left"], `${rule.id} status`).toContain(rule.status);
      expect(rule.who, `${rule.id} who`).toMatch(/founder|joiner SDK|admin client and console|installer/);
    }
  });

  it("names a test for every rule held or fixed, and a reason for every rule left", () => {
    for (const rule of all) {
      if (rule.status === "left") {
        expect(rule.tests, `${rule.id}: a rule left names no test`).toEqual([]);
        expect(rule.heldBy.trim().length, `${rule.id}: a rule left says why`).toBeGreaterThan(40);
      } else {
        expect(rule.tests.length, `${rule.id} names no test`).toBeGreaterThan(0);
      }
    }
  });

  it("names only tests that exist, by file and name", () => {
    const cache = new Map<string, Set<string>>();
    const missing: string[] = [];
    for (const rule of all) {
      for (const { file, name } of rule.tests) {
        if (!existsSync(join(root, file))) {
          missing.push(`${rule.id}: no file ${file}`);
          continue;
        }
        if (!cache.has(file)) cache.set(file, testNames(file));
        if (!cache.get(file)!.has(name)) missing.push(`${rule.id}: no test "${name}" in ${file}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("counts its rows as they are", () => {
    const count = (status: string) => all.filter((r) => r.status === status).length;
    const row = /\| all \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|/.exec(page);
    expect(row, "the counts row").not.toBeNull();
    expect(row!.slice(1).map(Number)).toEqual([all.length, count("held"), count("fixed"), count("left")]);
  });

  it("can fail: a test name that does not exist is caught", () => {
    const [broken] = rules(
      '| Z9 | x | founder | held | `test/spec/seed-rules.test.ts` › "no such test" |'.replace("Z9", "E99"),
    );
    expect(broken!.tests).toEqual([{ file: "test/spec/seed-rules.test.ts", name: "no such test" }]);
    expect(testNames("test/spec/seed-rules.test.ts").has("no such test")).toBe(false);
    expect(testNames("test/spec/seed-rules.test.ts").has("names only tests that exist, by file and name")).toBe(true);
  });
});
