/**
 * The request head the reader sends and the response head it reads: where a head ends, its
 * status line and header fields, and the body framing they give (RFC 9112 sections 4 to 6).
 * @internal
 * @module
 */
import { Http1Error } from "./error.js";
import type { Http1GetOptions, Http1Headers } from "./types.js";
import { ChunkedDecoder } from "./chunked.js";
import { parseField, TOKEN } from "./fields.js";

/**
 * Largest response head, status line to blank line. Far above any mirror's (a few hundred
 * bytes) and four times Node's own 16 KiB default, while a head that never ends costs bounded memory.
 */
export const MAX_HEAD_BYTES = 64 * 1024;
// eslint-disable-next-line no-control-regex -- control characters are what a header value must not hold
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** How the body of a final response is delimited. */
export type Framing =
  { kind: "length"; remaining: number } | { kind: "chunked"; decoder: ChunkedDecoder } | { kind: "close" };

/**
 * Where the head in `bytes` ends, searching from `from`: the index of the blank line's CR
 * LF, the body starting 2 bytes after it. Undefined while the blank line has not come.
 * Every line ends in CR LF: a bare LF is refused ({@link Http1Error}), as llhttp refuses it
 * (RFC 9112 section 2.2 lets a recipient choose; a reader that accepts more than the common
 * parser is one a response can be crafted against).
 */
export function findHeadEnd(bytes: Uint8Array, from: number): number | undefined {
  for (let i = bytes.indexOf(0x0a, Math.max(from, 0)); i >= 0; i = bytes.indexOf(0x0a, i + 1)) {
    if (bytes[i - 1] !== 0x0d) throw new Http1Error("HTTP1_PARSE", "a line of the response head ends in a bare LF");
    // the blank line: the CR LF at the very start, or right after the previous line's
    if (i === 1 || (bytes[i - 2] === 0x0a && bytes[i - 3] === 0x0d)) return i - 1;
  }
  return undefined;
}

/** The status and header fields of a head's text (its lines, without the blank line); throws {@link Http1Error}. */
export function parseHead(text: string): { status: number; headers: Http1Headers } {
  // split gives at least one string
  const [first, ...fieldLines] = text.split("\r\n") as [string, ...string[]];
  // 1xx to 5xx and the codes above that llhttp takes; 0xx is no status at all
  const statusLine = /^HTTP\/1\.[01] ([1-9]\d\d)(?: [\t\x20-\x7e\x80-\xff]*)?$/.exec(first);
  if (!statusLine)
    throw new Http1Error("HTTP1_PARSE", `not an HTTP/1.1 status line: ${JSON.stringify(first.slice(0, 80))}`);
  const headers: Http1Headers = {};
  for (const line of fieldLines) {
    const { name, value } = parseField(line);
    const seen = headers[name];
    headers[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return { status: Number(statusLine[1]), headers };
}

/**
 * How a final response's body is delimited (RFC 9112 section 6.3). Throws {@link Http1Error}
 * where the framing is ambiguous, as llhttp does: a Content-Length that is not one plain
 * number (repeated, a list, signed, empty), one beside Transfer-Encoding, or a body length
 * declared for a 204 or 304, which have none.
 */
export function framingOf(status: number, headers: Http1Headers): Framing {
  const cl = headers["content-length"];
  const te = headers["transfer-encoding"];
  let length: number | undefined;
  if (cl !== undefined) {
    // 15 digits: below 2^53, so the count stays exact in a number
    if (Array.isArray(cl) || !/^\d{1,15}$/.test(cl))
      throw new Http1Error("HTTP1_PARSE", `an invalid Content-Length: ${JSON.stringify(String(cl))}`);
    if (te !== undefined) throw new Http1Error("HTTP1_PARSE", "both Content-Length and Transfer-Encoding");
    length = Number(cl);
  }
  if (status === 204 || status === 304) {
    if (length) throw new Http1Error("HTTP1_PARSE", `a ${status} answer declares a body of ${length} bytes`);
    return { kind: "length", remaining: 0 };
  }
  if (te !== undefined) {
    const codings = (Array.isArray(te) ? te.join(",") : te).split(",").map((c) => c.trim().toLowerCase());
    if (codings.at(-1) === "chunked") return { kind: "chunked", decoder: new ChunkedDecoder() };
    return { kind: "close" };
  }
  return length === undefined ? { kind: "close" } : { kind: "length", remaining: length };
}

/** The request head; throws a TypeError naming what is not valid, before any connection. */
export function requestText(options: Http1GetOptions): string {
  if (!/^\/[\x21-\x7e]*$/.test(options.path))
    throw new TypeError("the request path is not an absolute, percent-encoded path");
  if (!/^[\x21-\x7e]+$/.test(options.authority)) throw new TypeError("the Host authority is not a valid host[:port]");
  const lines = [`GET ${options.path} HTTP/1.1`, `Host: ${options.authority}`, "Connection: close"];
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (!TOKEN.test(name) || CONTROL.test(value))
      throw new TypeError(`request header ${JSON.stringify(name)} is not a valid field`);
    lines.push(`${name}: ${value}`);
  }
  return `${lines.join("\r\n")}\r\n\r\n`;
}
