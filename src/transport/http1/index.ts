/**
 * One HTTP/1.1 GET on a TLS connection of its own, its body decrypted straight into buffers the
 * consumer hands out.
 *
 * Why not undici here: a release is the one place the SDK moves gigabytes, and on loopback
 * undici's parser, its copies into WebAssembly memory and its body stream cost about 0.85 s of
 * CPU per GiB on top of TLS (1.45 s against 0.6 s, measured on the benchmark machine). With
 * Node's `onread` on the TLS socket, OpenSSL decrypts each record into the downloader's write
 * batch: no allocation, no copy and no stream event per record, and no garbage for the GC to
 * catch up with (the Node 24 peak RSS of the undici path came from there).
 *
 * The parser reads one response to one request, the connection closing after it (the request
 * says `Connection: close`): a status line, header fields, then a body framed by
 * `Content-Length`, `Transfer-Encoding: chunked` or the connection's close (RFC 9112 section 6).
 * Interim 1xx answers are skipped. Anything malformed is a {@link Http1Error}, which the
 * downloader treats as a broken connection.
 *
 * Layout: `head.ts` (request and response heads, framing), `fields.ts` (header field lines),
 * `chunked.ts` (the chunked coding), `request.ts` (the socket's side), `body-queue.ts` (the
 * consumer's side), `iterate.ts` (a body as an async iterable).
 * @internal
 * @module
 */
import { Http1Request } from "./request.js";
import type { Http1GetOptions, Http1Response } from "./types.js";

export { Http1Error } from "./error.js";
export {
  isDirectBody,
  type BodySink,
  type DirectBody,
  type Http1Connector,
  type Http1GetOptions,
  type Http1Headers,
  type Http1Response,
} from "./types.js";

/**
 * Sends one GET and resolves with the response head once it is in; the body is then read with
 * `readInto` or iterated, or given up with `destroy`. Rejects if no response came (the
 * connection refused or broken, a malformed head, a timeout) or with the abort reason.
 */
export function http1Get(options: Http1GetOptions): Promise<Http1Response> {
  return new Http1Request(options).start();
}
