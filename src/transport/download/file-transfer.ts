/**
 * One file's requests to the source: ask for the bytes not yet in hand (a Range and an
 * If-Range when some are), hold the answer to the range rules, read its body into the
 * writer, and judge the whole by its hash.
 * @internal
 * @module
 */
import type { FileHandle } from "node:fs/promises";
import { unlink } from "node:fs/promises";
import { abortReason } from "../../core/retry.js";
import { NetworkError, ReleaseDownloadError, ReleaseVerificationError } from "../../errors/index.js";
import { isDirectBody, type BodySink } from "../http1/index.js";
import type { ReleaseFile } from "../../release/manifest-types.js";
import type { ReleaseFetchResponse } from "../sources.js";
import {
  checkIdentityEncoding,
  contentLength,
  header,
  parseContentRange,
  parseUnsatisfiedRange,
  retryOrRefuse,
  strongEtag,
} from "./answer.js";
import { Attempts } from "./attempts.js";
import { copyInto, discard, forEachChunk } from "./body.js";
import type { FileTrack } from "./progress.js";
import type { DownloadSession, RequestScope } from "./session.js";
import { ParallelPhase, worthParallel, type ParallelOutcome, type SegmentHost } from "./segments.js";
import { localError, localOrAbort } from "./staging.js";
import { flushOrThrow, isWriteError, type Writer } from "./writer.js";

/** Brings a file's `.partial` to the file's exact size and hash, or throws; see {@link FileTransfer.run}. */
export class FileTransfer {
  /** Bytes of the file in hand: hashed, and written or queued to be. */
  private offset = 0;
  /**
   * How many answers (or an earlier run's prefix) the bytes in hand came from. A hash
   * mismatch of bytes from one answer is the source's; from several, it may be a splice of
   * two versions, worth one clean start before judging.
   */
  private answersInHand = 0;
  /** Bytes received for this file in this run. */
  private fetched = 0;
  /** A strong ETag of the answer the bytes in hand came from; sent as If-Range. */
  private etag: string | undefined;
  private restartedOnMismatch = false;
  /** A first answer was asked for one segment only, to learn whether the rest can go on several connections. */
  private probed = false;
  /** The file stays on one connection (a parallel phase fell back, or the source cannot do it). */
  private parallelOff = false;

  constructor(
    private readonly session: DownloadSession,
    private readonly file: ReleaseFile,
    private readonly fh: FileHandle,
    private readonly partialPath: string,
    private readonly writer: Writer,
    private readonly track: FileTrack,
  ) {}

  /**
   * Re-hashes what the `.partial` holds, fetches the rest, and resolves with the bytes fetched
   * once the hash is the manifest's; throws a typed error otherwise. Leaves writes pending
   * only on a throw (the caller settles the writer).
   */
  async run(): Promise<number> {
    await this.resume();
    const attempts = new Attempts(this.session, this.file.path, this.offset);
    for (;;) {
      while (this.offset < this.file.size) {
        if (this.parallelReady()) await this.parallel(attempts);
        else await this.requestOnce(attempts);
      }
      await flushOrThrow(this.writer, this.file.path);
      if ((await this.writer.digest()) === this.file.sha256) return this.fetched;
      if (this.answersInHand > 1 && !this.restartedOnMismatch) {
        this.restartedOnMismatch = true;
        await this.restart();
        continue;
      }
      await this.dropPartial();
      throw new ReleaseVerificationError("hash", `${this.file.path} does not have the SHA-256 the manifest gives`, {
        path: this.file.path,
      });
    }
  }

  /** Takes what an earlier attempt left in the `.partial` (re-hashed), or starts it over if it is too long. */
  private async resume(): Promise<void> {
    try {
      let size = (await this.fh.stat()).size;
      if (size > this.file.size) {
        await this.fh.truncate(0);
        size = 0;
      }
      if (size > 0) this.track.state = "checking";
      this.offset = await this.writer.start(size, this.session.signal, (n) => this.track.add(n));
      if (this.offset > 0) this.answersInHand = 1;
    } catch (error) {
      throw localOrAbort(this.session.signal, error, this.file.path);
    }
  }

  /** Whether the rest of the file goes on several connections now. */
  private parallelReady(): boolean {
    const { connections, segmentBytes } = this.session.parallel;
    return (
      !this.parallelOff &&
      !this.session.parallelBusy &&
      this.etag !== undefined &&
      worthParallel(this.file.size - this.offset, connections, segmentBytes)
    );
  }

