/**
 * The little HTTP layer both listeners share: a router, problem+json answers, request ids and
 * one log line per request. No framework: node:http's request and response objects, so the
 * join listener can reach the TLS socket under them. Refusals are in http-problem.ts, request
 * bodies in http-body.ts, the HTTP parser's own errors in http-client-errors.ts.
 * @module
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { newRequestId } from "./ids.js";
import { HttpProblem, problemBody } from "./http-problem.js";
import { isStorageFull, storageUnavailable } from "./storage-faults.js";

export {
  HttpProblem,
  invalidInput,
  quotedId,
  problemBody,
  type FieldError,
  type ProblemCode,
  type ProblemOptions,
} from "./http-problem.js";
export { fieldPath, parseBody, readJson, readOptionalJson, readRequiredJson } from "./http-body.js";

/** Where the server writes its log lines. One line per call, never a body, code, token or key. */
export type Logger = (line: string) => void;

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
    // Read now: once the socket is destroyed (a served file's connection is closed after the
    // answer) Node no longer knows the peer, and the log line would say "-".
    const peer = req.socket.remoteAddress ?? "-";
    res.on("close", () => {
      const ms = Math.round(performance.now() - started);
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
        // HTTP/1.1 requires Host (RFC 9112 3.2); Node's own bare 400 for it is turned off
        // (http-client-errors.ts) so that the refusal is a problem document like every other.
        if (req.httpVersion === "1.1" && req.headers.host === undefined) {
          ctx.closeConnection = true;
          throw new HttpProblem(400, "INVALID_INPUT", {
            detail: "An HTTP/1.1 request needs a Host header.",
            errors: [{ field: "Host", message: "is required" }],
          });
        }
        // A transfer coding other than chunked cannot be framed (RFC 9112 6.3); the parser
        // notices only once the body arrives, after this handler has answered, so refuse here.
        const coding = req.headers["transfer-encoding"];
        if (coding !== undefined && coding.trim().toLowerCase() !== "chunked") {
          ctx.closeConnection = true;
          throw new HttpProblem(400, "INVALID_INPUT", {
            detail: "The request's Transfer-Encoding is not one the server takes (chunked only).",
            errors: [{ field: "Transfer-Encoding", message: "must be chunked" }],
          });
        }
        if (options.before) await options.before(ctx);
        const found = options.router.match(req.method ?? "GET", url.pathname);
        if (!found) throw new HttpProblem(404, "NOT_FOUND", { detail: `No such resource: ${url.pathname}` });
        if ("allowed" in found) {
          throw new HttpProblem(405, "METHOD_NOT_ALLOWED", {
            detail: `${req.method} is not served at this path.`,
            headers: { Allow: [...new Set(found.allowed)].join(", ") },
          });
        }
        ctx.params = found.params;
        await found.handler(ctx);
      } catch (error) {
        if (error instanceof HttpProblem) {
          sendProblem(ctx, error);
        } else if (isStorageFull(error)) {
          // Not a bug: the disk is full. The caller retries; the operator sees it in the log.
          options.log(`${new Date().toISOString()} ${requestId} ${options.name} storage full: nothing was written`);
          sendProblem(ctx, storageUnavailable());
        } else {
          const what = error instanceof Error ? `${error.name}: ${error.message}` : "non-error thrown";
          options.log(`${new Date().toISOString()} ${requestId} ${options.name} error ${what}`);
          sendProblem(ctx, new HttpProblem(500, "INTERNAL", { detail: `The server failed; quote ${requestId}.` }));
        }
      }
    })();
  };
}
