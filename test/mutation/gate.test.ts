/**
 * The verdict of `npm run test:mutation` (scripts/mutation-gate.mjs) on small reports: what
 * fails a run and what does not, so the gate cannot quietly pass a survivor.
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { codeSpan, equivalentRow, formatScores, judge, parseEquivalentList } from "../../scripts/mutation-gate.mjs";
// @ts-expect-error: a plain JavaScript module, which stryker.config.mjs reads too
import { MUTATION_TARGETS } from "./targets.mjs";

const FILE = "src/core/x.ts";
/** The mutated file: line n (from 1) reads `if (cn) return;`, so every mutant replaces `cn`. */
const SOURCE = Array.from({ length: 60 }, (_, i) => `if (c${i + 1}) return;`).join("\n");

interface Mutant {
  status: string;
  line?: number;
  mutatorName?: string;
  replacement?: string;
}

function report(mutants: Mutant[], file = FILE) {
  return {
    files: {
      [file]: {
        source: SOURCE,
        mutants: mutants.map((m, i) => {
          const line = m.line ?? 30 + (i % 30);
          const end = 5 + String(line).length + 1;
          return {
            id: String(i),
            status: m.status,
            mutatorName: m.mutatorName ?? "ConditionalExpression",
            replacement: m.replacement ?? "false",
            location: { start: { line, column: 5 }, end: { line, column: end } },
          };
        }),
      },
    },
  };
}

const killed = (n: number): Mutant[] => Array.from({ length: n }, () => ({ status: "Killed" }));

const table = (...rows: string[]) =>
  ["| file | line | mutator | original | replacement | why |", "| --- | --- | --- | --- | --- | --- |", ...rows].join(
    "\n",
  );
const row = (line: number, why = "the loop ends on the same index either way", replacement = "`false`") =>
  `| ${FILE} | ${line} | ConditionalExpression | \`c${line}\` | ${replacement} | ${why} |`;

