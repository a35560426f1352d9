/**
 * One TLS 1.3 connection to the join listener, held for a whole exchange. The PAKE is bound to
 * the TLS exporter of this very connection (docs/protocol.md#binding-transcript), so the HTTP
 * client on top of it must never quietly reconnect: a second socket would have another exporter and the
 * binding would fail, or worse, a reconnect could land somewhere else. The HTTP/1.1 client
 * here (pinned-http.ts) speaks on exactly one socket, the one opened and checked by this
 * module, and a request that would need another fails with `CONNECTION_CHANGED`.
 *
 * The socket itself, its checks and the exporter are in pinned-socket.ts.
 * @module
 */

import { isIP } from "node:net";
import { startDeadline } from "../core/deadline.js";
import { problemFromBody } from "../core/problem.js";
import { parseRetryAfter } from "../core/retry.js";
import { NetworkError, ResponseValidationError, type StratumApiError, StratumError } from "../errors/index.js";
import { PinnedHttp, type IncomingHttpHeaders } from "./pinned-http.js";
import { bareHost, connectPinnedSocket, peerChainOf, type OpenPinnedConnectionOptions } from "./pinned-socket.js";
import { hasTlsExporter, requireTlsExporter, tlsExporter } from "../protocol/tls-exporter.js";

/**
 * A request's deadline when its caller gives none: a long poll holds the request up to 30 s
 * before the first header byte, and a slow link or a busy founder deserves as long again
 * and more; past two minutes a listener that has not answered is taken for gone.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

export type { IncomingHttpHeaders } from "./pinned-http.js";

/** What {@link PinnedConnection.request} sends. */
export interface PinnedRequest {
  /** HTTP method (default `GET`). */
  method?: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | undefined;
  /** Path and query, e.g. `/v1/join/pake`. */
  path: string;
  /** Request headers. */
  headers?: Record<string, string> | undefined;
  /** A value sent as JSON (sets `content-type: application/json`). */
  json?: unknown | undefined;
  /** A raw body; ignored when `json` is given. */
  body?: string | Uint8Array | undefined;
  /** Aborts the request; the abort is re-thrown as is. Aborting a request in flight closes the connection. */
  signal?: AbortSignal | undefined;
  /**
   * Deadline of the request, its headers and its whole body, in ms (default
   * {@link DEFAULT_REQUEST_TIMEOUT_MS}); then `TimeoutError`, and the connection is closed.
   */
  timeoutMs?: number | undefined;
  /** Refuse bodies larger than this (default 16 MiB). */
  maxBodyBytes?: number | undefined;
}

/** What {@link PinnedConnection.request} returns. */
export interface PinnedResponse {
  /** HTTP status. */
  status: number;
  /** Response headers, lower-case names. */
  headers: IncomingHttpHeaders;
  /** The whole body. */
  body: Uint8Array;
  /** The body parsed, when the content type is JSON (`application/json`, `…+json`) and the body is not empty. */
  json: unknown;
}

