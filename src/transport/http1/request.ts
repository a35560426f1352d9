/**
 * One GET and its response, the socket's side: the connection opened with Node's `onread`, each read
 * either straight into the consumer's buffer or into a scratch buffer that is parsed (head,
 * chunk framing, body), the timers, and the endings.
 * @internal
 * @module
 */
import type { TLSSocket } from "node:tls";
import { BodyQueue } from "./body-queue.js";
import { Http1Error } from "./error.js";
import { findHeadEnd, framingOf, MAX_HEAD_BYTES, parseHead, requestText, type Framing } from "./head.js";
import { iterateBody, SCRATCH_BYTES } from "./iterate.js";
import type { DirectBody, Http1GetOptions, Http1Headers, Http1Response } from "./types.js";

/** Default of `headersTimeout` and `bodyTimeout`: a minute, as undici's. */
const DEFAULT_TIMEOUT_MS = 60_000;

const EMPTY = new Uint8Array(0);

/** Sends one GET and reads its response; see `http1Get`. */
export class Http1Request {
  private socket: TLSSocket | undefined;
  private readonly scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  /** The sink's buffer handed to the socket for the next read, when reading straight into it. */
  private direct: Uint8Array | undefined;
  private head: Buffer = Buffer.alloc(0);
  private phase: "head" | "body" | "done" = "head";
  private framing: Framing = { kind: "close" };
  /** The connection's end, or the body's end in its framing, has come. */
  private ended = false;
  /** The trailer section's deadline is armed: reads do not refresh it. */
  private trailerDeadline = false;
  private failure: { error: unknown } | undefined;
  private readonly bodyQueue = new BodyQueue({
    over: () => this.phase === "done",
    bodyReceived: () => this.bodyReceived(),
    pause: () => this.socket?.pause(),
    resume: () => this.socket?.resume(),
    // the consumer is busy (a disk write): not a silence of the connection
    busy: () => this.clearTimer(),
    ready: () => this.armBody(),
    fail: (error) => this.fail(error),
    finish: () => this.finish(),
  });
  private resolveHead: ((response: Http1Response) => void) | undefined;
  private rejectHead: ((error: unknown) => void) | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onAbort = (): void => this.fail(this.options.signal!.reason);
  /** Aborted when the request ends early, so a connection attempt still running stops. */
  private readonly connecting = new AbortController();

  constructor(private readonly options: Http1GetOptions) {}

