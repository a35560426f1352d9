/**
 * The HTTP/1.1 reader's framing rules, one test per rule, on the parsers themselves: where a
 * head ends, what a status line and a field are, how a body is delimited (RFC 9112 sections 4
 * to 7), and the chunked coding with its bounds. http1.test.ts holds the same reader to them
 * over a real TLS connection; here each bound is tested at its boundary, byte by byte.
 */
import { describe, expect, it } from "vitest";
import { ChunkedDecoder, MAX_TRAILER_BYTES, MAX_TRAILER_FIELDS } from "../../src/transport/http1/chunked.js";
import { Http1Error } from "../../src/transport/http1/error.js";
import { findHeadEnd, framingOf, parseHead, requestText as requestHead } from "../../src/transport/http1/head.js";
import type { Http1GetOptions } from "../../src/transport/http1/index.js";

const bytes = (text: string) => Buffer.from(text, "latin1");

/** The request head of what a request names (the head needs no connector). */
const requestText = (request: Pick<Http1GetOptions, "path" | "authority" | "headers">) =>
  requestHead(request as Http1GetOptions);

/** Expects `run` to throw HTTP1_PARSE with `message` in its message. */
function parseError(run: () => unknown, message: string | RegExp): void {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(Http1Error);
  expect((caught as Http1Error).code).toBe("HTTP1_PARSE");
  expect((caught as Http1Error).message).toMatch(message);
}

/** Feeds `text` to a fresh decoder in pieces of `piece` bytes: the data handed on and how many bytes were read. */
function decode(text: string, piece = Infinity) {
  const decoder = new ChunkedDecoder();
  const all = bytes(text);
  let data = "";
  let read = 0;
  for (let at = 0; at < all.length && !decoder.complete; at += piece) {
    const part = all.subarray(at, Math.min(all.length, at + piece));
    read += decoder.decode(part, (chunk) => {
      data += Buffer.from(chunk).toString("latin1");
      return true;
    });
  }
  return { data, read, complete: decoder.complete, inTrailers: decoder.inTrailers, decoder };
}

/** Trailer field lines (CR LF included) of exactly `total` bytes, each shorter than the line bound. */
function trailerFields(total: number): string {
  const lines: string[] = [];
  let rest = total;
  while (rest > 0) {
    // "X: " + value + CR LF; at most 1000 bytes a line, at least 5
    const size = rest - 1000 >= 5 ? 1000 : rest;
    lines.push(`X: ${"v".repeat(size - 5)}\r\n`);
    rest -= size;
  }
  const text = lines.join("");
  expect(text.length).toBe(total);
  return text;
}

describe("chunked: the body is the chunks' data, in order, up to the blank line after the last chunk", () => {
  const body = "5\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n";

  it("hands on every chunk's data and reads nothing past the end", () => {
    const result = decode(`${body}NEXT RESPONSE`);
    expect(result).toMatchObject({ data: "helloabcdefghijklmnopqrstuvwxyz", read: body.length, complete: true });
  });

  it("reads the same fed one byte at a time", () => {
    const result = decode(`${body}NEXT`, 1);
    expect(result).toMatchObject({ data: "helloabcdefghijklmnopqrstuvwxyz", read: body.length, complete: true });
  });

  it("is not complete before the blank line, and is in its trailer section after the last chunk", () => {
    const decoder = new ChunkedDecoder();
    const sink = () => true;
    expect(decoder.decode(bytes("2\r\nhi\r\n"), sink)).toBe(7);
    expect([decoder.complete, decoder.inTrailers]).toEqual([false, false]);
    decoder.decode(bytes("0\r\n"), sink);
    expect([decoder.complete, decoder.inTrailers]).toEqual([false, true]);
    decoder.decode(bytes("X-A: b\r\n"), sink);
    expect([decoder.complete, decoder.inTrailers]).toEqual([false, true]);
    expect(decoder.decode(bytes("\r\nrest"), sink)).toBe(2);
    expect([decoder.complete, decoder.inTrailers]).toEqual([true, false]);
    // once complete, nothing more is read
    expect(decoder.decode(bytes("5\r\nhello\r\n"), sink)).toBe(0);
  });

  it("stops at once when the consumer says the exchange has ended, saying how far it read", () => {
    const decoder = new ChunkedDecoder();
    const seen: string[] = [];
    const read = decoder.decode(bytes("3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"), (chunk) => {
      seen.push(Buffer.from(chunk).toString());
      return false;
    });
    expect(seen).toEqual(["abc"]);
    expect(read).toBe(6);
    expect(decoder.complete).toBe(false);
  });

  it("a chunk's data may arrive in any pieces", () => {
    const decoder = new ChunkedDecoder();
    let data = "";
    const sink = (chunk: Uint8Array) => ((data += Buffer.from(chunk).toString()), true);
    expect(decoder.decode(bytes("a\r\n0123"), sink)).toBe(7);
    expect(decoder.decode(bytes("456"), sink)).toBe(3);
    expect(decoder.decode(bytes("789\r\n0\r\n\r\n"), sink)).toBe(10);
    expect(data).toBe("0123456789");
    expect(decoder.complete).toBe(true);
  });

  it("refuses chunk data longer than its size", () => {
    parseError(() => decode("3\r\nabcd\r\n0\r\n\r\n"), "chunk data longer than its size");
  });
});

