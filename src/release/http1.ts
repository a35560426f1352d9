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

/** A response that broke the HTTP/1.1 rules, or a connection that ended inside one. */
export class Http1Error extends Error {
  /** `HTTP1_PARSE` (malformed), `HTTP1_CLOSED` (the connection ended early), `HTTP1_TIMEOUT`. */
  readonly code: "HTTP1_PARSE" | "HTTP1_CLOSED" | "HTTP1_TIMEOUT";
  constructor(code: Http1Error["code"], message: string) {
    super(message);
    this.name = "Http1Error";
    this.code = code;
  }
}

/**
 * Opens the connection for {@link http1Get}, passing `onread` to `tls.connect` (documented for
 * `tls.connect`; the type is `net`'s, which is the same).
 */
export interface Http1Connector {
  /**
   * Opens the TLS connection with this `onread` and resolves when it may carry the request
   * (handshake and any pinning done). `signal` aborts when the exchange is given up (a
   * timeout, the caller's abort): the attempt must then stop and reject.
   */
  (onread: OnReadOpts, signal: AbortSignal): Promise<TLSSocket>;
}

/** Options of {@link http1Get}. */
export interface Http1GetOptions {
  /** Opens the connection; see {@link Http1Connector}. */
  connect: Http1Connector;
  /** The `Host` header: `host[:port]`. */
  authority: string;
  /** The request target, already percent-encoded. */
  path: string;
  /** Request header fields; names are sent as given. */
  headers?: Record<string, string>;
  /** Aborts the request or its body; the abort is re-thrown as is. */
  signal?: AbortSignal;
  /** Longest wait from the request to the end of the response head, ms. Default 60 s. */
  headersTimeout?: number;
  /** Longest silence inside the body, ms. Default 60 s. */
  bodyTimeout?: number;
}

/** A response head, its body still on the connection. */
export interface Http1Response {
  status: number;
  /** Header fields with lower-case names; a repeated field gives an array (in order). */
  headers: Record<string, string | string[]>;
  body: DirectBody;
}

const SCRATCH_BYTES = 64 * 1024;
const MAX_HEAD_BYTES = 64 * 1024;
/** Body bytes queued while the consumer is busy; the socket is paused long before this. */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

type Framing =
  | { kind: "length"; remaining: number }
  | { kind: "chunked"; state: "size" | "data" | "data-end" | "trailers"; remaining: number; line: string }
  | { kind: "close" };

/**
 * Sends one GET and resolves with the response head once it is in; the body is then read with
 * `readInto` or iterated, or given up with `destroy`. Rejects if no response came (the
 * connection refused or broken, a malformed head, a timeout) or with the abort reason.
 */
export function http1Get(options: Http1GetOptions): Promise<Http1Response> {
  return new Exchange(options).start();
}

class Exchange {
  private socket: TLSSocket | undefined;
  private readonly scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  /** The sink's buffer handed to the socket for the next read, when reading straight into it. */
  private direct: Uint8Array | undefined;
  private head: Buffer = Buffer.alloc(0);
  private phase: "head" | "body" | "done" = "head";
  private framing: Framing = { kind: "close" };
  private readonly pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private sink: BodySink | undefined;
  private waiting = false;
  private ended = false;
  private failure: unknown;
  private resolveHead: ((response: Http1Response) => void) | undefined;
  private rejectHead: ((error: unknown) => void) | undefined;
  private resolveBody: (() => void) | undefined;
  private rejectBody: ((error: unknown) => void) | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onAbort = (): void => this.fail(this.options.signal!.reason);
  /** Aborted when the exchange ends early, so a connection attempt still running stops. */
  private readonly connecting = new AbortController();

  constructor(private readonly options: Http1GetOptions) {}

