/**
 * One TLS 1.3 connection to the join listener, held for a whole exchange. The PAKE is bound to
 * the TLS exporter of this very connection (docs/protocol.md#binding-transcript), so the HTTP
 * client on top of it must never quietly reconnect: a second socket would have another exporter and the
 * binding would fail, or worse, a reconnect could land somewhere else. The undici `Client`
 * here gets exactly one socket, the one opened and checked by this module, and a request that
 * would need another fails with `CONNECTION_CHANGED`.
 *
 * The socket itself, its checks and the exporter are in pinned-socket.ts.
 * @module
 */

import { isIP } from "node:net";
import type * as Undici from "undici";
import type { Client, Dispatcher } from "undici";
import { startDeadline } from "../core/deadline.js";
import { problemFromBody } from "../core/problem.js";
import { parseRetryAfter } from "../core/retry.js";
import { NetworkError, ResponseValidationError, type StratumApiError, StratumError } from "../errors/index.js";
import { JoinProtocolError } from "../errors/index.js";
import {
  bareHost,
  connectPinnedSocket,
  peerChainOf,
  tlsExporter,
  type OpenPinnedConnectionOptions,
} from "./pinned-socket.js";

// Idle time undici tolerates on the socket between requests. It must outlast the joiner's
// Argon2 (finishLogin) and checks between the PAKE answer and KE3, and the gap between two
// long polls; a server's `Keep-Alive: timeout=N` hint can still shorten it.
const KEEP_ALIVE_MS = 10 * 60_000;
// Every request has one deadline of its own (`PinnedRequest.timeoutMs`), covering the request,
// the headers and the whole body, that ends in a TimeoutError. undici's own timeouts are idle
// timers (a body dripping one byte a second never trips them) and end in undici's errors, so
// they are switched off rather than left to race the deadline.
const UNDICI_TIMEOUTS_OFF = 0;
/**
 * A request's deadline when its caller gives none: a long poll holds the request up to 30 s
 * before the first header byte, and a slow link or a busy founder deserves as long again
 * and more; past two minutes a listener that has not answered is taken for gone.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Response headers as undici gives them: lower-case names, repeated headers as arrays. */
export type IncomingHttpHeaders = Record<string, string | string[] | undefined>;

/** What {@link PinnedConnection.request} sends. */
export interface PinnedRequest {
  /** HTTP method (default `GET`). */
  method?: Dispatcher.HttpMethod;
  /** Path and query, e.g. `/v1/join/pake`. */
  path: string;
  /** Request headers. */
  headers?: Record<string, string>;
  /** A value sent as JSON (sets `content-type: application/json`). */
  json?: unknown;
  /** A raw body; ignored when `json` is given. */
  body?: string | Uint8Array;
  /** Aborts the request; the abort is re-thrown as is. Aborting a request in flight closes the connection. */
  signal?: AbortSignal;
  /**
   * Deadline of the request, its headers and its whole body, in ms (default
   * {@link DEFAULT_REQUEST_TIMEOUT_MS}); then `TimeoutError`, and the connection is closed.
   */
  timeoutMs?: number;
  /** Refuse bodies larger than this (default 16 MiB). */
  maxBodyBytes?: number;
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
  /** The undici client bound to this connection's one socket; pipelining 1. */
  readonly client: Client;
  /** False once the socket is closed (by either side) or {@link close} was called. */
  readonly alive: boolean;
  /** The TLS exporter of this connection ({@link tlsExporter}), read at handshake time. */
  exporter(): Uint8Array;
  /** The listener's certificates as presented, DER, leaf first ({@link peerChainOf}). */
  peerChainDer(): Uint8Array[];
  /** Sends one request on this connection and reads the whole answer. */
  request(request: PinnedRequest): Promise<PinnedResponse>;
  /** Closes the HTTP client (after requests in flight) and the socket. */
  close(): Promise<void>;
}

/**
 * undici, loaded by the first connection rather than with the joiner: about 19 MiB of memory
 * and 0.12 s of CPU (on this project's machine) that a program reading a join session never
 * needs.
 * @internal
 */
export function loadUndici(): Promise<typeof Undici> {
  return import("undici");
}

/**
 * Opens one TLS 1.3 connection to the listener, presenting `identity` as the client
 * certificate, and puts an undici `Client` on it that can never open a second one. With `ca`,
 * the listener's leaf is checked (`verifyListenerCertificate`: chain to the CA, validity, the
 * dialled host in its SANs, the listener role) before this resolves.
 * @throws NetworkError when the TCP connection fails; JoinProtocolError `TLS_FAILED` when the
 *   handshake fails (e.g. the peer does not speak TLS 1.3), `LISTENER_CERTIFICATE` when the
 *   leaf fails the check; TimeoutError after `connectTimeoutMs`; the signal's reason on abort
 */