describe("chunked: a chunk-size line is 1 to 13 hex digits and extensions, nothing else", () => {
  it.each([
    ["upper-case hex", "1A", 26],
    ["lower-case hex", "1a", 26],
    ["leading zeros", "0003", 3],
    ["13 digits", "0000000000003", 3],
    ["a name-only extension", "3;ext", 3],
    ["a token value", "3;name=value", 3],
    ["a quoted value with an escaped quote", '3;q="a \\"b\\" c"', 3],
    ["a quoted value with a tab and obs-text", '3;q="a\t\xe9"', 3],
    ["several extensions", '3;a;b=c;d="e"', 3],
  ])("accepts %s", (_, line, size) => {
    const data = "x".repeat(size);
    expect(decode(`${line}\r\n${data}\r\n0\r\n\r\n`)).toMatchObject({ data, complete: true });
  });

  it.each([
    ["14 digits", "00000000000003"],
    ["a non-hex digit", "3g"],
    ["a 0x prefix", "0x3"],
    ["a sign", "+3"],
    ["an empty line", ""],
    ["white space before an extension", "3 ;a"],
    ["white space after the size", "3 "],
    ["an extension without a name", "3;"],
    ["an extension with an empty value", "3;a="],
    ["a value with a space", "3;a=b c"],
    ["an unterminated quoted value", '3;a="b'],
    ["a control character in a quoted value", '3;a="\x01"'],
    ["an escaped control character", '3;a="\\\x01"'],
    ["text after a quoted value", '3;a="b"c'],
  ])("refuses %s, naming the line", (_, line) => {
    parseError(() => decode(`${line}\r\nabc\r\n0\r\n\r\n`), `a malformed chunk size: ${JSON.stringify(line)}`);
  });

  it("names at most 40 characters of a malformed line", () => {
    const line = `z${"y".repeat(100)}`;
    parseError(() => decode(`${line}\r\n`), `a malformed chunk size: ${JSON.stringify(line.slice(0, 40))}`);
  });
});

describe("chunked: every line ends in CR LF", () => {
  it.each([
    ["a chunk-size line", "3\nabc\r\n0\r\n\r\n"],
    ["the end of a chunk's data", "3\r\nabc\n0\r\n\r\n"],
    ["the last chunk", "3\r\nabc\r\n0\n\r\n"],
    ["a trailer field", "0\r\nX-A: b\n\r\n"],
    ["the blank line", "0\r\n\n"],
  ])("refuses a bare LF ending %s", (_, text) => {
    parseError(() => decode(text), "a line of the chunked framing ends in a bare LF");
  });
});

describe("chunked: a chunk-size line is at most 4096 bytes before its CR LF", () => {
  const sizeLine = (length: number) => `3;${"e".repeat(length - 2)}`;

  it("reads a chunk-size line of 4096 bytes", () => {
    expect(sizeLine(4096)).toHaveLength(4096);
    expect(decode(`${sizeLine(4096)}\r\nabc\r\n0\r\n\r\n`)).toMatchObject({ data: "abc", complete: true });
    expect(decode(`${sizeLine(4096)}\r\nabc\r\n0\r\n\r\n`, 7)).toMatchObject({ data: "abc", complete: true });
  });

  it("refuses a chunk-size line of 4097 bytes", () => {
    parseError(() => decode(`${sizeLine(4097)}\r\nabc\r\n0\r\n\r\n`), "a chunk-size or trailer line longer than 4096");
  });

  it("refuses a chunk-size line past the bound before its end comes", () => {
    const decoder = new ChunkedDecoder();
    // a line that never ends: the reader must not wait for more of it
    expect(decoder.decode(bytes(sizeLine(4097)), () => true)).toBe(4097);
    parseError(() => decoder.decode(bytes("e"), () => true), "a chunk-size or trailer line longer than 4096");
    parseError(() => decode(sizeLine(5000), 100), "a chunk-size or trailer line longer than 4096");
  });

  it("holds the end of a chunk's data to the same bound", () => {
    parseError(() => decode(`3\r\nabc${"x".repeat(5000)}`), "a chunk-size or trailer line longer than 4096");
  });
});

