/**
 * A large file on several connections at once (as aria2c's `-x`/`-s`), its hash still taken in
 * file order: the rest of the file is cut into segments, each fetched with a closed range
 * (`Range: bytes=START-END` and `If-Range` with the ETag of the bytes in hand) on a connection
 * of its own, into a buffer of the segment's size. The segment the writer is at (the head) is
 * read straight into the writer's batch whenever the writer is free; the others wait in their
 * buffers, and are copied into the writer in turn. The file on disk stays a prefix, as with one
 * connection: a crash or a SIGKILL loses only what was in the buffers, never leaves a hole.
 *
 * Every answer is held to the rules of one connection (its status, Content-Range, Content-Length,
 * encoding, ETag), and bytes past the range asked for are refused. A segment whose answer
 * breaks a verdict-making rule ends the file (`bad-response`, `size`, `refused`, `tls`…); one
 * that fails in a way worth a retry (a reset, a 503, a 200 or an ETag that says the file
 * changed) ends the parallel phase: what came in order is kept, and the rest of the file goes
 * on one connection with the full retry rules.
 * @internal
 * @module
 */
import { abortReason } from "../../core/retry.js";
import { NetworkError, ReleaseDownloadError, ReleaseVerificationError } from "../../errors/index.js";
import { isDirectBody, type BodySink } from "../http1/index.js";
import type { ReleaseFetchResponse } from "../sources.js";
import {
  checkIdentityEncoding,
  contentLength,
  header,
  isRetryableStatus,
  parseContentRange,
  retryOrRefuse,
  strongEtag,
} from "./answer.js";
import type { Attempts } from "./attempts.js";
import { copyInto, discard, forEachChunk } from "./body.js";
import type { FileTrack } from "./progress.js";
import type { DownloadSession, RequestScope } from "./session.js";
import { isWriteError, type Writer } from "./writer.js";

/** Where a body byte beyond a segment's buffer lands: it is refused as soon as it is reported. */
const OVERFLOW = new Uint8Array(16 * 1024);

/** What the parallel phase needs of the file's transfer. */
export interface SegmentHost {
  readonly session: DownloadSession;
  readonly path: string;
  readonly size: number;
  readonly writer: Writer;
  readonly track: FileTrack;
  /** The strong ETag of the bytes in hand, sent as If-Range and required of every answer. */
  readonly etag: string;
  /** Bytes of the file in hand (handed to the writer, in order). */
  offset: number;
  /** `n` body bytes came on `scope`'s request. */
  received(n: number, scope: RequestScope): void;
  /** An answer's bytes are used. */
  answered(): void;
  /** The error for a body byte past `end` (`size` at the file's end, else `bad-response`). */
  overflow(end: number, status: number): Error;
}

interface Segment {
  start: number;
  /** Exclusive. */
  end: number;
  /** Bytes received, from `start` on, contiguous. */
  got: number;
  /** Bytes of those handed to the writer. */
  handed: number;
  buffer: Buffer | undefined;
  consumed: () => void;
  done: Promise<void>;
}

/** The phase's outcome: the bytes in order are in the writer; `fallback` is why it stopped early, if it did. */
export interface ParallelOutcome {
  fallback?: NetworkError | undefined;
  /** A verdict that ends the file (thrown by the caller after the writer settles). */
  failure?: unknown | undefined;
}

/** Fetches `[host.offset, host.size)` on `connections` connections in segments of `segmentBytes`. */
export class ParallelPhase {
  private readonly segments: Segment[] = [];
  private head = 0;
  private next = 0;
  private writerBusy: Promise<void> | undefined;
  /** The pump's loop while it runs; `pumpRunning` is its flag, cleared in the loop's last turn. */
  private pumping: Promise<void> | undefined;
  private pumpRunning = false;
  private readonly stop = new AbortController();
  private readonly stopped: Promise<void>;
  private outcome: ParallelOutcome = {};

  constructor(
    private readonly host: SegmentHost,
    private readonly attempts: Attempts,
    private readonly connections: number,
    private readonly segmentBytes: number,
  ) {
    for (let start = host.offset; start < host.size; start += segmentBytes) {
      let consumed!: () => void;
      const done = new Promise<void>((resolve) => (consumed = resolve));
      this.segments.push({
        start,
        end: Math.min(host.size, start + segmentBytes),
        got: 0,
        handed: 0,
        buffer: undefined,
        consumed,
        done,
      });
    }
    this.stopped = new Promise((resolve) =>
      this.stop.signal.addEventListener("abort", () => resolve(), { once: true }),
    );
  }