describe("the mutation gate", () => {
  it("a survivor that is not listed fails the run, with the row to list it", () => {
    const { rows, failures } = judge(report([...killed(19), { status: "Survived", line: 12 }]), [], [FILE]);
    expect(rows[0]).toMatchObject({ detected: 19, survived: 1, score: 95 });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain(`${FILE}:12:5 ConditionalExpression survived`);
    expect(failures[0]).toContain(`| ${FILE} | 12 | ConditionalExpression | \`c12\` | \`false\` | WHY |`);
  });

  it("a mutant no test reaches counts as a survivor", () => {
    const { rows, failures } = judge(report([...killed(19), { status: "NoCoverage", line: 3 }]), [], [FILE]);
    expect(rows[0]).toMatchObject({ noCoverage: 1, score: 95 });
    expect(failures[0]).toContain("no test reached it");
  });

  it("a listed survivor passes, and still counts against the score", () => {
    const listed = parseEquivalentList(table(row(12)));
    const { rows, failures } = judge(report([...killed(19), { status: "Survived", line: 12 }]), listed, [FILE]);
    expect(failures).toEqual([]);
    expect(rows[0]).toMatchObject({ equivalent: 1, score: 95 });
  });

  it("a row matches only its mutator, original and replacement", () => {
    const listed = parseEquivalentList(table(row(12, "the loop ends on the same index either way", "`true`")));
    const { failures } = judge(report([...killed(19), { status: "Survived", line: 12 }]), listed, [FILE]);
    // the survivor is unlisted, and the row lists a mutant that does not survive
    expect(failures).toHaveLength(2);
    expect(failures[1]).toMatch(/^equivalent\.md:3 lists .* no longer survives/);
  });

  it("a row whose code moved still matches, and the run names the new line", () => {
    const listed = parseEquivalentList(
      table(`| ${FILE} | 12 | ConditionalExpression | \`c14\` | \`false\` | the same value on every path through it |`),
    );
    const { rows, failures } = judge(report([...killed(19), { status: "Survived", line: 14 }]), listed, [FILE]);
    expect(rows[0]).toMatchObject({ equivalent: 1 });
    expect(failures).toEqual(["equivalent.md:3 lists line 12; the mutant is now at line 14: update the row"]);
  });

  it("a file under 90% fails, whatever is listed", () => {
    const mutants = [...killed(8), { status: "Survived", line: 1 }, { status: "Survived", line: 2 }];
    const listed = parseEquivalentList(table(row(1), row(2)));
    const { rows, failures } = judge(report(mutants), listed, [FILE]);
    expect(rows[0]!.score).toBe(80);
    expect(failures).toEqual([`${FILE}: mutation score 80.0%, under the 90% required`]);
  });

  it("exactly 90% passes", () => {
    const listed = parseEquivalentList(table(row(1)));
    const { rows, failures } = judge(report([...killed(9), { status: "Survived", line: 1 }]), listed, [FILE]);
    expect(rows[0]!.score).toBe(90);
    expect(failures).toEqual([]);
  });

  it("a timeout is detected; compile and runtime errors count for nothing", () => {
    const { rows, failures } = judge(
      report([...killed(9), { status: "Timeout" }, { status: "CompileError" }, { status: "RuntimeError" }]),
      [],
      [FILE],
    );
    expect(failures).toEqual([]);
    expect(rows[0]).toMatchObject({ detected: 10, errors: 2, score: 100 });
  });

  it("a file this run did not mutate is a failure, and another file's rows are not judged", () => {
    const listed = parseEquivalentList(
      table("| src/other.ts | 1 | ConditionalExpression | `c1` | `false` | the same value on every path through it |"),
    );
    expect(judge(report(killed(3)), listed, [FILE]).failures).toEqual([]);
    expect(judge(report(killed(3)), listed, [FILE, "src/absent.ts"]).failures).toEqual([
      "src/absent.ts: not in the report (no mutant made, or not mutated)",
    ]);
  });

  it("on a change's lines: rows outside them are not judged, nor is the score", () => {
    const listed = parseEquivalentList(table(row(5), row(40)));
    const mutants = [
      { status: "Killed", line: 41 },
      { status: "Survived", line: 42 },
    ];
    const { rows, failures } = judge(report(mutants), listed, [FILE], { ranges: { [FILE]: [[39, 45]] } });
    expect(rows[0]).toMatchObject({ score: 50, whole: false });
    // row 5 is outside the lines, row 40 inside and stale, the survivor at 42 unlisted
    expect(failures).toHaveLength(2);
    expect(failures[0]).toContain(`${FILE}:42:5 ConditionalExpression survived`);
    expect(failures[1]).toMatch(/^equivalent\.md:4 lists src\/core\/x\.ts:40 .* no longer survives/);
    expect(formatScores(rows)).toContain(`${FILE} (changed lines)`);
  });

  it("reads code holding backticks, pipes and line breaks as printed", () => {
    const mutant = { file: FILE, line: 7, mutator: "StringLiteral", original: "a ||\n  b", replacement: "`${a}` || b" };
    const printed = equivalentRow(mutant);
    expect(printed).toBe(`| ${FILE} | 7 | StringLiteral | \`a \\|\\| b\` | \`\` \`\${a}\` \\|\\| b \`\` | WHY |`);
    const listed = parseEquivalentList(table(printed.replace("WHY", "the message is never shown to anyone")));
    expect(listed[0]).toMatchObject({ line: 7, original: "a || b", replacement: "`${a}` || b" });
    expect(codeSpan("")).toBe("`  `");
  });

  it("refuses a row without a reason, with a wrong column count or a bad header", () => {
    const cells = `| ${FILE} | 7 | StringLiteral | \`"a"\` | \`""\``;
    expect(() => parseEquivalentList(table(`${cells} | WHY |`))).toThrow(/equivalent\.md:3: say why/);
    expect(() => parseEquivalentList(table(`${cells} |`))).toThrow(/6 cells/);
    expect(() => parseEquivalentList(table(`${cells.replace("| 7 |", "| x |")} | a reason long enough |`))).toThrow(
      /line is not a number/,
    );
    expect(() => parseEquivalentList(table(`${cells.replace('`""`', '""')} | a reason long enough |`))).toThrow(
      /are code spans/,
    );
    expect(() => parseEquivalentList("| file | where | why |\n| --- | --- | --- |")).toThrow(/columns are/);
  });

  it("names files that exist: each target's source and the tests that hold it", () => {
    const targets = Object.entries(MUTATION_TARGETS as Record<string, string[]>);
    expect(targets.length).toBeGreaterThan(0);
    for (const [file, tests] of targets) {
      expect(existsSync(file), file).toBe(true);
      expect(tests.length, file).toBeGreaterThan(0);
      for (const test of tests) expect(existsSync(test), `${file}: ${test}`).toBe(true);
    }
  });

  it("the list in the repository reads, each row naming a target", () => {
    const listed = parseEquivalentList(readFileSync("test/mutation/equivalent.md", "utf8"));
    expect(listed.length).toBeGreaterThan(0);
    for (const entry of listed) expect(Object.keys(MUTATION_TARGETS)).toContain(entry.file);
  });

  it("prints one line per file with its score", () => {
    const { rows } = judge(report([...killed(3), { status: "Survived", line: 1 }]), [], [FILE]);
    expect(formatScores(rows).split("\n")).toEqual([
      "file           detected  survived  no cov  equivalent  score",
      "src/core/x.ts         3         1       0           0  75.0%",
    ]);
  });
});
