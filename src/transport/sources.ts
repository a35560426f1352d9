/**
 * Where release files come from. The downloader speaks to a {@link ReleaseSource}, so a mirror
 * (plain HTTPS), the founder (the pinned join-listener connection) and tests all plug in the
 * same way; every rule about what an answer may be lives in the downloader, not here.
 * @module
 */
import type { Socket } from "node:net";
import type { Dispatcher } from "undici";
import { ReleaseArgumentError } from "../errors/index.js";
import { tlsConnector } from "./connect.js";
import { http1Get } from "./http1/index.js";
import { chooseProxy } from "./proxy.js";
import { tunnelConnector } from "./tunnel.js";

/** One request of the downloader: a whole file, its tail from `range.start`, or the bytes from `range.start` to `range.end`. */
export interface ReleaseFetchRequest {
  /** Ask for the bytes from `start` to `end` or to the end (`Range: bytes=START-[END]`). Absent: the whole file. */
  range?:
    | {
        /** The first byte wanted, counted from 0. */
        start: number;
        /**
         * The last byte wanted, inclusive (`Range: bytes=START-END`); absent: to the end of the
         * file. Set only by a download on several connections, which the SDK's mirror source does.
         */
        end?: number | undefined;
      }
    | undefined;
  /** A strong ETag to send as `If-Range`, so a changed file comes back whole (200), not spliced. */
  ifRange?: string | undefined;
  /** Aborts the request and its body. */
  signal?: AbortSignal | undefined;
}

/** Response headers with lower-case names, as Node and undici give them. */
export type ReleaseResponseHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** The answer to a {@link ReleaseFetchRequest}, before its body is read. */
export interface ReleaseFetchResponse {
  /** The HTTP status. */
  status: number;
  /** The headers, lower-case names. */
  headers: ReleaseResponseHeaders;
  /**
   * The body, exactly as sent (not decompressed). The downloader reads it or cancels it
   * (`return()` on its iterator). The SDK's own sources give a body that can also be read
   * straight into the downloader's buffers (no copy); any async iterable or stream works.
   */
  body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;
}

/**
 * A place release files are fetched from, by release path (`payload/manifest.json`,
 * `os/blobs/…`). Contract: `fetch` sends one GET for that path with `Accept-Encoding: identity`,
 * `Range: bytes=START-[END]` when `range` is given and `If-Range` when `ifRange` is; it neither
 * retries, decompresses nor follows redirects; it resolves with the answer as soon as the
 * headers are in and rejects only when no answer came (refused, reset, TLS, abort: the
 * abort re-thrown as is). The downloader applies every rule to what comes back.
 */
export interface ReleaseSource {
  /** A short description for messages and logs (`mirror https://…`, `founder …`). Carries no secret. */
  describe(): string;
  /** Fetches one file, or its tail. */
  fetch(path: string, request: ReleaseFetchRequest): Promise<ReleaseFetchResponse>;
  /** Releases the connections the source opened itself, if any. */
  close?(): Promise<void>;
}

/**
 * What undici buffers of a body before it stops reading the socket: room for the network to
 * keep going through a write or a hash (4 MiB, one write batch), no more.
 */
const DEFAULT_HIGH_WATER_MARK = 4 << 20;
/** Default headers and body timeouts: a minute, undici's own, and the HTTP/1.1 reader's. */
const DEFAULT_TIMEOUT_MS = 60_000;
export { tlsConnector };

/** The port of an `https:` URL that names none. */
const HTTPS_PORT = 443;

/** Tuning shared by the undici-backed sources. */
export interface DispatcherSourceOptions {
  /** The origin (`https://host:port`) to send requests to; needed for an Agent or Pool, ignored by a Client bound to one origin. */
  origin?: string | undefined;
  /** Extra request headers (e.g. a `user-agent`). Range, If-Range and Accept-Encoding are the downloader's. */
  headers?: Record<string, string> | undefined;
  /** Bytes undici buffers per response before it stops reading the socket. Default 4 MiB: room for the network to keep going while a write or a hash catches up. */
  highWaterMark?: number | undefined;
  /** Longest wait for the headers, ms. Default 60 s. */
  headersTimeout?: number | undefined;
  /** Longest silence inside a body, ms. Default 60 s: a stalled transfer is cut and resumed. */
  bodyTimeout?: number | undefined;
  /** A description for messages; default `basePath` on the dispatcher's origin. */
  description?: string | undefined;
}

/**
 * A source on any undici Dispatcher: GET `basePath/<release path>` (each segment
 * percent-encoded), e.g. through a proxy or a custom Agent. (The joiner reaches the founder
 * with a source of its own, on connections pinned to the session, not through this.) The
 * dispatcher is the caller's: `close()` leaves it open.
 */
export function dispatcherSource(
  dispatcher: Dispatcher,
  basePath: string,
  options: DispatcherSourceOptions = {},
): ReleaseSource {
  const base = basePath.replace(/\/+$/, "");
  if (!base.startsWith("/") && base !== "") throw new ReleaseArgumentError("basePath is an absolute URL path");
  const description = options.description ?? `${options.origin ?? ""}${base}/`;
  return {
    describe: () => description,
    async fetch(path, request) {
      const headers = requestHeaders(options.headers, request);
      const answer = await dispatcher.request({
        ...(options.origin === undefined ? {} : { origin: options.origin }),
        path: `${base}/${encodeReleasePath(path)}`,
        method: "GET",
        headers,
        signal: request.signal ?? null,
        highWaterMark: options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK,
        headersTimeout: options.headersTimeout ?? DEFAULT_TIMEOUT_MS,
        bodyTimeout: options.bodyTimeout ?? DEFAULT_TIMEOUT_MS,
      });
      return { status: answer.statusCode, headers: answer.headers, body: answer.body };
    },
  };
}