  /** Runs the phase to the end of the file or to its first fallback or failure; never throws. */
  async run(): Promise<ParallelOutcome> {
    const lanes = Math.min(this.connections, this.segments.length);
    // one phase runs at a time: the buffers of the last one are free, and reused
    const buffers = this.host.session.segmentBuffers;
    while (buffers.length < lanes) buffers.push(Buffer.allocUnsafeSlow(this.segmentBytes));
    await Promise.all(buffers.slice(0, lanes).map((buffer) => this.lane(buffer)));
    // what came in order goes to the writer; the rest is dropped
    this.pump();
    for (;;) {
      if (this.pumpRunning) await this.pumping;
      else if (this.writerBusy) await this.writerBusy;
      else return this.outcome;
    }
  }

  private fail(error: unknown): void {
    this.outcome.failure ??= error;
    this.stop.abort();
  }

  private fallBack(cause: NetworkError): void {
    if (!this.outcome.failure) this.outcome.fallback ??= cause;
    this.stop.abort();
  }

  /** One connection: segments in turn, each into `buffer`, reused once the writer has its bytes. */
  private async lane(buffer: Buffer): Promise<void> {
    while (!this.stop.signal.aborted) {
      const segment = this.segments[this.next];
      if (!segment) return;
      this.next += 1;
      segment.buffer = buffer;
      while (segment.got < segment.end - segment.start && !this.stop.signal.aborted) {
        try {
          await this.fetch(segment);
        } catch (error) {
          this.fail(error);
        }
      }
      await Promise.race([segment.done, this.stopped]);
    }
  }

  /** One request for what the segment still lacks; returns when it is over (a fallback or failure recorded). */
  private async fetch(segment: Segment): Promise<void> {
    const { session, path } = this.host;
    const from = segment.start + segment.got;
    this.attempts.requests += 1;
    const scope = session.request(path);
    const signal = AbortSignal.any([scope.signal, this.stop.signal]);
    let response: ReleaseFetchResponse;
    try {
      response = await session.source.fetch(path, {
        range: { start: from, end: segment.end - 1 },
        ifRange: this.host.etag,
        signal,
      });
      scope.watchBody();
    } catch (error) {
      scope.end();
      if (this.stop.signal.aborted && !session.signal.aborted) return;
      this.fallBack(session.transientOrThrow(error, path));
      return;
    }
    try {
      const end = await this.accept(response, segment, from);
      if (end === undefined) return;
      this.host.answered();
      await this.read(response, segment, end, scope);
    } finally {
      scope.end();
    }
  }

  /** The exclusive end of the answer's bytes, or undefined (a fallback recorded); throws a verdict. */
  private async accept(response: ReleaseFetchResponse, segment: Segment, from: number): Promise<number | undefined> {
    const { session, path, size } = this.host;
    const refuse = async (what: string): Promise<never> => {
      await discard(response.body);
      throw session.badResponse(path, what, response.status);
    };
    if (response.status === 206) {
      await checkIdentityEncoding(session, response, path);
      const label = header(response, "content-range");
      const range = parseContentRange(label);
      if (!range || range.start !== from || range.total !== size || range.end < range.start || range.end >= segment.end)
        return refuse(
          `answered Content-Range ${JSON.stringify(label ?? "")} to Range bytes=${from}-${segment.end - 1} of a ${size}-byte file`,
        );
      const length = contentLength(response);
      if (length !== undefined && length !== range.end + 1 - range.start)
        return refuse(`sent Content-Length ${length} with Content-Range ${range.start}-${range.end}`);
      if (strongEtag(response) === this.host.etag) return range.end + 1;
    }
    if (
      response.status === 206 ||
      response.status === 200 ||
      response.status === 416 ||
      isRetryableStatus(response.status)
    ) {
      // the file changed (another ETag, or If-Range answered whole), ranges are refused, or the
      // source is busy: one connection takes it from here, with the rules for each of those
      await discard(response.body);
      this.fallBack(
        new NetworkError(
          `${path}: the source answered HTTP ${response.status} to a ranged request of a parallel download`,
        ),
      );
      return undefined;
    }
    await retryOrRefuse(session, this.attempts, response, path);
    return undefined;
  }