export async function openPinnedConnection(options: OpenPinnedConnectionOptions): Promise<PinnedConnection> {
  // Loaded while the handshake runs. Caught here so that a failed handshake, which never
  // awaits it, leaves no unhandled rejection behind; it is awaited (and re-thrown) below.
  const undici = loadUndici();
  undici.catch(() => undefined);
  const socket = await connectPinnedSocket(options);
  // Read now: both are needed after the socket may have closed (error reports, binding checks).
  const exporter = tlsExporter(socket);
  const chain = peerChainOf(socket);
  let closed = false;
  // Until undici takes the socket over, an error (a reset by the server) must not go unhandled.
  socket.on("error", () => {});

  let handedOver = false;
  const host = bareHost(options.host);
  const origin = `https://${isIP(host) === 6 ? `[${host}]` : host}:${options.port}`;
  let UndiciClient: typeof Client;
  try {
    UndiciClient = (await undici).Client;
  } catch (error) {
    socket.destroy();
    throw error;
  }
  const client = new UndiciClient(origin, {
    connect: (_connectOptions, callback) => {
      // Answer asynchronously, as a real connector does: undici calls the connector from inside
      // its dispatch loop and ignores a re-entrant resume, so a synchronous answer would leave
      // the first request queued forever.
      queueMicrotask(() => {
        if (!handedOver && !socket.destroyed) {
          handedOver = true;
          callback(null, socket);
          return;
        }
        callback(
          new JoinProtocolError(
            "CONNECTION_CHANGED",
            "the connection to the join listener was closed; the exchange cannot continue on a new connection, start it again",
          ),
          null,
        );
      });
    },
    pipelining: 1,
    keepAliveTimeout: KEEP_ALIVE_MS,
    keepAliveMaxTimeout: KEEP_ALIVE_MS,
    headersTimeout: UNDICI_TIMEOUTS_OFF,
    bodyTimeout: UNDICI_TIMEOUTS_OFF,
  });

  const connection: PinnedConnection = {
    client,
    get alive() {
      return !closed && !socket.destroyed && socket.readyState === "open";
    },
    exporter: () => exporter.slice(),
    peerChainDer: () => chain.map((der) => der.slice()),
    request: (request) => sendRequest(client, request),
    close: async () => {
      closed = true;
      try {
        await client.close();
      } catch {
        // Closing is best effort; the socket is destroyed below either way.
      } finally {
        socket.destroy();
      }
    },
  };
  return connection;
}

async function sendRequest(client: Client, request: PinnedRequest): Promise<PinnedResponse> {
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
    const response = await client.request({
      method,
      path: request.path,
      headers,
      body: body ?? null,
      signal: deadline.signal,
    });
    const chunks: Uint8Array[] = [];
    let total = 0;
    for await (const chunk of response.body) {
      total += (chunk as Uint8Array).length;
      if (total > maxBodyBytes) {
        response.body.destroy();
        throw new StratumError("RESPONSE_TOO_LARGE", `the answer of ${operation} is larger than ${maxBodyBytes} bytes`);
      }
      chunks.push(chunk as Uint8Array);
    }
    const bytes = new Uint8Array(Buffer.concat(chunks));
    const contentType = String(response.headers["content-type"] ?? "");
    let json: unknown;
    if (bytes.length > 0 && /^application\/([a-z0-9.+-]*\+)?json\b/i.test(contentType)) {
      try {
        json = JSON.parse(Buffer.from(bytes).toString("utf8"));
      } catch {
        // A refusal whose body is broken is still a refusal (`HTTP_<status>`, see refusalOf);
        // only an answer meant to be used is refused for its body.
        if (response.statusCode < 400)
          throw new ResponseValidationError(operation, [{ path: "", message: "the body is not valid JSON" }]);
      }
    }
    return { status: response.statusCode, headers: response.headers, body: bytes, json };
  } catch (error) {
    // The caller's abort as it is, or this request's TimeoutError: whatever undici made of it.
    if (deadline.signal.aborted) throw deadline.signal.reason;
    if (StratumError.is(error)) throw error;
    throw new NetworkError(`${operation} failed: ${(error as Error).message}`, { cause: error });
  } finally {
    deadline.dispose();
  }
}