  start(): Promise<Http1Response> {
    const { signal } = this.options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    let request: string;
    try {
      request = requestText(this.options);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<Http1Response>((resolve, reject) => {
      this.resolveHead = resolve;
      this.rejectHead = reject;
      signal?.addEventListener("abort", this.onAbort, { once: true });
      this.arm(this.options.headersTimeout ?? 60_000, "no response head");
      this.options
        .connect(
          { buffer: () => this.nextBuffer(), callback: (n: number, buffer: Uint8Array) => this.onRead(n, buffer) },
          this.connecting.signal,
        )
        .then((socket) => {
          if (this.phase === "done") {
            socket.destroy();
            return;
          }
          this.socket = socket;
          socket.on("error", (error) => this.fail(error));
          socket.on("end", () => this.onEnd());
          socket.on("close", () => this.onEnd());
          socket.write(request);
        })
        .catch((error: unknown) => this.fail(error));
    });
  }

  // -- the socket's side ------------------------------------------------------------------

  /** Called by Node before every read: the sink's own buffer when the bytes can go there as they are. */
  private nextBuffer(): Uint8Array {
    this.direct = undefined;
    if (
      this.phase === "body" &&
      this.sink &&
      !this.waiting &&
      this.pendingBytes === 0 &&
      this.framing.kind !== "chunked"
    ) {
      let space = this.sink.space();
      // never let the connection write past the body into the consumer's buffer
      if (this.framing.kind === "length" && space.length > this.framing.remaining)
        space = space.subarray(0, this.framing.remaining);
      if (space.length > 0) {
        this.direct = space;
        return space;
      }
    }
    return this.scratch;
  }

  private onRead(n: number, buffer: Uint8Array): boolean {
    if (this.phase === "done") return false;
    this.armBody();
    if (buffer === this.direct) {
      this.direct = undefined;
      if (this.framing.kind === "length") this.framing.remaining -= n;
      this.deliver(n);
      this.checkEnd();
    } else {
      this.consume(buffer.subarray(0, n));
    }
    return !this.waiting;
  }

  private onEnd(): void {
    if (this.phase === "done") return;
    if (
      this.phase === "body" &&
      (this.framing.kind === "close" || this.ended || (this.framing.kind === "length" && this.framing.remaining === 0))
    ) {
      // complete (or delimited by this close); what is still queued goes to the consumer first
      this.ended = true;
      this.checkEnd();
      return;
    }
    this.fail(
      new Http1Error(
        "HTTP1_CLOSED",
        this.phase === "head"
          ? "the connection closed before a response head"
          : "the connection closed inside the response body",
      ),
    );
  }

  // -- parsing ----------------------------------------------------------------------------

  /** Bytes from the scratch buffer: head, chunk framing or body, copied as needed. */
  private consume(bytes: Uint8Array): void {
    let rest = bytes;
    while (rest.length > 0 && this.phase !== "done") {
      if (this.phase === "head") rest = this.consumeHead(rest);
      else rest = this.consumeBody(rest);
    }
    this.checkEnd();
  }

  private consumeHead(bytes: Uint8Array): Uint8Array {
    const before = this.head.length;
    this.head = before === 0 ? Buffer.from(bytes) : Buffer.concat([this.head, bytes]);
    // search from just before the new bytes, in case the blank line straddles two reads
    const from = Math.max(0, before - 3);
    let end = -1;
    let skip = 0;
    for (let i = from; i < this.head.length; i++) {
      if (this.head[i] !== 0x0a) continue;
      if (this.head[i + 1] === 0x0a) {
        end = i;
        skip = 2;
        break;
      }
      if (this.head[i + 1] === 0x0d && this.head[i + 2] === 0x0a) {
        end = i;
        skip = 3;
        break;
      }
    }
    if (end > MAX_HEAD_BYTES || (end < 0 && this.head.length > MAX_HEAD_BYTES)) {
      this.fail(new Http1Error("HTTP1_PARSE", `the response head is larger than ${MAX_HEAD_BYTES} bytes`));
      return new Uint8Array(0);
    }
    if (end < 0) return new Uint8Array(0);
    // `end` is the line feed before the blank line: the last line's CR, if any, is still there
    const text = this.head.subarray(0, end).toString("latin1").replace(/\r$/, "");
    const rest = this.head.subarray(end + skip);
    this.head = Buffer.alloc(0);
    try {
      this.parseHead(text);
    } catch (error) {
      this.fail(error);
      return new Uint8Array(0);
    }
    return rest;
  }

  private parseHead(text: string): void {
    const lines = text.split(/\r?\n/);
    const statusLine = /^HTTP\/1\.[01] (\d{3})(?: [\t\x20-\x7e\x80-\xff]*)?$/.exec(lines[0] ?? "");
    if (!statusLine)
      throw new Http1Error(
        "HTTP1_PARSE",
        `not an HTTP/1.1 status line: ${JSON.stringify((lines[0] ?? "").slice(0, 80))}`,
      );
    const status = Number(statusLine[1]);
    const headers: Record<string, string | string[]> = {};
    for (const line of lines.slice(1)) {
      if (/^[ \t]/.test(line)) throw new Http1Error("HTTP1_PARSE", "a folded header line (obs-fold) in the response");
      const colon = line.indexOf(":");
      const name = colon > 0 ? line.slice(0, colon) : "";
      const value = line.slice(colon + 1).trim();
      if (!TOKEN.test(name) || !FIELD_VALUE.test(value))
        throw new Http1Error(
          "HTTP1_PARSE",
          `a malformed header line in the response: ${JSON.stringify(line.slice(0, 80))}`,
        );
      const key = name.toLowerCase();
      const seen = headers[key];
      headers[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
    }
    if (status < 200) {
      // 100 Continue, 103 Early Hints: the real answer follows
      if (status === 101) throw new Http1Error("HTTP1_PARSE", "the server switched protocols");
      return;
    }
    this.framing = framingOf(status, headers);
    this.phase = "body";
    // the body timer starts with readInto
    this.clearTimer();
    // nothing is read until the consumer is there
    this.socket?.pause();
    const body = this.bodyObject();
    const resolve = this.resolveHead;
    this.resolveHead = undefined;
    this.rejectHead = undefined;
    resolve?.({ status, headers, body });
    this.checkEnd();
  }

  private consumeBody(bytes: Uint8Array): Uint8Array {
    const framing = this.framing;
    if (framing.kind === "close") {
      this.queue(bytes);
      return new Uint8Array(0);
    }
    if (framing.kind === "length") {
      const take = Math.min(framing.remaining, bytes.length);
      if (take > 0) this.queue(bytes.subarray(0, take));
      framing.remaining -= take;
      // bytes past the declared length: the server broke the framing; the body is complete
      return new Uint8Array(0);
    }
    // chunked (RFC 9112 section 7.1)
    let i = 0;
    while (i < bytes.length && this.phase === "body") {
      if (framing.state === "data") {
        const take = Math.min(framing.remaining, bytes.length - i);
        this.queue(bytes.subarray(i, i + take));
        framing.remaining -= take;
        i += take;
        if (framing.remaining === 0) framing.state = "data-end";
        continue;
      }
      const newline = bytes.indexOf(0x0a, i);
      const piece = Buffer.from(bytes.subarray(i, newline < 0 ? bytes.length : newline)).toString("latin1");
      framing.line += piece;
      if (framing.line.length > 4096) {
        this.fail(new Http1Error("HTTP1_PARSE", "a chunk-size or trailer line longer than 4096 bytes"));
        break;
      }
      if (newline < 0) break;
      i = newline + 1;
      const line = framing.line.replace(/\r$/, "");
      framing.line = "";
      if (framing.state === "data-end") {
        if (line !== "") {
          this.fail(new Http1Error("HTTP1_PARSE", "chunk data longer than its size"));
          break;
        }
        framing.state = "size";
      } else if (framing.state === "size") {
        const size = /^([0-9a-fA-F]{1,13})[ \t]*(;.*)?$/.exec(line);
        if (!size) {
          this.fail(new Http1Error("HTTP1_PARSE", `a malformed chunk size: ${JSON.stringify(line.slice(0, 40))}`));
          break;
        }
        framing.remaining = parseInt(size[1]!, 16);
        framing.state = framing.remaining === 0 ? "trailers" : "data";
      } else if (line === "") {
        // the blank line after the trailers: the body is complete
        framing.state = "size";
        this.ended = true;
        break;
      }
    }
    this.checkEnd();
    return new Uint8Array(0);
  }

  // -- the consumer's side ----------------------------------------------------------------

  private bodyObject(): DirectBody {
    const self = this;
    return {
      readInto(sink) {
        return self.attach(sink);
      },
      destroy() {
        self.fail(new Http1Error("HTTP1_CLOSED", "the body was given up"));
      },
      [Symbol.asyncIterator]() {
        return iterateBody(this);
      },
    };
  }

  private attach(sink: BodySink): Promise<void> {
    if (this.sink) return Promise.reject(new Error("the body is already being read"));
    if (this.phase === "done") return this.failure === undefined ? Promise.resolve() : Promise.reject(this.failure);
    this.sink = sink;
    return new Promise<void>((resolve, reject) => {
      this.resolveBody = resolve;
      this.rejectBody = reject;
      this.armBody();
      this.pump();
    });
  }

  private queue(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    if (this.sink && !this.waiting && this.pendingBytes === 0) {
      this.copyOut(bytes);
      return;
    }
    this.pending.push(Buffer.from(bytes));
    this.pendingBytes += bytes.length;
    if (this.pendingBytes > MAX_PENDING_BYTES)
      this.fail(new Http1Error("HTTP1_PARSE", "the connection kept sending while paused"));
    else this.socket?.pause();
  }

  /** Copies body bytes into the sink, queueing what is left if it asks to wait. */
  private copyOut(bytes: Uint8Array): void {
    let offset = 0;
    while (offset < bytes.length && this.phase !== "done") {
      if (this.waiting) {
        // ahead of anything queued: these bytes came first
        this.pending.unshift(Buffer.from(bytes.subarray(offset)));
        this.pendingBytes += bytes.length - offset;
        return;
      }
      const space = this.sink!.space();
      const n = Math.min(space.length, bytes.length - offset);
      space.set(bytes.subarray(offset, offset + n));
      offset += n;
      this.deliver(n);
    }
  }

  /** Moves queued bytes to the sink while it takes them; resumes the socket when all are out. */
  private pump(): void {
    while (this.sink && !this.waiting && this.pending.length > 0 && this.phase !== "done") {
      const first = this.pending.shift()!;
      this.pendingBytes -= first.length;
      this.copyOut(first);
    }
    if (this.phase === "done") return;
    this.checkEnd();
    if (this.phase === "body" && this.sink && !this.waiting && this.pendingBytes === 0) this.socket?.resume();
  }

  private deliver(n: number): void {
    let wait: Promise<void> | undefined;
    try {
      wait = this.sink!.filled(n);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (!wait) return;
    this.waiting = true;
    this.socket?.pause();
    // the consumer is busy (a disk write): not a silence of the connection
    this.clearTimer();
    wait.then(
      () => {
        this.waiting = false;
        this.armBody();
        this.pump();
      },
      (error: unknown) => this.fail(error),
    );
  }

  private checkEnd(): void {
    if (this.phase !== "body" || !this.sink || this.waiting || this.pendingBytes > 0) return;
    const complete = this.framing.kind === "length" ? this.framing.remaining === 0 : this.ended;
    if (!complete) return;
    this.phase = "done";
    this.cleanup();
    const resolve = this.resolveBody;
    this.resolveBody = undefined;
    this.rejectBody = undefined;
    resolve?.();
  }

  // -- endings ----------------------------------------------------------------------------

  /** Ends the exchange with `error` (or the abort reason), closing the connection. */
  fail(error: unknown): void {
    if (this.phase === "done") return;
    this.phase = "done";
    this.failure = error;
    this.cleanup();
    const reject = this.rejectHead ?? this.rejectBody;
    this.rejectHead = this.rejectBody = undefined;
    this.resolveHead = this.resolveBody = undefined;
    reject?.(error);
  }

  private cleanup(): void {
    this.clearTimer();
    if (this.socket === undefined)
      this.connecting.abort(this.failure ?? new Http1Error("HTTP1_CLOSED", "the exchange ended"));
    this.options.signal?.removeEventListener("abort", this.onAbort);
    this.pending.length = 0;
    this.pendingBytes = 0;
    this.direct = undefined;
    // a destroyed socket still emits "error" for a late reset: nobody is listening any more
    this.socket?.on("error", () => {});
    this.socket?.destroy();
  }

  private arm(ms: number, what: string): void {
    this.clearTimer();
    this.timer = setTimeout(() => this.fail(new Http1Error("HTTP1_TIMEOUT", `${what} within ${ms} ms`)), ms);
    this.timer.unref?.();
  }

  private armBody(): void {
    // a silence of the connection counts only while a reader is there and not busy
    if (this.phase !== "body" || !this.sink || this.waiting) return;
    // refreshed on every read: a silence of bodyTimeout, not a total
    if (this.timer) this.timer.refresh();
    else this.arm(this.options.bodyTimeout ?? 60_000, "no body bytes");
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

// eslint-disable-next-line no-control-regex -- control characters are what a header value must not hold
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** The request head; throws a TypeError naming what is not valid, before any connection. */
function requestText(options: Http1GetOptions): string {
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

function framingOf(status: number, headers: Record<string, string | string[]>): Framing {
  if (status === 204 || status === 304) return { kind: "length", remaining: 0 };
  const te = headers["transfer-encoding"];
  if (te !== undefined) {
    const codings = (Array.isArray(te) ? te.join(",") : te).split(",").map((c) => c.trim().toLowerCase());
    if (codings.at(-1) === "chunked") return { kind: "chunked", state: "size", remaining: 0, line: "" };
    return { kind: "close" };
  }
  const cl = headers["content-length"];
  if (cl !== undefined) {
    const values = new Set((Array.isArray(cl) ? cl.join(",") : cl).split(",").map((v) => v.trim()));
    const [value] = values;
    if (values.size !== 1 || !/^\d{1,15}$/.test(value!))
      throw new Http1Error(
        "HTTP1_PARSE",
        `an invalid Content-Length: ${JSON.stringify(Array.isArray(cl) ? cl.join(", ") : cl)}`,
      );
    return { kind: "length", remaining: Number(value) };
  }
  return { kind: "close" };
}

/** The body as fresh chunks, for consumers that keep what they are given (a problem body, the manifest). */
function iterateBody(body: DirectBody): AsyncIterableIterator<Uint8Array> {
  const queue: Uint8Array[] = [];
  let finished = false;
  let error: unknown;
  let wake: (() => void) | undefined;
  let release: (() => void) | undefined;
  let current = Buffer.alloc(0);
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    body
      .readInto({
        space: () => (current = Buffer.allocUnsafe(SCRATCH_BYTES)),
        filled: (n) => {
          queue.push(current.subarray(0, n));
          wake?.();
          return queue.length >= 16 ? new Promise<void>((resolve) => (release = resolve)) : undefined;
        },
      })
      .then(
        () => {
          finished = true;
          wake?.();
        },
        (failure: unknown) => {
          error = failure;
          finished = true;
          wake?.();
        },
      );
  };
  const iterator: AsyncIterableIterator<Uint8Array> = {
    [Symbol.asyncIterator]: () => iterator,
    async next() {
      start();
      while (queue.length === 0 && !finished) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      const value = queue.shift();
      if (release && queue.length < 16) {
        release();
        release = undefined;
      }
      if (value) return { done: false, value };
      if (error !== undefined) throw error;
      return { done: true, value: undefined };
    },
    async return() {
      body.destroy();
      finished = true;
      return { done: true, value: undefined };
    },
  };
  return iterator;
}