  /** Opens the connection, sends the request and resolves with the response head. */
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
      this.arm(this.options.headersTimeout ?? DEFAULT_TIMEOUT_MS, "no response head");
      this.options
        .connect(
          { buffer: () => this.nextBuffer(), callback: (n: number, buffer: Uint8Array) => this.onRead(n, buffer) },
          this.connecting.signal,
        )
        .then((socket) => this.onConnected(socket, request))
        .catch((error: unknown) => this.fail(error));
    });
  }

  private onConnected(socket: TLSSocket, request: string): void {
    if (this.phase === "done") {
      socket.destroy();
      return;
    }
    this.socket = socket;
    socket.on("error", (error) => this.fail(error));
    socket.on("end", () => this.onEnd());
    socket.on("close", () => this.onEnd());
    socket.write(request);
  }

  // -- reads ------------------------------------------------------------------------------

  /** Called by Node before every read: the sink's own buffer when the bytes can go there as they are. */
  private nextBuffer(): Uint8Array {
    this.direct = undefined;
    if (this.phase === "body" && this.bodyQueue.open && this.framing.kind !== "chunked") {
      let space = this.bodyQueue.space();
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
      this.bodyQueue.deliver(n);
      this.bodyQueue.checkEnd();
    } else {
      this.consume(buffer.subarray(0, n));
    }
    // false pauses the socket while the consumer is busy
    return !this.bodyQueue.busy;
  }

  private onEnd(): void {
    if (this.phase === "done") return;
    if (this.phase === "body" && (this.framing.kind === "close" || this.bodyReceived())) {
      // complete (or delimited by this close); what is still queued goes to the consumer first
      this.ended = true;
      this.bodyQueue.checkEnd();
      return;
    }
    const where = this.phase === "head" ? "before a response head" : "inside the response body";
    this.fail(new Http1Error("HTTP1_CLOSED", `the connection closed ${where}`));
  }

  /** Bytes from the scratch buffer: head, chunk framing or body, copied as needed. */
  private consume(bytes: Uint8Array): void {
    let rest = bytes;
    while (rest.length > 0 && this.phase !== "done") {
      if (this.phase === "head") rest = this.consumeHead(rest);
      else rest = this.consumeBody(rest);
    }
    this.bodyQueue.checkEnd();
  }

  /** Head bytes; returns what follows the head (the start of the body), once it is complete. */
  private consumeHead(bytes: Uint8Array): Uint8Array {
    const before = this.head.length;
    this.head = before === 0 ? Buffer.from(bytes) : Buffer.concat([this.head, bytes]);
    try {
      // search from just before the new bytes, in case the blank line straddles two reads
      const end = findHeadEnd(this.head, before - 3);
      if ((end ?? this.head.length) > MAX_HEAD_BYTES)
        throw new Http1Error("HTTP1_PARSE", `the response head is larger than ${MAX_HEAD_BYTES} bytes`);
      if (end === undefined) return EMPTY;
      // the lines, without the CR LF of the last one
      const text = this.head.subarray(0, Math.max(0, end - 2)).toString("latin1");
      const rest = this.head.subarray(end + 2);
      this.head = Buffer.alloc(0);
      const { status, headers } = parseHead(text);
      this.onHead(status, headers);
      return rest;
    } catch (error) {
      this.fail(error);
      return EMPTY;
    }
  }

  private onHead(status: number, headers: Http1Headers): void {
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
    const resolve = this.resolveHead;
    this.resolveHead = this.rejectHead = undefined;
    resolve?.({ status, headers, body: this.bodyObject() });
  }

  /** Body bytes from the scratch buffer, by the framing; bytes past the body's end are dropped. */
  private consumeBody(bytes: Uint8Array): Uint8Array {
    const framing = this.framing;
    if (framing.kind === "close") {
      this.bodyQueue.queue(bytes);
    } else if (framing.kind === "length") {
      const take = Math.min(framing.remaining, bytes.length);
      if (take > 0) this.bodyQueue.queue(bytes.subarray(0, take));
      // bytes past the declared length: the server broke the framing; the body is complete
      framing.remaining -= take;
    } else {
      try {
        framing.decoder.decode(bytes, (data) => {
          this.bodyQueue.queue(data);
          return this.phase === "body";
        });
      } catch (error) {
        this.fail(error);
      }
      if (framing.decoder.complete) this.ended = true;
      else if (framing.decoder.inTrailers && !this.trailerDeadline && this.bodyQueue.listening) {
        // one deadline for the whole trailer section, from its start: a read no longer buys time
        this.trailerDeadline = true;
        this.arm(this.options.bodyTimeout ?? DEFAULT_TIMEOUT_MS, "no end of the trailer section");
      }
    }
    return EMPTY;
  }

  /** Whether every byte of the body is off the connection (some may still be queued for the consumer). */
  private bodyReceived(): boolean {
    if (this.phase !== "body") return false;
    return this.framing.kind === "length" ? this.framing.remaining === 0 : this.ended;
  }

  // -- the consumer's side ----------------------------------------------------------------

  private bodyObject(): DirectBody {
    const body: DirectBody = {
      readInto: (sink) => this.bodyQueue.attach(sink, this.failure),
      destroy: () => this.fail(new Http1Error("HTTP1_CLOSED", "the body was given up")),
      [Symbol.asyncIterator]: () => iterateBody(body),
    };
    return body;
  }

  // -- endings ----------------------------------------------------------------------------

  /** Ends the request with `error` (or the abort reason), closing the connection. */
  private fail(error: unknown): void {
    if (this.phase === "done") return;
    this.phase = "done";
    this.failure = { error };
    this.cleanup();
    const reject = this.rejectHead;
    this.resolveHead = this.rejectHead = undefined;
    if (reject) reject(error);
    else this.bodyQueue.settle(this.failure);
  }

  /** Ends the request: the body is complete and every byte of it delivered. */
  private finish(): void {
    this.phase = "done";
    this.cleanup();
    this.bodyQueue.settle();
  }

  private cleanup(): void {
    this.clearTimer();
    if (this.socket === undefined)
      this.connecting.abort(this.failure?.error ?? new Http1Error("HTTP1_CLOSED", "the request ended"));
    this.options.signal?.removeEventListener("abort", this.onAbort);
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
    if (this.phase !== "body" || !this.bodyQueue.listening) return;
    // refreshed on every read: a silence of bodyTimeout, not a total (but for the trailer section)
    if (this.timer && this.trailerDeadline) return;
    if (this.timer) this.timer.refresh();
    else this.arm(this.options.bodyTimeout ?? DEFAULT_TIMEOUT_MS, "no body bytes");
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
