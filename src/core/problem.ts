/**
 * Turning a refusal (any 4xx/5xx answer) into a {@link StratumApiError}. Browser-safe.
 * @module
 */

import { StratumApiError, type FieldProblem, type ProblemBody } from "../errors/index.js";
import { redact } from "./redact.js";
import { parseRetryAfter } from "./retry.js";

/**
 * The {@link StratumApiError} for a refused call. `response` is read here (its body is
 * consumed). The body is parsed leniently: a problem+json document gives its fields, each
 * kept only when it has the right type, so an unknown `code` of a newer server still
 * surfaces as it is; any other body (a proxy's HTML page, nothing, broken JSON) gives
 * `HTTP_<status>` and is not copied in, since it could hold anything. `Retry-After` is read
 * in seconds; `details` has any sensitive field redacted. No request header is looked at, so
 * the bearer token cannot leak into the error.
 *
 * @param operation The call, e.g. `GET /v1/admin/cluster/joins`; named in the message when
 *   the body is not a problem document, which has no detail of its own to show.
 */
export async function problemFromResponse(response: Response, operation: string): Promise<StratumApiError> {
  const retryAfter = parseRetryAfter(response.headers.get("Retry-After"));
  // A failure to read the body (an abort, a reset) is not a refusal: it propagates as it is.
  const text = await response.text();
  return problemFromText(response.status, text, retryAfter, operation);
}

/**
 * The {@link StratumApiError} for a refusal whose body was read as text by a transport that
 * is not `fetch` (`undefined` when there was none to read, or too much of it). Same rules as
 * {@link problemFromResponse}.
 */
export function problemFromText(
  status: number,
  text: string | undefined,
  retryAfter: number | undefined,
  operation: string,
): StratumApiError {
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return problemFromBody(status, parsed, retryAfter, operation);
}

/**
 * The {@link StratumApiError} for a refusal whose body is already parsed (`undefined` when it
 * was not JSON), for transports that are not `fetch` (the joiner's pinned connection). Same
 * rules as {@link problemFromResponse}.
 */
export function problemFromBody(
  status: number,
  body: unknown,
  retryAfter: number | undefined,
  operation: string,
): StratumApiError {
  const problem = readProblem(body);
  if (!problem) {
    return new StratumApiError(
      status,
      { detail: `${operation} answered HTTP ${status} without a problem document` },
      retryAfter,
    );
  }
  return new StratumApiError(status, problem, retryAfter);
}

/** The problem fields of `value` that have the right type, or undefined if it is not a problem document at all. */
function readProblem(value: unknown): ProblemBody | undefined {
  if (!isRecord(value)) return undefined;
  const problem: ProblemBody = {};
  const text = (key: "type" | "title" | "detail" | "instance" | "requestId" | "code") => {
    const field = value[key];
    if (typeof field === "string") problem[key] = field;
  };
  text("type");
  text("title");
  text("detail");
  text("instance");
  text("requestId");
  text("code");
  if (typeof value.status === "number") problem.status = value.status;
  if (Array.isArray(value.errors)) {
    problem.errors = value.errors.filter(isRecord).map((e): FieldProblem => ({
      field: typeof e.field === "string" ? e.field : "",
      message: typeof e.message === "string" ? e.message : "",
    }));
  }
  if (isRecord(value.details)) problem.details = redact(value.details);
  // A JSON object with none of the problem's identifying fields is some other document.
  if (problem.code === undefined && problem.title === undefined && problem.type === undefined) return undefined;
  return problem;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
