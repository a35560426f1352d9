/**
 * Refusals as the API answers them: the problem codes of openapi.yaml, the {@link HttpProblem}
 * a handler throws, and the RFC 9457 document it becomes. Shared by both listeners and by the
 * answers the HTTP parser's own errors get (http-client-errors.ts).
 * @module
 */

/** One field's problem, at its path (`links[0].interface`, `role`, or empty for the whole body). */
export interface FieldError {
  field: string;
  message: string;
}

/** The problem codes of openapi.yaml (`ProblemCode`). */
export type ProblemCode =
  | "JOIN_CODE_INVALID"
  | "JOIN_BINDING_FAILED"
  | "JOIN_CODE_BUSY"
  | "JOIN_CODE_EXPIRED"
  | "JOIN_CODE_REVOKED"
  | "JOIN_CODE_STALE"
  | "JOIN_PAKE_RESTART"
  | "RELEASE_MISMATCH"
  | "REGISTRATION_REJECTED"
  | "RATE_LIMITED"
  | "UPGRADE_IN_PROGRESS"
  | "RELEASE_BUSY"
  | "INVALID_INPUT"
  | "JOIN_APPROVAL_REFUSED"
  | "JOIN_STATE_CONFLICT"
  | "RANGE_NOT_SATISFIABLE"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "STORAGE_UNAVAILABLE"
  | "INTERNAL";

const TITLES: Record<ProblemCode, string> = {
  JOIN_CODE_INVALID: "Join code not proven",
  JOIN_BINDING_FAILED: "Connection intercepted",
  JOIN_CODE_BUSY: "Join code busy",
  JOIN_CODE_EXPIRED: "Join code expired",
  JOIN_CODE_REVOKED: "Join code revoked",
  JOIN_CODE_STALE: "Join code stale",
  JOIN_PAKE_RESTART: "Start the exchange again",
  RELEASE_MISMATCH: "Release mismatch",
  REGISTRATION_REJECTED: "Registration rejected",
  RATE_LIMITED: "Too many requests",
  UPGRADE_IN_PROGRESS: "Upgrade in progress",
  RELEASE_BUSY: "Too many release files at once",
  INVALID_INPUT: "Invalid input",
  JOIN_APPROVAL_REFUSED: "Approval refused",
  JOIN_STATE_CONFLICT: "Not in a state that allows this",
  RANGE_NOT_SATISFIABLE: "Range not satisfiable",
  UNAUTHORIZED: "Unauthorized",
  FORBIDDEN: "Forbidden",
  NOT_FOUND: "Not found",
  METHOD_NOT_ALLOWED: "Method not allowed",
  UNSUPPORTED_MEDIA_TYPE: "Unsupported media type",
  STORAGE_UNAVAILABLE: "Storage unavailable",
  INTERNAL: "Internal error",
};

/** The options of an {@link HttpProblem}. */
export interface ProblemOptions {
  detail?: string;
  errors?: FieldError[];
  details?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/**
 * A refusal, thrown from a handler and answered as problem+json. Its `detail` is written for a
 * person and never carries a code, token or key.
 */
export class HttpProblem extends Error {
  readonly status: number;
  readonly code: ProblemCode;
  readonly detail: string | undefined;
  readonly errors: FieldError[] | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string>;

  constructor(status: number, code: ProblemCode, options: ProblemOptions = {}) {
    super(`${status} ${code}${options.detail ? `: ${options.detail}` : ""}`);
    this.name = "HttpProblem";
    this.status = status;
    this.code = code;
    this.detail = options.detail;
    this.errors = options.errors;
    this.details = options.details;
    this.headers = options.headers ?? {};
  }
}

// An id as a detail may name it: the characters the founder's ids are made of, and not too many.
const PLAIN_ID = /^[A-Za-z0-9._~-]{1,64}$/;

/**
 * A value from the request (a path segment, decoded) as a detail may quote it: itself when it
 * looks like an id, else a neutral phrase. A decoded segment can carry CR, LF or a terminal
 * escape, and a detail is shown to people and written to logs.
 */
export function quotedId(value: string): string {
  return PLAIN_ID.test(value) ? value : "(the id given)";
}

/** Shorthand for a 400 `INVALID_INPUT` with field errors. */
export function invalidInput(errors: FieldError[], detail = "The request does not match the schema."): HttpProblem {
  return new HttpProblem(400, "INVALID_INPUT", { detail, errors });
}

/** The problem+json document of a refusal (the spec's `Problem`). */
export function problemBody(problem: HttpProblem, requestId: string): Record<string, unknown> {
  return {
    type: `https://docs.stratum.example/problems/${problem.code.toLowerCase().replace(/_/g, "-")}`,
    title: TITLES[problem.code],
    status: problem.status,
    ...(problem.detail ? { detail: problem.detail } : {}),
    requestId,
    code: problem.code,
    ...(problem.errors ? { errors: problem.errors } : {}),
    ...(problem.details ? { details: problem.details } : {}),
  };
}
