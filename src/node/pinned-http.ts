/**
 * HTTP/1.1 on the pinned socket: one request at a time, the connection kept alive between
 * them, and never a second socket (docs/protocol.md#binding-transcript: the proof is bound to
 * this connection's TLS exporter).
 *
 * Why not undici: the joiner's calls are small JSON calls on one socket the SDK opened and
 * checked itself, so a general client brings nothing they need, and it cost the most of an
 * installer's bundle (undici was 520 kB of a 1 MB stage 1, minified), loaded only through a
 * CommonJS `require` of Node built-ins that an ES module bundle cannot do, and is replaced by
 * a runtime's own under Bun. The response reader is the release download's
 * (`src/transport/http1/`): the same framing rules, held to llhttp's by a fuzz test.
 * @internal
 * @module
 */

import type { TLSSocket } from "node:tls";
import { JoinProtocolError, StratumError } from "../errors/index.js";
import { Http1Error } from "../transport/http1/error.js";
import { TOKEN } from "../transport/http1/fields.js";
import { findHeadEnd, framingOf, MAX_HEAD_BYTES, parseHead, type Framing } from "../transport/http1/head.js";
import type { Http1Headers } from "../transport/http1/types.js";

/** Response headers: lower-case names, repeated headers as arrays. */
export type IncomingHttpHeaders = Record<string, string | string[] | undefined>;

/** One request on the pinned socket. */
export interface PinnedHttpRequest {
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
  /** Ends the request (and the connection: a response half read cannot be skipped). */
  signal: AbortSignal;
  maxBodyBytes: number;
  /** `METHOD /path`, for messages. */
  operation: string;
}

/** Its answer, the whole body read. */
export interface PinnedHttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Uint8Array;
}

// eslint-disable-next-line no-control-regex -- control characters are what a header value must not hold
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;
const PATH = /^\/[\x21-\x7e]*$/;
/** Methods whose requests carry a body: a `Content-Length` is always sent for them, 0 included. */
const WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/**
 * The HTTP/1.1 client on one socket. The socket is referenced (keeps the process alive) only
 * while a request is in flight, as undici's idle sockets were not.
 */
export class PinnedHttp {
  readonly #socket: TLSSocket;
  readonly #authority: string;
  /** Bytes received and not yet taken by a request. */
  #received: Buffer = Buffer.alloc(0);
  #ended = false;
  /** False once the listener said `Connection: close`, a body was framed by the close, or a request broke. */
  #reusable = true;
  #queue: Promise<unknown> = Promise.resolve();
  #inFlight = false;
  /** Wakes the request in flight at every event of the socket. */
  #wake: (() => void) | undefined;
  #failure: Error | undefined;

