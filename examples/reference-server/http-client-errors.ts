/**
 * The answers Node's HTTP parser would otherwise write itself. A request the parser cannot read
 * (an invalid method, raw bytes in the path, a header block past 16 KiB, a `Transfer-Encoding`
 * other than chunked, a request that does not arrive in time) never reaches a handler: Node
 * emits `clientError` and, unless told otherwise, writes a bare `400`/`431` with no body. The
 * API promises every 4xx and 5xx as problem+json with a `code` and a `requestId`, so both
 * listeners answer these here, as a problem document, and close the connection (what follows
 * on it cannot be framed). Node's other answers of its own get the same treatment: an `Expect`
 * other than `100-continue` (its bare 417), a `CONNECT` (a dropped connection: 405 here), and an
 * HTTP/1.1 request without `Host` (its bare 400: the check is left to createRequestHandler,
 * which answers it as a problem).
 * @module
 */

import type { IncomingMessage, Server as HttpServer, ServerResponse } from "node:http";
import type { Server as HttpsServer } from "node:https";
import type { Duplex } from "node:stream";
import type { Logger } from "./http.js";
import { HttpProblem, problemBody } from "./http-problem.js";
import { newRequestId } from "./ids.js";

/** Reason phrases of the statuses answered here. */
const REASONS: Record<number, string> = {
  400: "Bad Request",
  405: "Method Not Allowed",
  408: "Request Timeout",
  417: "Expectation Failed",
  431: "Request Header Fields Too Large",
};

/** The problem a parser error is answered with, by the parser's (llhttp's) or Node's error code. */
function problemFor(code: string | undefined): HttpProblem {
  if (code === "HPE_HEADER_OVERFLOW")
    return new HttpProblem(431, "INVALID_INPUT", {
      detail: "The request's header block is larger than the server reads (16 KiB).",
    });
  if (code === "ERR_HTTP_REQUEST_TIMEOUT")
    return new HttpProblem(408, "INVALID_INPUT", { detail: "The request did not arrive in time." });
  const what: Record<string, string> = {
    HPE_INVALID_METHOD: "its method is not a valid HTTP method",
    HPE_INVALID_URL: "its path is not a valid request target (bytes that must be percent-encoded)",
    HPE_INVALID_TRANSFER_ENCODING: "its Transfer-Encoding is not one the server takes (chunked only)",
    HPE_UNEXPECTED_CONTENT_LENGTH: "it has both Content-Length and Transfer-Encoding",
    HPE_INVALID_CONTENT_LENGTH: "its Content-Length is not a number",
    HPE_INVALID_HEADER_TOKEN: "a header name or value holds a character HTTP does not allow",
    HPE_INVALID_VERSION: "its HTTP version is not one the server speaks",
    HPE_INVALID_CHUNK_SIZE: "a chunk size is not hexadecimal",
  };
  const reason = code !== undefined ? what[code] : undefined;
  return new HttpProblem(400, "INVALID_INPUT", {
    detail: `The request is not valid HTTP/1.1${reason ? `: ${reason}` : ""}.`,
  });
}

/** The whole answer, written on the raw socket: the parser has given up on this connection. */
function rawAnswer(problem: HttpProblem, requestId: string): string {
  const body = JSON.stringify(problemBody(problem, requestId));
  return [
    `HTTP/1.1 ${problem.status} ${REASONS[problem.status] ?? "Bad Request"}`,
    "Content-Type: application/problem+json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Cache-Control: no-store",
    `X-Request-Id: ${requestId}`,
    ...Object.entries(problem.headers).map(([name, value]) => `${name}: ${value}`),
    "Connection: close",
    "",
    body,
  ].join("\r\n");
}

/**
 * Answers `server`'s parser errors and unmet expectations as problem+json, each logged on one
 * line like a request (method and path `-`: the parser did not read them, and raw bytes are
 * never logged).
 */
export function answerClientErrors(server: HttpServer | HttpsServer, options: { name: string; log: Logger }): void {
  const logLine = (requestId: string, peer: string | undefined, status: number, what: string): void =>
    options.log(`${new Date().toISOString()} ${requestId} ${options.name} ${peer ?? "-"} - - ${status} (${what})`);
  // Node's bare 400 for an HTTP/1.1 request without Host is turned off; createRequestHandler
  // refuses such a request itself, as a problem document.
  (server as { requireHostHeader?: boolean }).requireHostHeader = false;

  server.on("connect", (req: IncomingMessage, socket: Duplex) => {
    const requestId = newRequestId();
    const problem = new HttpProblem(405, "METHOD_NOT_ALLOWED", {
      detail: "CONNECT is not served: this is not a proxy.",
      headers: { Allow: "GET, HEAD, POST, PUT, DELETE, OPTIONS" },
    });
    logLine(requestId, req.socket.remoteAddress, 405, "CONNECT");
    socket.end(rawAnswer(problem, requestId));
  });

  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A connection reset by the peer has no one to answer; one whose answer has started cannot
    // get another (Node's own rule).
    const current = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    if (current?.headersSent) {
      // A handler already answered (the parser failed on the body after the headers): let
      // that answer reach the client, then close; cut one still streaming.
      if (current.writableEnded) socket.end();
      else socket.destroy();
      return;
    }
    const requestId = newRequestId();
    const problem = problemFor(error.code);
    logLine(
      requestId,
      (socket as Duplex & { remoteAddress?: string }).remoteAddress,
      problem.status,
      error.code ?? "?",
    );
    socket.end(rawAnswer(problem, requestId));
  });

  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
    const requestId = newRequestId();
    const problem = new HttpProblem(417, "INVALID_INPUT", {
      detail: "The server meets no expectation but 100-continue.",
    });
    const body = JSON.stringify(problemBody(problem, requestId));
    logLine(requestId, req.socket.remoteAddress, 417, "Expect");
    res.writeHead(417, {
      "Content-Type": "application/problem+json",
      "Content-Length": Buffer.byteLength(body),
      "Cache-Control": "no-store",
      "X-Request-Id": requestId,
      Connection: "close",
    });
    res.end(body);
  });
}
