/**
 * The chunked transfer coding of a response body (RFC 9112 section 7.1): chunk sizes, chunk
 * data, the last chunk and the trailer section after it.
 * @internal
 * @module
 */
import { Http1Error } from "./error.js";
import { parseField } from "./fields.js";

/**
 * Longest chunk-size or trailer line, its CR LF not counted. A chunk size is at most 13 hex
 * digits (below 2^53) and extensions are rare and short: a line past this is not a response
 * worth waiting for.
 */
const MAX_LINE = 4096;
/**
 * Most trailer fields after the last chunk. A file response has none; the protocols that use
 * trailers send a few (gRPC three). Each is a line the reader must wait for: the bound is part
 * of what keeps a source from holding a body open with them.
 */
export const MAX_TRAILER_FIELDS = 16;
/**
 * Most bytes of the trailer fields, each line's CR LF included (the blank line that ends the
 * section is not counted): a few checksums or statuses fit many times over.
 */
export const MAX_TRAILER_BYTES = 4096;

/**
 * A chunk-size line: the size in hex (13 digits at most: below 2^53, so it stays exact in a
 * number), then extensions, each `;name` or `;name=value` (a token or a quoted string). No
 * whitespace anywhere, as llhttp wants (RFC 9112 section 7.1.1 allows BWS around `;` and `=`).
 */
const CHUNK_SIZE_LINE =
  /^([0-9a-fA-F]{1,13})(?:;[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:=(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+|"(?:[\t !#-[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"))?)*$/;

/** Decodes one chunked body, fed as the bytes come; chunk data is handed on as views of them. */
export class ChunkedDecoder {
  private state: "size" | "data" | "data-end" | "trailers" | "end" = "size";
  /** Bytes of the current chunk's data still to come. */
  private remaining = 0;
  /** The line being read (a chunk size, the end of a chunk's data, a trailer field), without its LF. */
  private line = "";
  private trailerFields = 0;
  private trailerBytes = 0;

  /** True once the blank line after the trailer section has come: bytes after it are not the body's. */
  get complete(): boolean {
    return this.state === "end";
  }

  /** True between the last chunk and the blank line that ends the trailer section. */
  get inTrailers(): boolean {
    return this.state === "trailers";
  }

  /**
   * Decodes `bytes`, handing chunk data to `onData` in order; stops early when `onData`
   * returns false (the response has ended) and ignores what follows the end of the body.
   * Returns how many of `bytes` it read: on a connection kept alive, the rest after the end of
   * the body is not this response's. Throws {@link Http1Error} at malformed framing.
   */
  decode(bytes: Uint8Array, onData: (data: Uint8Array) => boolean): number {
    let i = 0;
    while (i < bytes.length && this.state !== "end") {
      if (this.state === "data") {
        const take = Math.min(this.remaining, bytes.length - i);
        this.remaining -= take;
        if (this.remaining === 0) this.state = "data-end";
        const more = onData(bytes.subarray(i, i + take));
        i += take;
        if (!more) return i;
        continue;
      }
      const newline = bytes.indexOf(0x0a, i);
      this.line += Buffer.from(bytes.subarray(i, newline < 0 ? bytes.length : newline)).toString("latin1");
      // `line` holds the CR before the LF once it has come (+ 1): both bounds refuse a line that
      // will never fit as soon as it is past them, without waiting for its end
      if (this.line.length > MAX_LINE + 1)
        throw new Http1Error("HTTP1_PARSE", `a chunk-size or trailer line longer than ${MAX_LINE} bytes`);
      if (this.state === "trailers" && this.trailerBytes + this.line.length > MAX_TRAILER_BYTES + 1)
        throw new Http1Error("HTTP1_PARSE", `a trailer section longer than ${MAX_TRAILER_BYTES} bytes`);
      if (newline < 0) return bytes.length;
      i = newline + 1;
      // every line ends in CR LF, as llhttp wants: a bare LF is refused
      if (!this.line.endsWith("\r"))
        throw new Http1Error("HTTP1_PARSE", "a line of the chunked framing ends in a bare LF");
      const line = this.line.slice(0, -1);
      this.line = "";
      this.onLine(line);
    }
    return i;
  }

  private onLine(line: string): void {
    if (this.state === "data-end") {
      if (line !== "") throw new Http1Error("HTTP1_PARSE", "chunk data longer than its size");
      this.state = "size";
    } else if (this.state === "size") {
      const size = CHUNK_SIZE_LINE.exec(line);
      if (!size) throw new Http1Error("HTTP1_PARSE", `a malformed chunk size: ${JSON.stringify(line.slice(0, 40))}`);
      this.remaining = parseInt(size[1]!, 16);
      this.state = this.remaining === 0 ? "trailers" : "data";
    } else if (line === "") {
      // the blank line after the trailers: the body is complete
      this.state = "end";
    } else {
      this.onTrailer(line);
    }
  }

  /** A trailer field: counted, bounded, and held to the header field syntax (its value unused). */
  private onTrailer(line: string): void {
    this.trailerFields += 1;
    // the line and its CRLF
    this.trailerBytes += line.length + 2;
    if (this.trailerFields > MAX_TRAILER_FIELDS)
      throw new Http1Error("HTTP1_PARSE", `more than ${MAX_TRAILER_FIELDS} trailer fields`);
    if (this.trailerBytes > MAX_TRAILER_BYTES)
      throw new Http1Error("HTTP1_PARSE", `a trailer section longer than ${MAX_TRAILER_BYTES} bytes`);
    parseField(line);
  }
}