  /** The rest of the file on several connections, as far as it goes; see {@link ParallelPhase}. */
  private async parallel(attempts: Attempts): Promise<void> {
    const { session, file, writer } = this;
    this.track.state = "downloading";
    session.parallelBusy = true;
    let outcome: ParallelOutcome;
    try {
      outcome = await new ParallelPhase(
        this.segmentHost(),
        attempts,
        session.parallel.connections,
        session.parallel.segmentBytes,
      ).run();
    } finally {
      session.parallelBusy = false;
    }
    let fallback = outcome.fallback;
    if (outcome.failure !== undefined)
      fallback = session.transientOrThrow(await this.bodyFailure(outcome.failure), file.path);
    await flushOrThrow(writer, file.path);
    attempts.progressTo(this.offset);
    if (fallback) {
      this.parallelOff = true;
      await attempts.backOffOrGiveUp(fallback);
    }
  }

  /** What a parallel phase sees of this transfer. */
  private segmentHost(): SegmentHost {
    const self = this;
    return {
      session: this.session,
      path: this.file.path,
      size: this.file.size,
      writer: this.writer,
      track: this.track,
      etag: this.etag!,
      get offset() {
        return self.offset;
      },
      set offset(value) {
        self.offset = value;
      },
      received: (n, scope) => {
        this.fetched += n;
        this.session.fetched += n;
        scope.received(n);
      },
      answered: () => {
        this.answersInHand += 1;
      },
      overflow: (end, status) => this.overflow(end, status),
    };
  }

  /** One request and its answer; returns when the next request may go (a failure counted, or bytes in hand). */
  private async requestOnce(attempts: Attempts): Promise<void> {
    const { connections, segmentBytes } = this.session.parallel;
    // the first answer of a large file covers one segment: if it carries a strong ETag, the rest
    // can go on several connections (a source that ignores the range sends the whole file)
    const probe =
      !this.probed && !this.parallelOff && worthParallel(this.file.size - this.offset, connections, segmentBytes);
    const last = probe ? this.offset + segmentBytes - 1 : undefined;
    const answer = await attempts.fetch({
      ...(this.offset > 0 || last !== undefined
        ? { range: { start: this.offset, ...(last === undefined ? {} : { end: last }) } }
        : {}),
      ...(this.offset > 0 && this.etag ? { ifRange: this.etag } : {}),
    });
    if (!answer) return;
    this.probed ||= probe;
    try {
      const end = await this.accept(answer.response, attempts, probe ? this.offset + segmentBytes : undefined);
      if (end !== undefined) await this.readBody(answer.response, answer.scope, end, attempts);
    } finally {
      answer.scope.end();
    }
  }

  /**
   * The exclusive end of the bytes the answer carries; undefined when there is nothing to read
   * (a failure counted). `asked` is the exclusive end of a closed range asked for, if one was.
   */
  private async accept(
    response: ReleaseFetchResponse,
    attempts: Attempts,
    asked: number | undefined,
  ): Promise<number | undefined> {
    switch (response.status) {
      case 200:
        return this.acceptWhole(response);
      case 206:
        return this.acceptPartial(response, attempts, asked);
      case 416:
        await this.onRangeNotSatisfiable(response, attempts);
        return undefined;
      default:
        await retryOrRefuse(this.session, attempts, response, this.file.path);
        return undefined;
    }
  }

  /** A 200: the whole file, at its declared size; whatever was in hand is dropped. */
  private async acceptWhole(response: ReleaseFetchResponse): Promise<number> {
    const { file } = this;
    await checkIdentityEncoding(this.session, response, file.path);
    const length = contentLength(response);
    if (length !== undefined && length !== file.size) {
      await discard(response.body);
      const what = `sent Content-Length ${length} for a file the manifest says is ${file.size} bytes`;
      throw this.session.badResponse(file.path, what, 200);
    }
    if (this.offset > 0) await this.restart(); // Range ignored or the file changed (If-Range): take it whole
    return file.size;
  }

  /** A 206: exactly the tail asked for, of a file of the declared size, from the same version as the bytes in hand. */
  private async acceptPartial(
    response: ReleaseFetchResponse,
    attempts: Attempts,
    asked: number | undefined,
  ): Promise<number | undefined> {
    const { file, offset } = this;
    await checkIdentityEncoding(this.session, response, file.path);
    const label = header(response, "content-range");
    const range = parseContentRange(label);
    const refuse = async (what: string): Promise<never> => {
      await discard(response.body);
      throw this.session.badResponse(file.path, what, 206);
    };
    if (offset === 0 && asked === undefined) return refuse("answered 206 to a request without Range");
    const last = (asked ?? file.size) - 1;
    if (!range || range.start !== offset || range.total !== file.size || range.end < range.start || range.end > last)
      return refuse(
        `answered Content-Range ${JSON.stringify(label ?? "")} to Range bytes=${offset}-${asked === undefined ? "" : last} of a ${file.size}-byte file`,
      );
    const length = contentLength(response);
    if (length !== undefined && length !== range.end + 1 - range.start)
      return refuse(`sent Content-Length ${length} with Content-Range ${range.start}-${range.end}`);
    if (this.etag !== undefined && strongEtag(response) !== this.etag) {
      // a source that ignores If-Range: the tail is of another version than the bytes in hand
      await discard(response.body);
      await this.restart();
      await attempts.backOffOrGiveUp(new NetworkError(`${file.path} changed on the source during the download`));
      return undefined;
    }
    return range.end + 1;
  }

