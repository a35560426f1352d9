/**
 * Redaction of the fields `openapi.yaml` marks `x-sensitive: true`, for anything that logs or
 * prints an API object (loggers, the CLI, error details). Browser-safe.
 * @module
 */

import { sensitiveFields } from "../../generated/sensitive.js";

/** What a redacted field's value is replaced with. */
export const REDACTED = "[redacted]";

// A field name alone is not always enough: `code` is the secret join code in MintedJoinCode
// but the problem code in Problem and PolicyIssue. Names like that are redacted only in an
// object that looks like the schema that marks them (below); every other sensitive name
// (nodeKey, adminPassword, …) means the same thing wherever it appears, and is always redacted.
const AMBIGUOUS = new Set(["code"]);

// Per schema with an ambiguous sensitive name: how to recognise an object of that schema
// from its keys. A MintedJoinCode is the only object of the API with `url` or `joinCode`.
const LOOKS_LIKE: Record<string, (keys: Set<string>) => boolean> = {
  MintedJoinCode: (keys) => keys.has("joinCode") || keys.has("url"),
};

const always = new Set<string>();
const contextual: { names: readonly string[]; looksLike: (keys: Set<string>) => boolean }[] = [];
for (const [schema, names] of Object.entries(sensitiveFields) as [string, readonly string[]][]) {
  const looksLike = LOOKS_LIKE[schema];
  const ambiguous = names.filter((name) => AMBIGUOUS.has(name));
  for (const name of names) if (!AMBIGUOUS.has(name) || !looksLike) always.add(name);
  if (looksLike && ambiguous.length) contextual.push({ names: ambiguous, looksLike });
}

/**
 * A deep copy of `value` with every sensitive field's value replaced by `"[redacted]"`: the
 * fields of `generated/sensitive.ts` (the bundle's keys, passwords and tokens; a minted join
 * code's `code` and `url`), at any depth. Plain objects and arrays are copied; other values
 * (dates, class instances) are kept as they are; a cycle becomes `"[circular]"`. The input is
 * never modified.
 */
export function redact<T>(value: T): T {
  return copy(value, new WeakSet()) as T;
}

function copy(value: unknown, seen: WeakSet<object>): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (seen.has(value)) return "[circular]";
  if (Array.isArray(value)) {
    seen.add(value);
    const out = value.map((item) => copy(item, seen));
    seen.delete(value);
    return out;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  seen.add(value);
  const source = value as Record<string, unknown>;
  const keys = new Set(Object.keys(source));
  const hidden = new Set<string>();
  for (const rule of contextual) if (rule.looksLike(keys)) for (const name of rule.names) hidden.add(name);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const field = source[key];
    out[key] =
      (always.has(key) || hidden.has(key)) && field !== undefined && field !== null ? REDACTED : copy(field, seen);
  }
  seen.delete(value);
  return out;
}
