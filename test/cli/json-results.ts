/**
 * The `--json` result a command's spec documents (`CommandSpec.result`, shown by `--help` and
 * docs/cli.md), held to what the command prints: the tests that run commands with `--json`
 * check each successful document against its spec, so the documented shape cannot drift from
 * the real one.
 */
import { expect } from "vitest";
import type { CommandSpec } from "../../src/cli/args.js";
import { COMMANDS } from "../../src/cli/run.js";

/** The top-level fields of a documented shape (`{a, b?, c: {…}}`), each with whether it may be absent. */
export function documentedFields(result: string): { name: string; optional: boolean }[] | undefined {
  if (!result.startsWith("{")) return undefined; // "the join, as the API answers it": the API's schema
  const inner = result.slice(1, result.lastIndexOf("}"));
  const parts: string[] = [];
  let depth = 0;
  let part = "";
  for (const ch of inner) {
    if ("{[".includes(ch)) depth++;
    if ("}]".includes(ch)) depth--;
    if (ch === "," && depth === 0) {
      parts.push(part);
      part = "";
    } else part += ch;
  }
  parts.push(part);
  return parts.map((p) => {
    const m = /^\s*(\w+)(\?)?/.exec(p);
    if (!m) throw new Error(`cannot read a field of ${result}: ${p}`);
    return { name: m[1]!, optional: m[2] === "?" };
  });
}

/** The command `args` run (the longest command path they start with). */
export function commandOf(args: readonly string[]): CommandSpec | undefined {
  const words = args.filter((a) => !a.startsWith("-"));
  return COMMANDS.filter((c) => c.path.every((w, i) => words[i] === w)).sort(
    (a, b) => b.path.length - a.path.length,
  )[0];
}

/** Fails unless `json`, the successful `--json` document of `args`, has the fields its command documents. */
export function expectDocumentedResult(args: readonly string[], json: unknown): void {
  const command = commandOf(args);
  if (!command || args.includes("--help") || args.includes("-h")) return;
  const fields = documentedFields(command.result);
  if (!fields) return;
  const name = command.path.join(" ");
  const have = Object.keys(json as object).sort();
  expect(have, `${name}: a field its result does not document (${command.result})`).toEqual(
    have.filter((key) => fields.some((f) => f.name === key)),
  );
  const required = fields.filter((f) => !f.optional).map((f) => f.name);
  expect(have, `${name}: a field its result documents as always there`).toEqual(expect.arrayContaining(required));
}
