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
 * Where the head in `bytes` ends, searching from `from`: `end` is the line feed before the
 * blank line, `skip` the bytes from there to the body. Undefined while the blank line has not come.
 */
export function findHeadEnd(bytes: Uint8Array, from: number): { end: number; skip: number } | undefined {
  for (let i = from; i < bytes.length; i++) {
    if (bytes[i] !== 0x0a) continue;
    if (bytes[i + 1] === 0x0a) return { end: i, skip: 2 };
    if (bytes[i + 1] === 0x0d && bytes[i + 2] === 0x0a) return { end: i, skip: 3 };
  }
  return undefined;
}

/** The status and header fields of a head's text (its lines, without the blank line); throws {@link Http1Error}. */
export function parseHead(text: string): { status: number; headers: Http1Headers } {
  const lines = text.split(/\r?\n/);
  const statusLine = /^HTTP\/1\.[01] (\d{3})(?: [\t\x20-\x7e\x80-\xff]*)?$/.exec(lines[0] ?? "");
  if (!statusLine)
    throw new Http1Error(
      "HTTP1_PARSE",
      `not an HTTP/1.1 status line: ${JSON.stringify((lines[0] ?? "").slice(0, 80))}`,
    );
  const headers: Http1Headers = {};
  for (const line of lines.slice(1)) {
    const { name, value } = parseField(line);
    const seen = headers[name];
    headers[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return { status: Number(statusLine[1]), headers };
}

/** How a final response's body is delimited (RFC 9112 section 6.3); throws {@link Http1Error} for an invalid Content-Length. */
export function framingOf(status: number, headers: Http1Headers): Framing {
  if (status === 204 || status === 304) return { kind: "length", remaining: 0 };
  const te = headers["transfer-encoding"];
  if (te !== undefined) {
    const codings = (Array.isArray(te) ? te.join(",") : te).split(",").map((c) => c.trim().toLowerCase());
    if (codings.at(-1) === "chunked") return { kind: "chunked", decoder: new ChunkedDecoder() };
    return { kind: "close" };
  }
  const cl = headers["content-length"];
  if (cl !== undefined) {
    const values = new Set((Array.isArray(cl) ? cl.join(",") : cl).split(",").map((v) => v.trim()));
    const [value] = values;
    // 15 digits: below 2^53, so the count stays exact in a number
    if (values.size !== 1 || !/^\d{1,15}$/.test(value!))
      throw new Http1Error(
        "HTTP1_PARSE",
        `an invalid Content-Length: ${JSON.stringify(Array.isArray(cl) ? cl.join(", ") : cl)}`,
      );
    return { kind: "length", remaining: Number(value) };
  }
  return { kind: "close" };
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