describe(`chunked: a trailer section is at most ${MAX_TRAILER_FIELDS} fields`, () => {
  const fields = (n: number) => Array.from({ length: n }, (_, i) => `X-T${i}: v\r\n`).join("");

  it(`reads ${MAX_TRAILER_FIELDS} trailer fields to the end`, () => {
    expect(decode(`2\r\nhi\r\n0\r\n${fields(MAX_TRAILER_FIELDS)}\r\n`)).toMatchObject({ data: "hi", complete: true });
  });

  it(`refuses field ${MAX_TRAILER_FIELDS + 1}, before the section ends`, () => {
    parseError(
      () => decode(`0\r\n${fields(MAX_TRAILER_FIELDS + 1)}`),
      `more than ${MAX_TRAILER_FIELDS} trailer fields`,
    );
  });

  it("holds a trailer line to the header field syntax", () => {
    parseError(() => decode("0\r\nnot a field\r\n\r\n"), "a malformed header line");
    parseError(() => decode("0\r\n folded: x\r\n\r\n"), "obs-fold");
  });
});

describe(`chunked: a trailer section is at most ${MAX_TRAILER_BYTES} bytes, its fields' CR LF included`, () => {
  it(`reads trailer fields of ${MAX_TRAILER_BYTES} bytes in all`, () => {
    const text = `2\r\nhi\r\n0\r\n${trailerFields(MAX_TRAILER_BYTES)}\r\n`;
    expect(decode(text)).toMatchObject({ data: "hi", complete: true, read: text.length });
    expect(decode(text, 1)).toMatchObject({ data: "hi", complete: true, read: text.length });
  });

  it(`refuses trailer fields of ${MAX_TRAILER_BYTES + 1} bytes in all, each line far under the line bound`, () => {
    parseError(
      () => decode(`0\r\n${trailerFields(MAX_TRAILER_BYTES + 1)}\r\n`),
      `a trailer section longer than ${MAX_TRAILER_BYTES} bytes`,
    );
  });

  it("refuses the field that takes the section past the bound, without waiting for the blank line", () => {
    const decoder = new ChunkedDecoder();
    parseError(
      () => decoder.decode(bytes(`0\r\n${trailerFields(MAX_TRAILER_BYTES + 1)}`), () => true),
      `a trailer section longer than ${MAX_TRAILER_BYTES} bytes`,
    );
  });

  it("refuses a trailer line that takes the section past the bound before the line ends", () => {
    const decoder = new ChunkedDecoder();
    const sink = () => true;
    decoder.decode(bytes(`0\r\n${trailerFields(4000)}`), sink);
    // 200 bytes of an unfinished line: far under the line bound, past the section's
    parseError(() => decoder.decode(bytes(`X-Long: ${"v".repeat(192)}`), sink), "a trailer section longer than");
  });
});

describe("the response head ends at its first blank line; every line ends in CR LF", () => {
  it("finds the blank line: the body starts 2 bytes after the index returned", () => {
    const head = "HTTP/1.1 200 OK\r\nA: b\r\n\r\n";
    expect(findHeadEnd(bytes(`${head}body`), 0)).toBe(head.length - 2);
    expect(findHeadEnd(bytes(`${head}\r\n\r\n`), 0)).toBe(head.length - 2);
  });

  it("a CR inside a line ends no line, and so no head", () => {
    const head = "HTTP/1.1 200 O\rK\r\nA: b\r\n\r\n";
    expect(findHeadEnd(bytes(head), 0)).toBe(head.length - 2);
    expect(findHeadEnd(bytes("HTTP/1.1 200 O\rK\r\n"), 0)).toBeUndefined();
  });

  it("is undefined while the blank line has not come", () => {
    expect(findHeadEnd(bytes("HTTP/1.1 200 OK\r\nA: b\r\n"), 0)).toBeUndefined();
    expect(findHeadEnd(bytes("HTTP/1.1 200 OK\r\nA: b\r\n\r"), 0)).toBeUndefined();
    expect(findHeadEnd(bytes(""), 0)).toBeUndefined();
  });

  it("a head that is only a blank line ends at 0", () => {
    expect(findHeadEnd(bytes("\r\nHTTP/1.1"), 0)).toBe(0);
  });

  it("finds a blank line that straddles two reads, searching from before the new bytes", () => {
    const head = bytes("HTTP/1.1 200 OK\r\nA: b\r\n\r\n");
    for (let split = 1; split < head.length; split++) {
      expect(findHeadEnd(head.subarray(0, split), -3)).toBeUndefined();
      expect(findHeadEnd(head, split - 3)).toBe(head.length - 2);
    }
  });

  it("searches from the index given: a blank line before it is not this head's end", () => {
    const two = bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n");
    const first = "HTTP/1.1 100 Continue\r\n".length;
    expect(findHeadEnd(two, 0)).toBe(first);
    expect(findHeadEnd(two, first + 2)).toBe(two.length - 2);
    expect(findHeadEnd(two, two.length)).toBeUndefined();
  });

  it("refuses a bare LF anywhere in the head", () => {
    for (const text of [
      "HTTP/1.1 200 OK\nA: b\r\n\r\n",
      "HTTP/1.1 200 OK\r\nA: b\n\r\n",
      "HTTP/1.1 200 OK\r\n\n",
      "\n",
    ]) {
      parseError(() => findHeadEnd(bytes(text), 0), "a line of the response head ends in a bare LF");
    }
  });
});

