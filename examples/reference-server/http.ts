/**
 * The little HTTP layer both listeners share: a router, a JSON body reader with a size cap,
 * problem+json answers, request ids and one log line per request. No framework: node:http's
 * request and response objects, so the join listener can reach the TLS socket under them.
 * @module
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";
import { newRequestId } from "./ids.js";

/** Where the server writes its log lines. One line per call, never a body, code, token or key. */
export type Logger = (line: string) => void;

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

/** Shorthand for a 400 `INVALID_INPUT` with field errors. */
export function invalidInput(errors: FieldError[], detail = "The request does not match the schema."): HttpProblem {
  return new HttpProblem(400, "INVALID_INPUT", { detail, errors });
}

/** What a handler gets: the request, the response, its id and the route's parameters. */
export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  url: URL;
  params: Record<string, string>;
  /** Set by a handler that wants the connection closed after the answer (an oversized body). */
  closeConnection?: boolean;
}

/** A route handler. It answers through `ctx.res` or throws an {@link HttpProblem}. */
export type Handler = (ctx: RequestContext) => Promise<void> | void;

interface Route {
  method: string;
  segments: string[];
  handler: Handler;
}

/**
 * Routes by method and path pattern: `:name` takes one segment, a final `*name` the rest of the
 * path (slashes included). Segments are matched before decoding, so an encoded `%2F` never
 * splits a parameter.
 */
export class Router {
  readonly #routes: Route[] = [];

  /** Adds a route. */
  add(method: string, pattern: string, handler: Handler): this {
    this.#routes.push({ method, segments: pattern.split("/").slice(1), handler });
    return this;
  }

  /** The handler and parameters for a request, the methods allowed on a known path, or nothing. */
  match(
    method: string,
    pathname: string,
  ): { handler: Handler; params: Record<string, string> } | { allowed: string[] } | undefined {
    const parts = pathname.split("/").slice(1);
    const allowed: string[] = [];
    for (const route of this.#routes) {
      const params = matchSegments(route.segments, parts);
      if (!params) continue;
      if (route.method === method || (method === "HEAD" && route.method === "GET" && !this.#hasHead(route.segments))) {
        return { handler: route.handler, params };
      }
      allowed.push(route.method);
    }
    return allowed.length > 0 ? { allowed } : undefined;
  }

  #hasHead(segments: string[]): boolean {
    return this.#routes.some((r) => r.method === "HEAD" && r.segments.join("/") === segments.join("/"));
  }
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p.startsWith("*")) {
      const rest = parts.slice(i);
      if (rest.length === 0 || rest.join("/") === "") return undefined;
      params[p.slice(1)] = rest.join("/"); // left encoded: the handler decodes segment by segment
      return params;
    }
    const part = parts[i];
    if (part === undefined) return undefined;
    if (p.startsWith(":")) {
      if (part === "") return undefined;
      let value: string;
      try {
        value = decodeURIComponent(part);
      } catch {
        return undefined;
      }
      params[p.slice(1)] = value;
    } else if (p !== part) {
      return undefined;
    }
  }
  return parts.length === pattern.length ? params : undefined;
}

/** Writes a JSON answer. Every answer is `no-store`: some carry secrets shown once. */
export function sendJson(
  ctx: RequestContext,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  ctx.res.writeHead(status, {
    ...headers,
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-store",
  });
  ctx.res.end(ctx.req.method === "HEAD" ? undefined : text);
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

/** Answers a refusal as problem+json. */
export function sendProblem(ctx: RequestContext, problem: HttpProblem): void {
  if (ctx.res.headersSent) {
    ctx.res.destroy();
    return;
  }
  const text = JSON.stringify(problemBody(problem, ctx.requestId));
  ctx.res.writeHead(problem.status, {
    ...problem.headers,
    "Content-Type": "application/problem+json",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-store",
    ...(ctx.closeConnection ? { Connection: "close" } : {}),
  });
  ctx.res.end(ctx.req.method === "HEAD" ? undefined : text);
}

/**
 * Reads a JSON body of at most `maxBytes`. An empty body is `undefined` (the caller decides
 * whether one is required). Too large or not JSON: a 400 `INVALID_INPUT` with a field error
 * for the whole body, never a 500. An oversized body is not read further: the connection is
 * closed after the answer, so a client cannot make the server buffer gigabytes.
 */
export async function readJson(ctx: RequestContext, maxBytes: number): Promise<unknown> {
  const declared = Number(ctx.req.headers["content-length"] ?? NaN);
  const tooLarge = (): HttpProblem => {
    ctx.closeConnection = true;
    return invalidInput(
      [{ field: "", message: `the body is larger than ${maxBytes} bytes` }],
      "The request body is too large.",
    );
  };
  if (Number.isFinite(declared) && declared > maxBytes) {
    ctx.req.resume(); // drain without keeping it, so the answer can be read by the client
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  await new Promise<void>((resolve, reject) => {
    ctx.req.on("data", (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > maxBytes) {
        over = true;
        chunks.length = 0;
        resolve();
        return;
      }
      chunks.push(chunk);
    });
    ctx.req.on("end", () => resolve());
    ctx.req.on("error", reject);
    ctx.req.on("aborted", () => reject(new Error("request aborted")));
  });
  if (over) throw tooLarge();
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // The parser's message can quote the body, which may hold a secret: say only what is wrong.
    throw invalidInput([{ field: "", message: "the body is not valid JSON" }], "The request body is not JSON.");
  }
}

