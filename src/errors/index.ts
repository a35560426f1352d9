/**
 * Every error the SDK throws is a {@link StratumError}: a caller branches on the class or on
 * its `code`, never on the message. Messages never carry a join code, a token, a key or any
 * field the API marks sensitive.
 * @module
 */

const BRAND = Symbol.for("stratum.join.error");

/**
 * The base of every error the SDK throws. `code` is stable and meant to be branched on:
 * for API refusals it is the problem code of the spec (`JOIN_CODE_EXPIRED`, …), for local
 * failures one of the SDK's own codes (`JOIN_CODE_MALFORMED`, `NETWORK`, …).
 */
export class StratumError extends Error {
  /** A stable, machine-readable code; see the README's error table. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StratumError";
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /**
   * True for any error of the SDK, also one made by another copy of the SDK or in another
   * realm (an iframe, a worker, a vm context), where `instanceof` fails.
   */
  static is(value: unknown): value is StratumError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** Why a join code was refused locally, before any network call. */
export type JoinCodeErrorReason = "empty" | "length" | "character" | "check";

/**
 * A join code that is not well formed. Thrown by `parseJoinCode` before anything reaches the
 * network, so a typo never costs a PAKE attempt. The message never repeats the code itself,
 * except as the suggestion of an adjacent swap that makes it valid.
 */
export class JoinCodeError extends StratumError {
  /** What is wrong: nothing typed, the wrong number of symbols, a symbol outside the alphabet, or a failed check symbol. */
  readonly reason: JoinCodeErrorReason;
  /** With `character`: the 1-based position in the input of the offending character. */
  readonly position: number | undefined;
  /** With `character`: the offending character. */
  readonly character: string | undefined;
  /** With `check`: the display form of the one code that a single adjacent swap makes valid, if there is exactly one. */
  readonly suggestion: string | undefined;

  constructor(
    reason: JoinCodeErrorReason,
    message: string,
    extra: { position?: number; character?: string; suggestion?: string } = {},
  ) {
    super("JOIN_CODE_MALFORMED", message);
    this.name = "JoinCodeError";
    this.reason = reason;
    this.position = extra.position;
    this.character = extra.character;
    this.suggestion = extra.suggestion;
  }
}

/** One field's problem in a refusal, at its path (`links[0].interface`, `role`, …). */
export interface FieldProblem {
  /** The field's path; empty for the whole request. */
  field: string;
  /** What is wrong with it. */
  message: string;
}

/** The parsed `application/problem+json` body of a refusal. */
export interface ProblemBody {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  requestId?: string;
  code?: string;
  errors?: FieldProblem[];
  details?: Record<string, unknown>;
}

/**
 * The API refused a call: any 4xx/5xx answer, built from its problem+json body. `code` is the
 * spec's problem code (`JOIN_CODE_REVOKED`, `RATE_LIMITED`, …), or `HTTP_<status>` when the
 * body was not a problem document. It carries no request header, so never the bearer token.
 */
export class StratumApiError extends StratumError {
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
    const code = typeof problem.code === "string" && problem.code ? problem.code : `HTTP_${status}`;
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

/** The request never got an answer: refused, reset, DNS, TLS. The cause is the transport's error. */
export class NetworkError extends StratumError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("NETWORK", message, options);
    this.name = "NetworkError";
  }
}

/** A wait of the SDK's own (a `timeoutMs`) ran out. Aborts through a caller's signal are re-thrown as they are, not as this. */
export class TimeoutError extends StratumError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("TIMEOUT", message, options);
    this.name = "TimeoutError";
  }
}

/** True for the error an aborted `AbortSignal` throws (a DOMException `AbortError`, or the signal's own reason). */
export function isAbortError(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "AbortError";
}
