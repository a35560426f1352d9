/**
 * The problem document every 4xx and 5xx carries (RFC 9457), and its codes.
 * @module
 */
import * as z from "zod/mini";
import { PROBLEM_CODES } from "../errors/codes.js";
import { int, opt, str } from "./builders.js";

/** `ProblemCode`: what went wrong, for a caller to branch on. */
export const ProblemCodeSchema = z.enum(PROBLEM_CODES);

/** `PolicyIssue`: one finding of a rejected IAM policy document. */
export const PolicyIssueSchema = z.object({ code: str, statement: int, detail: str, action: opt(str) });

/** `FieldError`: one field's problem, at its path. */
export const FieldErrorSchema = z.object({ field: str, message: str });

/**
 * `Problem`: the RFC 9457 document of every refusal. Strict on `code`: the SDK's own error
 * parsing (`problemFromResponse`) is lenient instead, so an unknown code still surfaces.
 */
export const ProblemSchema = z.object({
  type: str,
  title: str,
  status: int,
  detail: opt(str),
  instance: opt(str),
  requestId: str,
  code: ProblemCodeSchema,
  issues: opt(z.array(PolicyIssueSchema)),
  errors: opt(z.array(FieldErrorSchema)),
  details: opt(z.record(str, z.unknown())),
});