/** A zod issue path as the spec writes field paths: `links[0].interface`, `disks[1].confirm`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

/**
 * Validates a parsed body with a zod schema. A mismatch is a 400 `INVALID_INPUT` with one field
 * error per issue, at its path; the message never repeats the value.
 */
export function parseBody<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = result.error.issues.map((issue) => ({ field: fieldPath(issue.path), message: issue.message }));
  throw invalidInput(errors);
}

/** How a listener answers cross-origin calls: the origins allowed, or none. */
export interface CorsPolicy {
  /** True when `origin` may call. */
  allows(origin: string): boolean;
}

/** The options of {@link createRequestHandler}. */
export interface HandlerOptions {
  /** The listener's name in log lines (`admin`, `join`). */
  name: string;
  router: Router;
  log: Logger;
  /** Answers CORS (and its preflight) for these origins. */
  cors?: CorsPolicy;
  /** Runs before routing, e.g. to refuse a TLS client without a certificate. */
  before?: (ctx: RequestContext) => void | Promise<void>;
}

const CORS_EXPOSED = "Retry-After, WWW-Authenticate, ETag, X-Request-Id, Content-Range, Accept-Ranges";

/**
 * The node:http request listener: a request id, CORS, routing, problem answers for refusals
 * and for unexpected failures (`INTERNAL`, logged with the request id), and one log line per
 * request once the answer is sent: time, request id, listener, peer, method, path (no query),
 * status, duration.
 */
export function createRequestHandler(options: HandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const started = performance.now();
    const requestId = newRequestId();
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://reference.invalid");
    } catch {
      url = new URL("http://reference.invalid/");
    }
    const ctx: RequestContext = { req, res, requestId, url, params: {} };
    res.setHeader("X-Request-Id", requestId);
    res.on("close", () => {
      const ms = Math.round(performance.now() - started);
      const peer = req.socket.remoteAddress ?? "-";
      // The path only: ids are public, and no route puts a secret in its path; the query is dropped.
      options.log(
        `${new Date().toISOString()} ${requestId} ${options.name} ${peer} ${req.method} ${url.pathname} ${res.writableFinished ? res.statusCode : `${res.statusCode}!`} ${ms}ms`,
      );
    });
    void (async () => {
      try {
        const origin = req.headers.origin;
        if (options.cors && typeof origin === "string" && options.cors.allows(origin)) {
          res.setHeader("Access-Control-Allow-Origin", origin);
          res.setHeader("Vary", "Origin");
          res.setHeader("Access-Control-Expose-Headers", CORS_EXPOSED);
          if (req.method === "OPTIONS") {
            res.writeHead(204, {
              "Access-Control-Allow-Methods": "GET, HEAD, POST, PUT, DELETE, OPTIONS",
              "Access-Control-Allow-Headers": "Authorization, Content-Type, If-None-Match",
              "Access-Control-Max-Age": "600",
            });
            res.end();
            return;
          }
        }
        if (options.before) await options.before(ctx);
        const found = options.router.match(req.method ?? "GET", url.pathname);
        if (!found) throw new HttpProblem(404, "NOT_FOUND", { detail: `No such resource: ${url.pathname}` });
        if ("allowed" in found) {
          throw new HttpProblem(405, "NOT_FOUND", {
            detail: `${req.method} is not served at this path.`,
            headers: { Allow: [...new Set(found.allowed)].join(", ") },
          });
        }
        ctx.params = found.params;
        await found.handler(ctx);
      } catch (error) {
        if (error instanceof HttpProblem) {
          sendProblem(ctx, error);
        } else {
          const what = error instanceof Error ? `${error.name}: ${error.message}` : "non-error thrown";
          options.log(`${new Date().toISOString()} ${requestId} ${options.name} error ${what}`);
          sendProblem(ctx, new HttpProblem(500, "INTERNAL", { detail: `The server failed; quote ${requestId}.` }));
        }
      }
    })();
  };
}
