/**
 * "Did you mean": the closest known command or flag to a mistyped one (`regster` → `register`,
 * `--wiat` → `--wait`, `admin aprove` → `admin approve`). Commands and flags are no secret, so
 * the suggestion is shown everywhere, pipes and `--json` included (a join code's fix is not:
 * see output.ts).
 * @module
 */

/**
 * The optimal-string-alignment distance: insertions, deletions, substitutions and swaps of
 * two neighbours each count one, so `wiat` is one from `wait`, as a person would count it.
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i ? (j ? 0 : i) : j)),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The candidate closest to `word`, when it is close enough to be what was meant: at most two
 * edits, and fewer than half the word's letters (so `ls` suggests nothing). Ties go to the
 * first candidate; a word that starts a candidate (`regis`) suggests it too.
 */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const typed = word.toLowerCase();
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = candidate.startsWith(typed) && typed.length >= 3 ? 0.5 : editDistance(typed, candidate);
    if (distance <= 2 && distance < typed.length / 2 && (!best || distance < best.distance))
      best = { candidate, distance };
  }
  return best?.candidate;
}
