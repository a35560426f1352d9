/**
 * The shapes of one HTTP/1.1 request and response as the downloader sees them: the sink a body is read
 * into, the body, the connector and the request's options.
 * @internal
 * @module
 */
import type { OnReadOpts } from "node:net";
import type { TLSSocket } from "node:tls";

/** Where a body's bytes go: buffers handed out by the consumer, filled in place. */
export interface BodySink {
  /**
   * Room for the next bytes: at least one byte long. The reader fills a prefix of it and then
   * calls {@link filled}; it asks again before every read, so the answer may change.
   */
  space(): Uint8Array;
  /**
   * `n` bytes were put at the start of the last {@link space}. A returned promise pauses the
   * connection until it settles (a rejection ends the body with it); a throw ends the body.
   */
  filled(n: number): Promise<void> | undefined;
}

/** A response body that can be read into a {@link BodySink}, or iterated (each chunk a fresh buffer). */
export interface DirectBody extends AsyncIterable<Uint8Array> {
  /** Reads the whole body into `sink`; resolves at its end, rejects if the connection breaks. Once only. */
  readInto(sink: BodySink): Promise<void>;
  /** Gives up on the body and closes the connection. */
  destroy(): void;
}

/** True for a body that {@link DirectBody.readInto} can read. */
export function isDirectBody(body: unknown): body is DirectBody {
  return typeof (body as Partial<DirectBody> | null)?.readInto === "function";
}

/**
 * Opens the connection for `http1Get`, passing `onread` to `tls.connect` (documented for
 * `tls.connect`; the type is `net`'s, which is the same).
 */
export interface Http1Connector {
  /**
   * Opens the TLS connection with this `onread` and resolves when it may carry the request
   * (handshake and any pinning done). `signal` aborts when the request is given up (a
   * timeout, the caller's abort): the attempt must then stop and reject.
   */
  (onread: OnReadOpts, signal: AbortSignal): Promise<TLSSocket>;
}

/** Options of `http1Get`. */
export interface Http1GetOptions {
  /** Opens the connection; see {@link Http1Connector}. */
  connect: Http1Connector;
  /** The `Host` header: `host[:port]`. */
  authority: string;
  /** The request target, already percent-encoded. */
  path: string;
  /** Request header fields; names are sent as given. */
  headers?: Record<string, string> | undefined;
  /** Aborts the request or its body; the abort is re-thrown as is. */
  signal?: AbortSignal | undefined;
  /** Longest wait from the request to the end of the response head, ms. Default 60 s. */
  headersTimeout?: number | undefined;
  /** Longest silence inside the body, ms. Default 60 s. */
  bodyTimeout?: number | undefined;
}

/** Header fields with lower-case names; a repeated field gives an array (in order). */
export type Http1Headers = Record<string, string | string[]>;

/** A response head, its body still on the connection. */
export interface Http1Response {
  status: number;
  /** Header fields with lower-case names; a repeated field gives an array (in order). */
  headers: Http1Headers;
  body: DirectBody;
}
