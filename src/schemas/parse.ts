/**
 * Parsing an answer against its schema, and the issues of a failed parse as the SDK reports them.
 * @module
 */
import * as z from "zod/mini";
import { ResponseValidationError, type ValidationIssue } from "../errors/index.js";

/**
 * The issues of a failed parse, as the SDK reports them: a dotted path and a message made
 * here from the issue's kind. Never the offending value: it may be a secret (a bundle field).
 */
export function toValidationIssues(issues: readonly z.core.$ZodIssue[]): ValidationIssue[] {
  return issues.map((issue) => ({ path: issue.path.map(String).join("."), message: describeIssue(issue) }));
}

// zod/mini ships no messages unless a locale is loaded globally (a side effect a library
// must not have), so the SDK words the few kinds a response body can fail with.
function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return `expected ${issue.expected}`;
    case "invalid_value":
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
    case "too_big":
      return "out of range";
    case "invalid_format":
      return `expected the format ${issue.format}`;
    default:
      return issue.code.replace(/_/g, " ");
  }
}

/**
 * `body` parsed by `schema`, or a {@link ResponseValidationError} naming `operation` (e.g.
 * `POST /v1/join/registrations`) and every issue. The result drops fields the schema does not
 * know (except where the schema keeps them: the delivery and its bundle) and fills the spec's
 * defaults.
 */
export function parseResponse<S extends z.ZodMiniType>(schema: S, operation: string, body: unknown): z.output<S> {
  const result = z.safeParse(schema, body);
  if (!result.success) throw new ResponseValidationError(operation, toValidationIssues(result.error.issues));
  return result.data;
}