  /** A 416: the source denies a range inside a file of the right size, so start over from zero. */
  private async onRangeNotSatisfiable(response: ReleaseFetchResponse, attempts: Attempts): Promise<void> {
    const { file } = this;
    const total = parseUnsatisfiedRange(header(response, "content-range"));
    await discard(response.body);
    if (total !== undefined && total !== file.size)
      throw this.session.badResponse(file.path, `says the file is ${total} bytes; the manifest says ${file.size}`, 416);
    const offset = this.offset;
    await this.restart();
    await attempts.backOffOrGiveUp(
      new NetworkError(`${file.path}: the source answered 416 to bytes=${offset}- of ${file.size}`),
      undefined,
      416,
    );
  }

  /** Reads an accepted answer's body into the writer, up to `end`; a break or a short body is a failure counted. */
  private async readBody(
    response: ReleaseFetchResponse,
    scope: RequestScope,
    end: number,
    attempts: Attempts,
  ): Promise<void> {
    const { session, writer, file } = this;
    const tag = strongEtag(response);
    if (tag !== undefined) this.etag = tag;
    this.answersInHand += 1;
    this.track.state = "downloading";
    const sink = this.sinkUpTo(end, response.status, scope);
    let broken: unknown;
    try {
      if (isDirectBody(response.body)) await response.body.readInto(sink);
      else await forEachChunk(response.body, (chunk) => copyInto(sink, chunk));
    } catch (error) {
      broken = await this.bodyFailure(error);
    }
    scope.end();
    // bytes hashed must be bytes on disk before the next request asks for what follows
    await flushOrThrow(writer, file.path);
    attempts.progressTo(this.offset, scope.tooSlow);
    if (broken !== undefined) {
      await attempts.backOffOrGiveUp(session.transientOrThrow(broken, file.path));
    } else if (this.offset < end) {
      await attempts.backOffOrGiveUp(
        new NetworkError(`${file.path}: the answer ended after ${this.offset} of ${end} bytes`),
      );
    }
  }

  /**
   * Every byte of a body passes here, in place in the writer's batch, before it is hashed:
   * bytes past `end` (the declared size, or the Content-Range's end) are refused at once.
   */
  private sinkUpTo(end: number, status: number, scope: RequestScope): BodySink {
    const { writer } = this;
    return {
      space: () => writer.space(),
      filled: (n) => {
        if (this.offset + n > end) throw this.overflow(end, status);
        this.offset += n;
        this.fetched += n;
        this.session.fetched += n;
        this.track.add(n);
        scope.received(n);
        const wait = writer.filled(n);
        if (wait) scope.pauseWhile(wait);
        return wait;
      },
    };
  }

  /** The error for a body byte past `end`: `size` past the declared size, `bad-response` past a Content-Range. */
  private overflow(end: number, status: number): Error {
    const { file } = this;
    if (end === file.size) {
      return new ReleaseVerificationError(
        "size",
        `${file.path}: the source sent more than the ${file.size} bytes the manifest declares`,
        { path: file.path },
      );
    }
    return this.session.badResponse(file.path, `sent more than its Content-Range ${end - 1} end`, status);
  }

  /** A body that failed: throws what ends the file (verification, the disk, a verdict, an abort); returns a break to retry. */
  private async bodyFailure(error: unknown): Promise<unknown> {
    const { writer, file, session } = this;
    if (error instanceof ReleaseVerificationError) {
      await writer.settle();
      await this.dropPartial();
      throw error;
    }
    if (isWriteError(error)) {
      await writer.settle();
      throw localError(error.cause, file.path);
    }
    if (error instanceof ReleaseDownloadError || session.signal.aborted) {
      // what arrived is good: keep it for the next run
      await writer.flush().catch(() => {});
      throw error instanceof ReleaseDownloadError ? error : abortReason(session.signal);
    }
    return error;
  }

  /** Drops the bytes in hand: the file starts over from zero. */
  private async restart(): Promise<void> {
    await flushOrThrow(this.writer, this.file.path);
    try {
      await this.fh.truncate(0);
    } catch (error) {
      throw localError(error, this.file.path);
    }
    this.offset = 0;
    await this.writer.start(0);
    this.answersInHand = 0;
    this.etag = undefined;
    this.track.reset();
  }

  /** Removes a `.partial` whose bytes failed verification: nothing failing it is kept. */
  private async dropPartial(): Promise<void> {
    await this.fh.truncate(0).catch(() => {});
    await unlink(this.partialPath).catch(() => {});
  }
}
