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

const COLUMNS = ["file", "line", "mutator", "original", "replacement", "why"];

/** White space runs as one space: code spanning lines is listed on one. */
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

/** What a mutant is, wherever it is in its file: a row matches it by this, then by its line. */
const keyOf = ({ file, mutator, original, replacement }) =>
  [file, mutator, flat(original), flat(replacement)].join("\0");

/**
 * The equivalent mutants listed in `markdown`: the rows of its table `| file | line | mutator |
 * original | replacement | why |`. Throws on a row that is not of that shape or gives no reason.
 * @returns {{ file: string, line: number, mutator: string, original: string, replacement: string, why: string, row: number }[]}
 */
export function parseEquivalentList(markdown) {
  const listed = [];
  let inTable = false;
  markdown.split("\n").forEach((text, index) => {
    if (!text.trim().startsWith("|")) {
      inTable = false;
      return;
    }
    const row = cells(text);
    const where = `equivalent.md:${index + 1}`;
    if (!inTable) {
      // the header row, then the delimiter row
      inTable = true;
      if (row.join("|").toLowerCase() !== COLUMNS.join("|"))
        throw new Error(`${where}: the table's columns are ${COLUMNS.join(" | ")}`);
      return;
    }
    if (row.every((cell) => /^:?-+:?$/.test(cell))) return;
    if (row.length !== COLUMNS.length)
      throw new Error(`${where}: a row has ${COLUMNS.length} cells, this one ${row.length}`);
    const [fileCell, lineCell, mutator, originalCell, replacementCell, why] = row;
    const original = readCodeSpan(originalCell);
    const replacement = readCodeSpan(replacementCell);
    if (!/^\d+$/.test(lineCell)) throw new Error(`${where}: the line is not a number`);
    if (!/^\w+$/.test(mutator)) throw new Error(`${where}: the mutator is not a Stryker mutator name`);
    if (original === undefined || replacement === undefined)
      throw new Error(`${where}: the original and the replacement are code spans`);
    if (why.length < 10) throw new Error(`${where}: say why the mutant is equivalent`);
    const file = readCodeSpan(fileCell) ?? fileCell;
    listed.push({ file, line: Number(lineCell), mutator, original, replacement, why, row: index + 1 });
  });
  return listed;
}

/** The row of equivalent.md that lists `mutant` (the reason left for the contributor to write). */
export function equivalentRow(mutant) {
  const span = (text) => codeSpan(flat(text)).replace(/\|/g, "\\|");
  return `| ${mutant.file} | ${mutant.line} | ${mutant.mutator} | ${span(mutant.original)} | ${span(mutant.replacement)} | WHY |`;
}

/** The source text a mutant replaces (the report's lines and columns count from 1). */
function originalOf(source, { start, end }) {
  const lines = source.split("\n");
  if (start.line === end.line) return lines[start.line - 1].slice(start.column - 1, end.column - 1);
  return [
    lines[start.line - 1].slice(start.column - 1),
    ...lines.slice(start.line, end.line - 1),
    lines[end.line - 1].slice(0, end.column - 1),
  ].join("\n");
}

/** Whether `line` is inside one of `ranges` (`[first, last]` pairs), or there are no ranges (the whole file). */
const inRanges = (ranges, line) =>
  ranges === undefined || ranges.some(([first, last]) => line >= first && line <= last);

/**
 * The verdict on a run: per file, the counts and the score (detected ÷ detected + undetected,
 * as Stryker computes it: a listed equivalent mutant still counts against the score); the
 * failures, each a line to print.
 * @param report Stryker's JSON report.
 * @param listed {@link parseEquivalentList}'s result.
 * @param files The files this run mutated (a listed mutant of another file is not judged).
 * @param options.ranges Per file, the line ranges this run mutated (a change's lines): only the
 *   rows inside them are judged, and the score is not held to the minimum (a few lines' mutants
 *   are no sample of a file). A file without ranges was mutated whole.
 */
export function judge(report, listed, files, { minimum = MINIMUM_SCORE, ranges = {} } = {}) {
  const failures = [];
  const rows = [];
  const unused = listed.filter((entry) => files.includes(entry.file));
  for (const file of files) {
    const entry = report.files[file];
    if (!entry) {
      failures.push(`${file}: not in the report (no mutant made, or not mutated)`);
      continue;
    }
    const count = { detected: 0, survived: 0, noCoverage: 0, equivalent: 0, errors: 0 };
    for (const mutant of entry.mutants) {
      if (DETECTED.has(mutant.status)) count.detected += 1;
      else if (!UNDETECTED.has(mutant.status)) count.errors += 1;
      else {
        if (mutant.status === "Survived") count.survived += 1;
        else count.noCoverage += 1;
        const found = {
          file,
          line: mutant.location.start.line,
          mutator: mutant.mutatorName,
          original: originalOf(entry.source, mutant.location),
          replacement: mutant.replacement ?? "",
        };
        // the row at its line, else one of the same mutant elsewhere in the file (the code moved)
        const same = unused.filter((row) => keyOf(row) === keyOf(found));
        const match = same.find((row) => row.line === found.line) ?? same[0];
        if (match) {
          unused.splice(unused.indexOf(match), 1);
          count.equivalent += 1;
          if (match.line !== found.line)
            failures.push(
              `equivalent.md:${match.row} lists line ${match.line}; the mutant is now at line ${found.line}: update the row`,
            );
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
    const whole = ranges[file] === undefined;
    rows.push({ file, ...count, score, whole });
    if (whole && score < minimum)
      failures.push(`${file}: mutation score ${score.toFixed(1)}%, under the ${minimum}% required`);
  }
  for (const entry of unused) {
    if (!inRanges(ranges[entry.file], entry.line)) continue;
    failures.push(
      `equivalent.md:${entry.row} lists ${entry.file}:${entry.line} ${entry.mutator} ${codeSpan(entry.replacement)}, which no longer survives (killed, or the code changed): remove or update the row`,
    );
  }
  return { rows, failures };
}

/** The per-file table a run prints; a file mutated on some lines only is marked so. */
export function formatScores(rows) {
  const head = ["file", "detected", "survived", "no cov", "equivalent", "score"];
  const body = rows.map((r) => [
    r.whole === false ? `${r.file} (changed lines)` : r.file,
    r.detected,
    r.survived,
    r.noCoverage,
    r.equivalent,
    `${r.score.toFixed(1)}%`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((cells) => String(cells[i]).length)));
  const line = (cells) =>
    cells.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join("  ");
  return [line(head), ...body.map(line)].join("\n");
}