describe("a status line is HTTP/1.0 or HTTP/1.1, a status from 100 to 999 and an optional reason", () => {
  it.each([
    ["HTTP/1.1 200 OK", 200],
    ["HTTP/1.0 404 Not Found", 404],
    ["HTTP/1.1 204", 204],
    ["HTTP/1.1 200 ", 200],
    ["HTTP/1.1 100 Continue", 100],
    ["HTTP/1.1 999 Whatever", 999],
    ["HTTP/1.1 200 OK \t\xe9 ~!", 200],
  ])("reads %j", (line, status) => {
    expect(parseHead(line)).toEqual({ status, headers: {} });
  });

  it.each([
    ["HTTP/1.1 099 Low"],
    ["HTTP/1.1 20 Short"],
    ["HTTP/1.1 2000 Long"],
    ["HTTP/2 200 OK"],
    ["HTTP/1.2 200 OK"],
    ["http/1.1 200 OK"],
    ["HTTP/1.1  200 OK"],
    [" HTTP/1.1 200 OK"],
    ["HTTP/1.1 200OK"],
    ["HTTP/1.1 200 O\x01K"],
    ["HTTP/1.1 2x0 OK"],
    [""],
  ])("refuses %j, naming it", (line) => {
    parseError(() => parseHead(line), `not an HTTP/1.1 status line: ${JSON.stringify(line)}`);
  });

  it("names at most 80 characters of a status line it refuses", () => {
    const line = `XTTP/1.1 200 ${"r".repeat(200)}`;
    parseError(() => parseHead(line), `not an HTTP/1.1 status line: ${JSON.stringify(line.slice(0, 80))}`);
  });

  it("reads the fields, names lower-cased, values trimmed, repeated fields in order", () => {
    const { headers } = parseHead(
      "HTTP/1.1 200 OK\r\nContent-Type:  text/plain \r\nVia: a\r\nX-Empty:\r\nvia: b\r\nVIA: c\r\nSet-Cookie: x",
    );
    expect(headers).toEqual({ "content-type": "text/plain", via: ["a", "b", "c"], "x-empty": "", "set-cookie": "x" });
  });

  it("refuses a malformed field line", () => {
    parseError(() => parseHead("HTTP/1.1 200 OK\r\nno colon"), "a malformed header line");
  });

  it("trims only the spaces and tabs around a value, never those inside it", () => {
    const { headers } = parseHead("HTTP/1.1 200 OK\r\nX-A: \t a  b\tc \t\r\nX-B:d e");
    expect(headers).toEqual({ "x-a": "a  b\tc", "x-b": "d e" });
  });

  it("names at most 80 characters of a field line it refuses", () => {
    const line = `bad name ${"n".repeat(200)}: value`;
    parseError(
      () => parseHead(`HTTP/1.1 200 OK\r\n${line}`),
      `a malformed header line in the response: ${JSON.stringify(line.slice(0, 80))}`,
    );
  });
});