/** A response header's (first) value; names are lower case. */
export function responseHeader(response: PinnedResponse, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The refusal (a 4xx/5xx answer) of a call on the listener as a typed error, `Retry-After` included. */
export function refusalOf(response: PinnedResponse, operation: string): StratumApiError {
  return problemFromBody(
    response.status,
    response.json,
    parseRetryAfter(responseHeader(response, "retry-after")),
    operation,
  );
}

/** A TLS 1.3 connection to the listener, held for one exchange, with an HTTP client on it. */
export interface PinnedConnection {
  /** False once the socket is closed (by either side) or {@link close} was called. */
  readonly alive: boolean;
  /**
   * The TLS exporter of this connection ({@link tlsExporter}), read at handshake time.
   * @throws RuntimeUnsupportedError `tls-exporter` where the runtime has none
   */
  exporter(): Uint8Array;
  /** The listener's certificates as presented, DER, leaf first ({@link peerChainOf}). */
  peerChainDer(): Uint8Array[];
  /** Sends one request on this connection and reads the whole answer. */
  request(request: PinnedRequest): Promise<PinnedResponse>;
  /** Closes the socket (a request in flight then fails). */
  close(): Promise<void>;
}

/**
 * Opens one TLS 1.3 connection to the listener, presenting `identity` as the client
 * certificate, and puts an HTTP/1.1 client on it that can never open a second one. With `ca`,
 * the listener's leaf is checked (`verifyListenerCertificate`: chain to the CA, validity, the
 * dialled host in its SANs, the listener role) before this resolves.
 * @throws NetworkError when the TCP connection fails; JoinProtocolError `TLS_FAILED` when the
 *   handshake fails (e.g. the peer does not speak TLS 1.3), `LISTENER_CERTIFICATE` when the
 *   leaf fails the check; TimeoutError after `connectTimeoutMs`; the signal's reason on abort
 */
export async function openPinnedConnection(options: OpenPinnedConnectionOptions): Promise<PinnedConnection> {
  const socket = await connectPinnedSocket(options);
  // Read now: it is needed after the socket may have closed (binding checks). A runtime
  // without the exporter still makes the pinned calls after a registration, which need none.
  let exporter: Uint8Array | undefined;
  try {
    if (hasTlsExporter()) exporter = tlsExporter(socket);
  } catch (error) {
    socket.destroy();
    throw error;
  }
  const chain = peerChainOf(socket);
  let closed = false;
  const host = bareHost(options.host);
  const http = new PinnedHttp(socket, `${isIP(host) === 6 ? `[${host}]` : host}:${options.port}`);
  return {
    get alive() {
      return !closed && http.reusable && socket.readyState === "open";
    },
    exporter: () => {
      if (!exporter) requireTlsExporter();
      return exporter!.slice();
    },
    peerChainDer: () => chain.map((der) => der.slice()),
    request: (request) => sendRequest(http, request),
    close: () => {
      closed = true;
      socket.destroy();
      return Promise.resolve();
    },
  };
}

async function sendRequest(http: PinnedHttp, request: PinnedRequest): Promise<PinnedResponse> {
  const method = request.method ?? "GET";
  const operation = `${method} ${request.path}`;
  const headers: Record<string, string> = { ...request.headers };
  let body: string | Uint8Array | undefined = request.body;
  if (request.json !== undefined) {
    body = JSON.stringify(request.json);
    headers["content-type"] = "application/json";
  }
  const maxBodyBytes = request.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const deadline = startDeadline(request.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, request.signal, operation);
  try {
    const response = await http.request({
      method,
      path: request.path,
      headers,
      body: typeof body === "string" ? Buffer.from(body, "utf8") : body,
      signal: deadline.signal,
      maxBodyBytes,
      operation,
    });
    const bytes = response.body;
    const contentType = String(response.headers["content-type"] ?? "");
    let json: unknown;
    if (bytes.length > 0 && /^application\/([a-z0-9.+-]*\+)?json\b/i.test(contentType)) {
      try {
        json = JSON.parse(Buffer.from(bytes).toString("utf8"));
      } catch {
        // A refusal whose body is broken is still a refusal (`HTTP_<status>`, see refusalOf);
        // only an answer meant to be used is refused for its body.
        if (response.status < 400)
          throw new ResponseValidationError(operation, [{ path: "", message: "the body is not valid JSON" }]);
      }
    }
    return { status: response.status, headers: response.headers, body: bytes, json };
  } catch (error) {
    // The caller's abort as it is, or this request's TimeoutError.
    if (deadline.signal.aborted) throw deadline.signal.reason;
    if (StratumError.is(error)) throw error;
    throw new NetworkError(`${operation} failed: ${(error as Error).message}`, { cause: error });
  } finally {
    deadline.dispose();
  }
}
