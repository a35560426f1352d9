// What `npm run test:mutation` decides from Stryker's JSON report (the mutation-testing-report
// schema): each file's score, and whether every mutant no test detected is listed as equivalent
// in test/mutation/equivalent.md. Pure functions, so the verdict itself is tested
// (test/mutation/gate.test.ts).

/** The score a file must reach, in percent. */
export const MINIMUM_SCORE = 90;

/** Detected: a test failed (or the mutant hung the tests past the timeout, which a run also notices). */
const DETECTED = new Set(["Killed", "Timeout"]);
/** Not detected: the tests passed with the mutant in place, or no test reached it. */
const UNDETECTED = new Set(["Survived", "NoCoverage"]);

/** White space runs as one space: a replacement spanning lines is listed on one. */
const flat = (text) => text.replace(/\s+/g, " ").trim();

/** A markdown code span holding `text`, fenced with more backticks than it contains in a row. */
export function codeSpan(text) {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  const pad = text.startsWith("`") || text.endsWith("`") || text === "" ? " " : "";
  return `${fence}${pad}${text}${pad}${fence}`;
}

/** The text of a code span (CommonMark: one space is stripped each side when both are there). */
function readCodeSpan(cell) {
  const match = /^(`+)([\s\S]*)\1$/.exec(cell);
  if (!match) return undefined;
  const inner = match[2];
  return inner.length >= 2 && inner.startsWith(" ") && inner.endsWith(" ") ? inner.slice(1, -1) : inner;
}

/** The cells of a table row, `\|` read as a `|` inside a cell. */
function cells(row) {
  const body = row.trim().replace(/^\|/, "").replace(/\|$/, "");
  return body.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

/** The identity of a mutant, as listed and as reported. */
function keyOf({ file, line, mutator, replacement }) {
  return `${file}\0${line}\0${mutator}\0${flat(replacement)}`;
}

/**
 * The equivalent mutants listed in `markdown`: the rows of its table `| file | line | mutator |
 * replacement | why |`. Throws on a row that is not of that shape or gives no reason.
 * @returns {{ file: string, line: number, mutator: string, replacement: string, why: string, row: number }[]}
 */
export function parseEquivalentList(markdown) {
  const listed = [];
  const lines = markdown.split("\n");
  let inTable = false;
  lines.forEach((text, index) => {
    if (!text.trim().startsWith("|")) {
      inTable = false;
      return;
    }
    const row = cells(text);
    if (!inTable) {
      // the header row, then the delimiter row
      inTable = true;
      if (row.join("|").toLowerCase() !== "file|line|mutator|replacement|why")
        throw new Error(
          `equivalent.md:${index + 1}: the table's columns are file | line | mutator | replacement | why`,
        );
      return;
    }
    if (row.every((cell) => /^:?-+:?$/.test(cell))) return;
    const where = `equivalent.md:${index + 1}`;
    if (row.length !== 5) throw new Error(`${where}: a row has 5 cells, this one ${row.length}`);
    const [fileCell, lineCell, mutator, replacementCell, why] = row;
    const file = readCodeSpan(fileCell) ?? fileCell;
    const replacement = readCodeSpan(replacementCell);
    if (!/^\d+$/.test(lineCell)) throw new Error(`${where}: the line is not a number`);
    if (!/^\w+$/.test(mutator)) throw new Error(`${where}: the mutator is not a Stryker mutator name`);
    if (replacement === undefined) throw new Error(`${where}: the replacement is not a code span`);
    if (why.length < 10) throw new Error(`${where}: say why the mutant is equivalent`);
    listed.push({ file, line: Number(lineCell), mutator, replacement, why, row: index + 1 });
  });
  return listed;
}

/** The row of equivalent.md that lists `mutant` (the reason left for the contributor to write). */
export function equivalentRow(mutant) {
  const replacement = codeSpan(flat(mutant.replacement)).replace(/\|/g, "\\|");
  return `| ${mutant.file} | ${mutant.line} | ${mutant.mutator} | ${replacement} | WHY |`;
}

/**
 * The verdict on a run: per file, the counts and the score (detected ÷ detected + undetected,
 * as Stryker computes it: a listed equivalent mutant still counts against the score); the
 * failures, each a line to print.
 * @param report Stryker's JSON report.
 * @param listed {@link parseEquivalentList}'s result.
 * @param files The files this run mutated (a listed mutant of another file is not judged).
 */
export function judge(report, listed, files, minimum = MINIMUM_SCORE) {
  const failures = [];
  const rows = [];
  const mine = listed.filter((entry) => files.includes(entry.file));
  const unused = new Map(mine.map((entry) => [keyOf(entry), entry]));
  for (const file of files) {
    const mutants = report.files[file]?.mutants;
    if (!mutants) {
      failures.push(`${file}: not in the report (no mutant made, or not mutated)`);
      continue;
    }
    const count = { detected: 0, survived: 0, noCoverage: 0, equivalent: 0, errors: 0 };
    for (const mutant of mutants) {
      if (DETECTED.has(mutant.status)) count.detected += 1;
      else if (!UNDETECTED.has(mutant.status)) count.errors += 1;
      else {
        if (mutant.status === "Survived") count.survived += 1;
        else count.noCoverage += 1;
        const found = {
          file,
          line: mutant.location.start.line,
          mutator: mutant.mutatorName,
          replacement: mutant.replacement ?? "",
        };
        const key = keyOf(found);
        if (unused.has(key)) {
          unused.delete(key);
          count.equivalent += 1;
        } else {
          const what = mutant.status === "Survived" ? "survived" : "no test reached it";
          failures.push(
            `${file}:${found.line}:${mutant.location.start.column} ${found.mutator} ${what}; kill it with a test, or list it as equivalent:\n  ${equivalentRow(found)}`,
          );
        }
      }
    }
    const undetected = count.survived + count.noCoverage;
    const total = count.detected + undetected;
    const score = total === 0 ? 100 : (100 * count.detected) / total;
    rows.push({ file, ...count, score });
    if (score < minimum) failures.push(`${file}: mutation score ${score.toFixed(1)}%, under the ${minimum}% required`);
  }
  for (const entry of unused.values()) {
    failures.push(
      `equivalent.md:${entry.row} lists ${entry.file}:${entry.line} ${entry.mutator} ${codeSpan(entry.replacement)}, which no longer survives (killed, or the code moved): remove or update the row`,
    );
  }
  return { rows, failures };
}

/** The per-file table a run prints. */
export function formatScores(rows) {
  const head = ["file", "detected", "survived", "no cov", "equivalent", "score"];
  const body = rows.map((r) => [r.file, r.detected, r.survived, r.noCoverage, r.equivalent, `${r.score.toFixed(1)}%`]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((cells) => String(cells[i]).length)));
  const line = (cells) =>
    cells.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join("  ");
  return [line(head), ...body.map(line)].join("\n");
}