describe("the body's framing: one plain Content-Length, or chunked last, or the close", () => {
  it("a Content-Length delimits the body", () => {
    expect(framingOf(200, { "content-length": "5" })).toEqual({ kind: "length", remaining: 5 });
    expect(framingOf(200, { "content-length": "0" })).toEqual({ kind: "length", remaining: 0 });
    expect(framingOf(206, { "content-length": "999999999999999" })).toEqual({
      kind: "length",
      remaining: 999_999_999_999_999,
    });
  });

  it.each([
    ["16 digits", "1000000000000000"],
    ["a sign", "+5"],
    ["a negative number", "-5"],
    ["a list", "5, 5"],
    ["an empty value", ""],
    ["a hex number", "0x5"],
    ["a fraction", "5.0"],
    ["a trailing letter", "5a"],
  ])("refuses a Content-Length that is %s", (_, value) => {
    parseError(
      () => framingOf(200, { "content-length": value }),
      `an invalid Content-Length: ${JSON.stringify(value)}`,
    );
  });

  it("refuses a repeated Content-Length, even with equal values", () => {
    parseError(() => framingOf(200, { "content-length": ["5", "5"] }), 'an invalid Content-Length: "5,5"');
  });

  it("refuses Content-Length beside Transfer-Encoding", () => {
    parseError(
      () => framingOf(200, { "content-length": "5", "transfer-encoding": "chunked" }),
      "both Content-Length and Transfer-Encoding",
    );
  });

  it("chunked when it is the last coding, whatever its case or the spaces around it", () => {
    for (const te of ["chunked", "Chunked", "gzip, chunked", "gzip,chunked ", ["gzip", " CHUNKED"]]) {
      const framing = framingOf(200, { "transfer-encoding": te });
      expect(framing.kind, String(te)).toBe("chunked");
      if (framing.kind === "chunked") expect(framing.decoder).toBeInstanceOf(ChunkedDecoder);
    }
  });

  it("delimited by the close when chunked is not the last coding, or nothing delimits the body", () => {
    for (const te of ["gzip", "chunked, gzip", ["chunked", "gzip"], "chunkedx"]) {
      expect(framingOf(200, { "transfer-encoding": te }), String(te)).toEqual({ kind: "close" });
    }
    expect(framingOf(200, {})).toEqual({ kind: "close" });
  });

  it("a 204 or a 304 has no body: a zero length is accepted, another refused", () => {
    for (const status of [204, 304]) {
      expect(framingOf(status, {})).toEqual({ kind: "length", remaining: 0 });
      expect(framingOf(status, { "content-length": "0" })).toEqual({ kind: "length", remaining: 0 });
      expect(framingOf(status, { "transfer-encoding": "chunked" })).toEqual({ kind: "length", remaining: 0 });
      parseError(() => framingOf(status, { "content-length": "7" }), `a ${status} answer declares a body of 7 bytes`);
    }
    expect(framingOf(200, {})).toEqual({ kind: "close" });
    expect(framingOf(205, { "content-length": "7" })).toEqual({ kind: "length", remaining: 7 });
  });
});

describe("the request head: GET, Host, Connection: close and the caller's fields, each valid", () => {
  it("writes the request line, Host, Connection: close and the fields, CR LF each, then the blank line", () => {
    expect(
      requestText({ path: "/a/b?c=%20", authority: "mirror.test:8443", headers: { Range: "bytes=5-", "X-T": "a\tb" } }),
    ).toBe(
      "GET /a/b?c=%20 HTTP/1.1\r\nHost: mirror.test:8443\r\nConnection: close\r\nRange: bytes=5-\r\nX-T: a\tb\r\n\r\n",
    );
    expect(requestText({ path: "/", authority: "[::1]:1" })).toBe(
      "GET / HTTP/1.1\r\nHost: [::1]:1\r\nConnection: close\r\n\r\n",
    );
  });

  it.each([["a"], [""], ["/a b"], ["/é"], ["/a\r\nX: y"], ["//\x7f"]])("refuses the path %j", (path) => {
    expect(() => requestText({ path, authority: "h" })).toThrow(
      new TypeError("the request path is not an absolute, percent-encoded path"),
    );
  });

  it.each([[""], ["h st"], ["h\r\nX: y"], ["hé"]])("refuses the authority %j", (authority) => {
    expect(() => requestText({ path: "/", authority })).toThrow(
      new TypeError("the Host authority is not a valid host[:port]"),
    );
  });

  it.each([
    ["a name with a space", "X A", "v"],
    ["an empty name", "", "v"],
    ["a name with a colon", "X:", "v"],
    ["a value with a CR LF", "X-A", "v\r\nInjected: 1"],
    ["a value with a NUL", "X-A", "v\0"],
    ["a value with DEL", "X-A", "v\x7f"],
  ])("refuses a field with %s", (_, name, value) => {
    expect(() => requestText({ path: "/", authority: "h", headers: { [name]: value } })).toThrow(
      new TypeError(`request header ${JSON.stringify(name)} is not a valid field`),
    );
  });
});
