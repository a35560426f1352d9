/**
 * The consumer's side of a response: body bytes handed to the sink in order, queued while
 * it is busy (its `filled` returned a promise), and the promise `readInto` returns.
 * @internal
 * @module
 */
import { Http1Error } from "./error.js";
import type { BodySink } from "./types.js";

/**
 * Body bytes queued while the consumer is busy. The socket is paused at the first queued
 * byte, so only what was already in flight arrives after: a connection that keeps sending
 * past this is not honouring the pause (or is no TLS stack at all).
 */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;

/** What a {@link BodyQueue} needs of the socket's side. */
export interface BodyQueueHost {
  /** True once the response has ended (complete or failed). */
  over(): boolean;
  /** Whether every byte of the body is off the connection. */
  bodyReceived(): boolean;
  /** Stops reading the socket. */
  pause(): void;
  /** Reads the socket again. */
  resume(): void;
  /** The consumer is busy (a disk write): not a silence of the connection. */
  busy(): void;
  /** The consumer is back: silences count again. */
  ready(): void;
  /** Ends the response with `error`. */
  fail(error: unknown): void;
  /** Ends the response: the body is complete and delivered. */
  finish(): void;
}

/** Hands body bytes to the consumer's sink. */
export class BodyQueue {
  private sink: BodySink | undefined;
  private waiting = false;
  private readonly pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private resolveBody: (() => void) | undefined;
  private rejectBody: ((error: unknown) => void) | undefined;

  constructor(private readonly host: BodyQueueHost) {}

  /** True while bytes may go straight into the sink: a sink is there, not busy, nothing queued. */
  get open(): boolean {
    return this.sink !== undefined && !this.waiting && this.pendingBytes === 0;
  }

  /** True while the consumer is busy with bytes it was given (its `filled` promise pending). */
  get busy(): boolean {
    return this.waiting;
  }

  /** True while a sink is there and not busy: a silence of the connection counts. */
  get listening(): boolean {
    return this.sink !== undefined && !this.waiting;
  }

  /** The sink's room for the next read (only while {@link open}). */
  space(): Uint8Array {
    return this.sink!.space();
  }

  /** Starts delivering to `sink`; the promise settles with the body. */
  attach(sink: BodySink, failure: { error: unknown } | undefined): Promise<void> {
    if (this.sink) return Promise.reject(new Error("the body is already being read"));
    if (this.host.over()) return failure === undefined ? Promise.resolve() : Promise.reject(failure.error);
    this.sink = sink;
    return new Promise<void>((resolve, reject) => {
      this.resolveBody = resolve;
      this.rejectBody = reject;
      this.host.ready();
      this.pump();
    });
  }

  /** Body bytes from the connection (a view of a buffer about to be reused: copied if kept). */
  queue(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    if (this.open) {
      this.copyOut(bytes);
      return;
    }
    this.pending.push(Buffer.from(bytes));
    this.pendingBytes += bytes.length;
    if (this.pendingBytes > MAX_PENDING_BYTES)
      this.host.fail(new Http1Error("HTTP1_PARSE", "the connection kept sending while paused"));
    else this.host.pause();
  }

  /** `n` bytes are in the sink's last space: tells it, pausing the connection while it is busy. */
  deliver(n: number): void {
    let wait: Promise<void> | undefined;
    try {
      wait = this.sink!.filled(n);
    } catch (error) {
      this.host.fail(error);
      return;
    }
    if (!wait) return;
    this.waiting = true;
    this.host.pause();
    this.host.busy();
    wait.then(
      () => {
        this.waiting = false;
        this.host.ready();
        this.pump();
      },
      (error: unknown) => this.host.fail(error),
    );
  }

  /** Ends the response when the body is complete and every byte of it is in the sink. */
  checkEnd(): void {
    if (this.host.over() || !this.open || !this.host.bodyReceived()) return;
    this.host.finish();
  }

  /** Settles `readInto` (resolves without `error`); drops what is queued. */
  settle(error?: { error: unknown }): void {
    const resolve = this.resolveBody;
    const reject = this.rejectBody;
    this.resolveBody = this.rejectBody = undefined;
    this.pending.length = 0;
    this.pendingBytes = 0;
    if (error) reject?.(error.error);
    else resolve?.();
  }

  /** Copies body bytes into the sink, queueing what is left if it asks to wait. */
  private copyOut(bytes: Uint8Array): void {
    let offset = 0;
    while (offset < bytes.length && !this.host.over()) {
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
    while (this.sink && !this.waiting && this.pending.length > 0 && !this.host.over()) {
      const first = this.pending.shift()!;
      this.pendingBytes -= first.length;
      this.copyOut(first);
    }
    if (this.host.over()) return;
    this.checkEnd();
    if (!this.host.over() && this.open) this.host.resume();
  }
}