  constructor(socket: TLSSocket, authority: string) {
    this.#socket = socket;
    this.#authority = authority;
    socket.on("data", (chunk: Buffer) => {
      this.#received = this.#received.length === 0 ? chunk : Buffer.concat([this.#received, chunk]);
      // Bytes nobody asked for: the listener is not speaking HTTP/1.1 as a server does.
      if (!this.#inFlight) this.#reusable = false;
      this.#wake?.();
    });
    const end = (error?: Error): void => {
      this.#ended = true;
      this.#failure ??= error;
      this.#wake?.();
    };
    socket.on("end", () => end());
    socket.on("close", () => end());
    socket.on("error", (error) => end(error));
    socket.unref();
  }

  /** True while a new request may start on this socket. */
  get reusable(): boolean {
    return this.#reusable && !this.#ended && !this.#socket.destroyed;
  }

  /**
   * Sends `request` after the requests before it, and reads its whole answer. Rejects with a
   * StratumError (`RESPONSE_TOO_LARGE`; `CONNECTION_CHANGED`, a JoinProtocolError), an Http1Error or the socket's
   * error as they are: the connection's `request` turns them into its own errors.
   */
  request(request: PinnedHttpRequest): Promise<PinnedHttpResponse> {
    const run = this.#queue.then(() => this.#roundTrip(request));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #roundTrip(request: PinnedHttpRequest): Promise<PinnedHttpResponse> {
    const head = requestHead(request, this.#authority);
    request.signal.throwIfAborted();
    if (!this.reusable)
      throw new JoinProtocolError(
        "CONNECTION_CHANGED",
        "the connection to the join listener was closed; the exchange cannot continue on a new connection, start it again",
      );
    const onAbort = (): void => {
      // An answer half read cannot be skipped: the connection goes with the request (a
      // destroyed socket is never reusable).
      this.#socket.destroy();
      this.#wake?.();
    };
    request.signal.addEventListener("abort", onAbort);
    this.#inFlight = true;
    this.#socket.ref();
    try {
      this.#socket.write(request.body ? Buffer.concat([head, request.body]) : head);
      const response = await this.#read(request);
      if (!keepsAlive(response.headers)) this.#reusable = false;
      return response;
    } catch (error) {
      // a broken request ends the connection: what is left of its answer cannot be skipped
      this.#socket.destroy();
      throw error;
    } finally {
      request.signal.removeEventListener("abort", onAbort);
      this.#inFlight = false;
      this.#wake = undefined;
      if (!this.#socket.destroyed) this.#socket.unref();
    }
  }

  /** Waits for more bytes (or the end); throws when the socket ended without them. */
  async #more(what: string): Promise<void> {
    if (this.#ended)
      throw this.#failure ?? new Http1Error("HTTP1_CLOSED", `the join listener closed the connection ${what}`);
    await new Promise<void>((resolve) => (this.#wake = resolve));
    this.#wake = undefined;
  }

  /** Takes `n` bytes off the front of what was received. */
  #take(n: number): Buffer {
    const taken = this.#received.subarray(0, n);
    this.#received = this.#received.subarray(n);
    return taken;
  }

  async #read(request: PinnedHttpRequest): Promise<PinnedHttpResponse> {
    for (;;) {
      const { status, headers, http10 } = await this.#readHead();
      // An interim answer (100 Continue, 103 Early Hints) comes before the real one; parseHead
      // takes no status below 100.
      if (status < 200) continue;
      if (http10) this.#reusable = false;
      // A HEAD answer's Content-Length is the GET's: it has no body (RFC 9110 section 9.3.2).
      const framing = framingOf(status, headers);
      const body = request.method === "HEAD" ? new Uint8Array(0) : await this.#readBody(framing, request);
      return { status, headers, body };
    }
  }

  async #readHead(): Promise<{ status: number; headers: Http1Headers; http10: boolean }> {
    let searched = 0;
    for (;;) {
      // search from just before the new bytes, in case the blank line straddles two reads
      const end = findHeadEnd(this.#received, searched - 3);
      if ((end ?? this.#received.length) > MAX_HEAD_BYTES)
        throw new Http1Error("HTTP1_PARSE", `the response head is larger than ${MAX_HEAD_BYTES} bytes`);
      if (end !== undefined) {
        // the lines, without the CR LF of the last one; the body starts after the blank line
        const text = this.#received.subarray(0, Math.max(0, end - 2)).toString("latin1");
        this.#take(end + 2);
        return { ...parseHead(text), http10: text.startsWith("HTTP/1.0") };
      }
      searched = this.#received.length;
      await this.#more("before its answer");
    }
  }

  async #readBody(framing: Framing, request: PinnedHttpRequest): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let total = 0;
    const tooLarge = (): StratumError =>
      new StratumError(
        "RESPONSE_TOO_LARGE",
        `the answer of ${request.operation} is larger than ${request.maxBodyBytes} bytes`,
      );
    const keep = (bytes: Uint8Array): void => {
      total += bytes.length;
      if (total > request.maxBodyBytes) throw tooLarge();
      // copied: the received buffer's bytes are dropped once taken
      chunks.push(Uint8Array.prototype.slice.call(bytes));
    };
    if (framing.kind === "length") {
      // refused before a byte of it is waited for
      if (framing.remaining > request.maxBodyBytes) throw tooLarge();
      while (this.#received.length < framing.remaining) await this.#more("in the middle of its answer");
      keep(this.#take(framing.remaining));
    } else if (framing.kind === "chunked") {
      for (;;) {
        const used = framing.decoder.decode(this.#received, (data) => (keep(data), true));
        this.#take(used);
        if (framing.decoder.complete) break;
        await this.#more("in the middle of its answer");
      }
    } else {
      // Framed by the close: everything until the end, and the connection is done with it.
      for (;;) {
        keep(this.#take(this.#received.length));
        if (this.#ended) break;
        await this.#more("");
      }
      if (this.#failure) throw this.#failure;
    }
    return chunks.length === 1 ? chunks[0]! : new Uint8Array(Buffer.concat(chunks));
  }
}

/** The request head, with `Host` and the body's `Content-Length`; a TypeError names a field that cannot be sent. */
function requestHead(request: PinnedHttpRequest, authority: string): Buffer {
  if (!TOKEN.test(request.method)) throw new TypeError(`${JSON.stringify(request.method)} is not an HTTP method`);
  if (!PATH.test(request.path)) throw new TypeError("the request path is not an absolute, percent-encoded path");
  const lines = [`${request.method} ${request.path} HTTP/1.1`, `host: ${authority}`];
  for (const [name, value] of Object.entries(request.headers)) {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name) || CONTROL.test(value))
      throw new TypeError(`request header ${JSON.stringify(name)} is not a valid field`);
    // framing is this module's to say
    if (lower === "host" || lower === "content-length" || lower === "transfer-encoding" || lower === "connection")
      continue;
    lines.push(`${lower}: ${value}`);
  }
  if (request.body || WITH_BODY.has(request.method)) lines.push(`content-length: ${request.body?.length ?? 0}`);
  return Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
}

/** False when the answer says the connection closes after it. */
function keepsAlive(headers: IncomingHttpHeaders): boolean {
  const connection = headers.connection;
  const tokens = (Array.isArray(connection) ? connection.join(",") : (connection ?? ""))
    .split(",")
    .map((t) => t.trim().toLowerCase());
  return !tokens.includes("close");
}