/** Options of the mirror source made from a registration's `upgrade.source`. */
export interface MirrorSourceOptions extends Omit<DispatcherSourceOptions, "origin"> {
  /** CA certificate(s), PEM, to trust instead of the system's (a test CA, a private mirror). */
  ca?: string | string[] | undefined;
  /**
   * An undici dispatcher to send the requests through instead (a custom Agent); then `ca` and
   * `proxy` are the dispatcher's business, `close()` leaves it open, and bodies are copied out
   * of undici's buffers (slower: see docs/measurements.md).
   */
  dispatcher?: Dispatcher | undefined;
  /**
   * The HTTP proxy to reach the mirror through, `http://[user:password@]host[:port]` (port
   * 1080 when none is given, as curl): every request goes through a `CONNECT` tunnel to the
   * mirror, with TLS to the mirror end to end inside it, and the userinfo becomes
   * `Proxy-Authorization: Basic` (never shown in a message). `false`: never a proxy, whatever
   * the environment says. Default: the proxy the environment names (`https_proxy`,
   * `HTTPS_PROXY`, then `http_proxy`, `HTTP_PROXY`) unless `no_proxy`/`NO_PROXY` exempts the
   * mirror; a proxy given here is used for every request, `NO_PROXY` not consulted.
   */
  proxy?: string | false | undefined;
}

/**
 * A release mirror: `upgrade.source`, an HTTPS URL of the release directory. Plain HTTP is
 * refused: the manifest's signature protects the content, not which release the joiner is
 * told about or how long it waits.
 *
 * Each request gets a TLS connection of its own (TLS 1.2 or 1.3, the certificate checked
 * against `ca` or the system's roots and the URL's host), and its body is decrypted straight
 * into the downloader's write buffers; through an HTTP proxy when `proxy` or the environment
 * names one (see {@link MirrorSourceOptions.proxy}). `close()` closes the connections still open.
 */
export function mirrorSource(baseUrl: string, options: MirrorSourceOptions = {}): ReleaseSource {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ReleaseArgumentError("the release source is not a URL");
  }
  if (url.protocol !== "https:") throw new ReleaseArgumentError("a release mirror is reached over HTTPS");
  if (url.username || url.password) throw new ReleaseArgumentError("a release mirror URL carries no credentials");
  if (url.search || url.hash) throw new ReleaseArgumentError("a release mirror URL has no query or fragment");
  if (options.dispatcher && options.proxy !== undefined)
    throw new ReleaseArgumentError(
      "give a mirror `dispatcher` or a `proxy`, not both: the dispatcher picks its own route",
    );
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? HTTPS_PORT : Number(url.port);
  const proxy = options.dispatcher ? undefined : chooseProxy(options.proxy, { host, port });
  const description =
    options.description ??
    `mirror ${url.origin}${url.pathname.replace(/\/+$/, "")}/${proxy ? ` through the proxy ${proxy.display}` : ""}`;
  if (options.dispatcher) {
    const source = dispatcherSource(options.dispatcher, url.pathname, { ...options, origin: url.origin, description });
    return { describe: source.describe, fetch: source.fetch };
  }
  const base = url.pathname.replace(/\/+$/, "");
  const live = new Set<Socket>();
  const track = (socket: Socket): void => {
    live.add(socket);
    socket.once("close", () => live.delete(socket));
  };
  const target = { host, port, ...(options.ca === undefined ? {} : { ca: options.ca }) };
  const connect = proxy ? tunnelConnector(target, proxy, track) : tlsConnector(target, track);
  return {
    describe: () => description,
    async fetch(path, request) {
      const answer = await http1Get({
        connect,
        authority: url.host,
        path: `${base}/${encodeReleasePath(path)}`,
        headers: requestHeaders(options.headers, request),
        ...(request.signal ? { signal: request.signal } : {}),
        ...(options.headersTimeout === undefined ? {} : { headersTimeout: options.headersTimeout }),
        ...(options.bodyTimeout === undefined ? {} : { bodyTimeout: options.bodyTimeout }),
      });
      return { status: answer.status, headers: answer.headers, body: answer.body };
    },
    async close() {
      for (const socket of live) socket.destroy();
    },
  };
}

/** @internal The downloader's request headers: the caller's, then Accept-Encoding, Range and If-Range, which are the downloader's. */
export function requestHeaders(
  extra: Record<string, string> | undefined,
  request: ReleaseFetchRequest,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(extra ?? {})) {
    if (!/^(accept-encoding|range|if-range|host|connection)$/i.test(name)) headers[name] = value;
  }
  headers["accept-encoding"] = "identity";
  if (request.range) headers.range = `bytes=${request.range.start}-${request.range.end ?? ""}`;
  if (request.ifRange) headers["if-range"] = request.ifRange;
  return headers;
}

/** A release path as a URL path: each segment percent-encoded, so no segment can smuggle `?`, `#` or `%2e%2e`. */
export function encodeReleasePath(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}