  /** Reads an accepted answer's body into the segment, up to `end` (exclusive). */
  private async read(
    response: ReleaseFetchResponse,
    segment: Segment,
    end: number,
    scope: RequestScope,
  ): Promise<void> {
    const { session, path } = this.host;
    const sink = this.sink(segment, end, response.status, scope);
    try {
      if (isDirectBody(response.body)) await response.body.readInto(sink);
      else await forEachChunk(response.body, (chunk) => copyInto(sink, chunk));
    } catch (error) {
      if (session.signal.aborted) throw abortReason(session.signal);
      if (this.stop.signal.aborted) return;
      // a broken connection is worth a retry; a verdict (a byte past the range, the disk) is not
      if (isVerdict(error)) throw error;
      this.fallBack(session.transientOrThrow(error, path));
      return;
    }
    if (segment.start + segment.got < end)
      this.fallBack(
        new NetworkError(`${path}: a ranged answer ended after ${segment.start + segment.got} of ${end} bytes`),
      );
  }

  /**
   * The sink of one answer for `segment`: straight into the writer while the segment is the
   * head, has nothing waiting in its buffer and the writer is free; into the segment's buffer
   * otherwise. Which one was handed out is remembered until the bytes are reported.
   */
  private sink(segment: Segment, end: number, status: number, scope: RequestScope): BodySink {
    const { writer } = this.host;
    let direct = false;
    return {
      space: () => {
        direct = this.segments[this.head] === segment && segment.handed === segment.got && !this.writerBusy;
        if (direct) return writer.space();
        // past the segment's end (its buffer may be gone with it): refused when reported
        const room = segment.buffer?.subarray(segment.got, segment.end - segment.start);
        return room && room.length > 0 ? room : OVERFLOW;
      },
      filled: (n) => {
        if (segment.start + segment.got + n > end) throw this.host.overflow(end, status);
        segment.got += n;
        this.host.received(n, scope);
        if (!direct) {
          if (this.segments[this.head] === segment) this.pump();
          return undefined;
        }
        segment.handed += n;
        this.hand(n);
        const wait = writer.filled(n);
        if (wait) {
          this.busy(wait);
          scope.pauseWhile(wait);
        }
        if (segment.handed === segment.end - segment.start) this.pump();
        return wait;
      },
    };
  }

  private hand(n: number): void {
    this.host.offset += n;
    this.host.track.add(n);
  }

  /** The writer waits for a free batch until `wait` settles: nothing else goes into it meanwhile. */
  private busy(wait: Promise<void>): void {
    const tracked: Promise<void> = wait.then(
      () => {
        if (this.writerBusy === tracked) this.writerBusy = undefined;
        this.pump();
      },
      (error: unknown) => {
        if (this.writerBusy === tracked) this.writerBusy = undefined;
        this.fail(error);
      },
    );
    this.writerBusy = tracked;
  }

  /** Starts moving the head's buffered bytes into the writer, unless that is already running. */
  private pump(): void {
    if (this.pumpRunning || this.outcome.failure) return;
    this.pumpRunning = true;
    this.pumping = this.pumpLoop().catch((error: unknown) => {
      this.pumpRunning = false;
      this.fail(error);
    });
  }

  private async pumpLoop(): Promise<void> {
    const { writer } = this.host;
    for (;;) {
      const segment = this.segments[this.head];
      if (segment && segment.handed < segment.got && !this.outcome.failure) {
        if (this.writerBusy) {
          await this.writerBusy;
          continue;
        }
        const space = writer.space();
        const n = Math.min(space.length, segment.got - segment.handed);
        space.set(segment.buffer!.subarray(segment.handed, segment.handed + n));
        segment.handed += n;
        this.hand(n);
        const wait = writer.filled(n);
        if (wait) this.busy(wait);
        continue;
      }
      if (segment && segment.handed === segment.end - segment.start) {
        this.head += 1;
        segment.buffer = undefined;
        segment.consumed();
        continue;
      }
      // nothing to move until more bytes come: the flag goes in the same turn as the check
      this.pumpRunning = false;
      return;
    }
  }
}

/** Errors that end the file rather than the phase: they carry a verdict or a local failure. */
function isVerdict(error: unknown): boolean {
  return error instanceof ReleaseVerificationError || error instanceof ReleaseDownloadError || isWriteError(error);
}

/** Whether a phase is worth starting for the rest of a file: at least two segments on two connections. */
export function worthParallel(remaining: number, connections: number, segmentBytes: number): boolean {
  return connections > 1 && remaining >= 2 * segmentBytes;
}
