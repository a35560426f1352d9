/**
 * The server answered, and refused ({@link StratumApiError}, from its problem+json body) or
 * answered something the SDK's schemas do not accept ({@link ResponseValidationError}).
 * @module
 */
import type { StratumApiErrorCode } from "./codes.js";
import { StratumError } from "./stratum-error.js";

/** One field's problem in a refusal, at its path (`links[0].interface`, `role`, …). */
export interface FieldProblem {
  /** The field's path; empty for the whole request. */
  field: string;
  /** What is wrong with it. */
  message: string;
}

/** The parsed `application/problem+json` body of a refusal. */
export interface ProblemBody {
  /** A URI naming the kind of problem. */
  type?: string | undefined;
  /** A short summary of the kind of problem. */
  title?: string | undefined;
  /** The HTTP status the server answered with. */
  status?: number | undefined;
  /** A human explanation of this occurrence. */
  detail?: string | undefined;
  /** A URI naming this occurrence. */
  instance?: string | undefined;
  /** The server's id of the request, to quote when asking about it. */
  requestId?: string | undefined;
  /** The spec's problem code (`JOIN_CODE_EXPIRED`, …). */
  code?: string | undefined;
  /** What is wrong with each field of the request, when the request was refused for its fields. */
  errors?: FieldProblem[] | undefined;
  /** Facts particular to the code (`RELEASE_MISMATCH`: `clusterRelease`, …). */
  details?: Record<string, unknown> | undefined;
}

/**
 * The API refused a call: any 4xx/5xx answer, built from its problem+json body. `code` is the
 * spec's problem code (`JOIN_CODE_REVOKED`, `RATE_LIMITED`, …), or `HTTP_<status>` when the
 * body was not a problem document. It carries no request header, so never the bearer token.
 */
export class StratumApiError extends StratumError {
  /** The API's problem code, or `HTTP_<status>` for an answer without a problem document. */
  declare readonly code: StratumApiErrorCode;
  /** The HTTP status. */
  readonly status: number;
  /** The request id the server logged this refusal under; quote it in a bug report. */
  readonly requestId: string | undefined;
  /** The problem's short title. */
  readonly title: string | undefined;
  /** The problem's human explanation. */
  readonly detail: string | undefined;
  /** Field errors at their paths (`INVALID_INPUT`, `JOIN_APPROVAL_REFUSED`). */
  readonly errors: FieldProblem[];
  /** Structured facts fixed per code (e.g. `RELEASE_MISMATCH`: `clusterRelease`, `isoPath`, `reason`). */
  readonly details: Record<string, unknown> | undefined;
  /** Seconds to wait before trying again, from `Retry-After` (429, 503). */
  readonly retryAfter: number | undefined;

  constructor(status: number, problem: ProblemBody, retryAfter?: number) {
    // A newer founder's code this version does not list is kept as it is (see StratumErrorCode).
    const code = (
      typeof problem.code === "string" && problem.code ? problem.code : `HTTP_${status}`
    ) as StratumApiErrorCode;
    const text = problem.detail ?? problem.title ?? `HTTP ${status}`;
    super(code, `${code}: ${text}`);
    this.name = "StratumApiError";
    this.status = status;
    this.requestId = problem.requestId;
    this.title = problem.title;
    this.detail = problem.detail;
    this.errors = Array.isArray(problem.errors)
      ? problem.errors.map((e) => ({ field: String(e.field ?? ""), message: String(e.message ?? "") }))
      : [];
    this.details = problem.details && typeof problem.details === "object" ? problem.details : undefined;
    this.retryAfter = retryAfter;
  }
}

/** One problem a schema found in an answer (a zod issue, reduced to what a caller needs). */
export interface ValidationIssue {
  /** Where in the body, e.g. `items.0.state`. */
  path: string;
  /** What is wrong. */
  message: string;
}

/**
 * The server answered, but the body does not match the schema the SDK expects. Not an API
 * error: the call succeeded, its data did not. The values themselves are not copied in.
 */
export class ResponseValidationError extends StratumError {
  /** Always `RESPONSE_INVALID`. */
  declare readonly code: "RESPONSE_INVALID";
  /** The operation whose answer was wrong, e.g. `GET /v1/admin/cluster/joins`. */
  readonly operation: string;
  /** What the schema found. */
  readonly issues: ValidationIssue[];

  constructor(operation: string, issues: ValidationIssue[]) {
    const first = issues[0];
    super(
      "RESPONSE_INVALID",
      `the answer of ${operation} does not match the API's schema${first ? `: ${first.path || "(body)"}: ${first.message}` : ""}`,
    );
    this.name = "ResponseValidationError";
    this.operation = operation;
    this.issues = issues;
  }
}
