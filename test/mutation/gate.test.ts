/**
 * The verdict of `npm run test:mutation` (scripts/mutation-gate.mjs) on small reports: what
 * fails a run and what does not, so the gate cannot quietly pass a survivor.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { codeSpan, equivalentRow, formatScores, judge, parseEquivalentList } from "../../scripts/mutation-gate.mjs";

const FILE = "src/core/x.ts";

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
        mutants: mutants.map((m, i) => ({
          id: String(i),
          status: m.status,
          mutatorName: m.mutatorName ?? "ConditionalExpression",
          replacement: m.replacement ?? "false",
          location: { start: { line: m.line ?? 10 + i, column: 3 }, end: { line: m.line ?? 10 + i, column: 9 } },
        })),
      },
    },
  };
}

const killed = (n: number): Mutant[] => Array.from({ length: n }, () => ({ status: "Killed" }));

const table = (...rows: string[]) =>
  ["| file | line | mutator | replacement | why |", "| --- | --- | --- | --- | --- |", ...rows].join("\n");

describe("the mutation gate", () => {
  it("a survivor that is not listed fails the run, with the row to list it", () => {
    const { rows, failures } = judge(report([...killed(19), { status: "Survived", line: 42 }]), [], [FILE]);
    expect(rows[0]).toMatchObject({ detected: 19, survived: 1, score: 95 });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain(`${FILE}:42:3 ConditionalExpression survived`);
    expect(failures[0]).toContain(`| ${FILE} | 42 | ConditionalExpression | \`false\` | WHY |`);
  });

  it("a mutant no test reaches counts as a survivor", () => {
    const { rows, failures } = judge(report([...killed(19), { status: "NoCoverage" }]), [], [FILE]);
    expect(rows[0]).toMatchObject({ noCoverage: 1, score: 95 });
    expect(failures[0]).toContain("no test reached it");
  });

  it("a listed survivor passes, and still counts against the score", () => {
    const listed = parseEquivalentList(
      table(`| ${FILE} | 42 | ConditionalExpression | \`false\` | the loop ends on the same index either way |`),
    );
    const { rows, failures } = judge(report([...killed(19), { status: "Survived", line: 42 }]), listed, [FILE]);
    expect(failures).toEqual([]);
    expect(rows[0]).toMatchObject({ equivalent: 1, score: 95 });
  });

  it("a listed row matches only its line, mutator and replacement", () => {
    const listed = parseEquivalentList(
      table(`| ${FILE} | 42 | ConditionalExpression | \`true\` | the loop ends on the same index either way |`),
    );
    const { failures } = judge(report([...killed(19), { status: "Survived", line: 42 }]), listed, [FILE]);
    // the survivor is unlisted, and the row lists a mutant that does not survive
    expect(failures).toHaveLength(2);
    expect(failures[1]).toMatch(/equivalent\.md:3 lists .* no longer survives/);
  });

  it("a file under 90% fails, whatever is listed", () => {
    const mutants = [...killed(8), { status: "Survived", line: 1 }, { status: "Survived", line: 2 }];
    const listed = parseEquivalentList(
      table(
        `| ${FILE} | 1 | ConditionalExpression | \`false\` | the same value on every path through it |`,
        `| ${FILE} | 2 | ConditionalExpression | \`false\` | the same value on every path through it |`,
      ),
    );
    const { rows, failures } = judge(report(mutants), listed, [FILE]);
    expect(rows[0]!.score).toBe(80);
    expect(failures).toEqual([`${FILE}: mutation score 80.0%, under the 90% required`]);
  });

  it("exactly 90% passes", () => {
    const { failures } = judge(report([...killed(9), { status: "Timeout" }]), [], [FILE]);
    expect(failures).toEqual([]);
    const { rows } = judge(report([...killed(9), { status: "Survived", line: 1 }]), [], [FILE], 90);
    expect(rows[0]!.score).toBe(90);
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

  it("a file this run did not mutate is a failure, and its listed rows are not judged", () => {
    const listed = parseEquivalentList(
      table(`| src/other.ts | 1 | ConditionalExpression | \`false\` | the same value on every path through it |`),
    );
    expect(judge(report(killed(3)), listed, [FILE]).failures).toEqual([]);
    expect(judge(report(killed(3)), listed, [FILE, "src/absent.ts"]).failures).toEqual([
      "src/absent.ts: not in the report (no mutant made, or not mutated)",
    ]);
  });

  it("reads replacements holding backticks, pipes and line breaks as printed", () => {
    const replacement = "`${a}` || b\n  && c";
    const row = equivalentRow({ file: FILE, line: 7, mutator: "StringLiteral", replacement });
    expect(row).toBe(`| ${FILE} | 7 | StringLiteral | \`\` \`\${a}\` \\|\\| b && c \`\` | WHY |`);
    const listed = parseEquivalentList(table(row.replace("WHY", "the message is never shown to anyone")));
    expect(listed[0]).toMatchObject({ file: FILE, line: 7, mutator: "StringLiteral", replacement: "`${a}` || b && c" });
    const { failures } = judge(
      report([{ status: "Survived", line: 7, mutatorName: "StringLiteral", replacement }, ...killed(20)]),
      listed,
      [FILE],
    );
    expect(failures).toEqual([]);
    expect(codeSpan("")).toBe("`  `");
  });

  it("refuses a row without a reason, with a wrong column count or a bad header", () => {
    expect(() => parseEquivalentList(table(`| ${FILE} | 7 | StringLiteral | \`""\` | WHY |`))).toThrow(
      /equivalent\.md:3: say why/,
    );
    expect(() => parseEquivalentList(table(`| ${FILE} | 7 | StringLiteral | \`""\` |`))).toThrow(/5 cells/);
    expect(() => parseEquivalentList(table(`| ${FILE} | x | StringLiteral | \`""\` | a reason long enough |`))).toThrow(
      /line is not a number/,
    );
    expect(() => parseEquivalentList(table(`| ${FILE} | 7 | StringLiteral | "" | a reason long enough |`))).toThrow(
      /not a code span/,
    );
    expect(() => parseEquivalentList("| file | where | why |\n| --- | --- | --- |")).toThrow(/columns are/);
  });

  it("the list in the repository reads", () => {
    const listed = parseEquivalentList(readFileSync("test/mutation/equivalent.md", "utf8"));
    for (const entry of listed) expect(entry.file).toMatch(/^src\/.+\.ts$/);
  });

  it("prints one line per file with its score", () => {
    const { rows } = judge(report([...killed(3), { status: "Survived", line: 1 }]), [], [FILE]);
    expect(formatScores(rows).split("\n")).toEqual([
      "file           detected  survived  no cov  equivalent  score",
      "src/core/x.ts         3         1       0           0  75.0%",
    ]);
  });
});
