/**
 * A file's write side: body bytes land in a few large batches, each hashed (in a worker
 * where it can be) and written in one positioned write, with direct I/O where the file
 * system takes it. (A background fdatasync every 128 MiB was tried, to start writeback early:
 * on the benchmark machine it cost more system time than it saved.)
 * @internal
 * @module
 */
import type { FileHandle } from "node:fs/promises";
import { errorCode } from "../../fs/durable.js";
import { hashPrefix, IO_CHUNK } from "../../release/file-hash.js";
import type { BodySink } from "../http1/index.js";
import { sha256Stream, type Sha256Stream } from "../sha256.js";
import { alignedBuffers, DIRECT_ALIGN, openDirect } from "./direct-io.js";
import type { ReleaseTestHooks } from "./options.js";
import { localError } from "./staging.js";

/** One batch: four I/O units, so a write and a hash call each move 4 MiB. */
const WRITE_BATCH = 4 * IO_CHUNK;
/** Batches per file: one filling while the others wait for or are in their write. */
const BATCHES = 3;
/** A batch with less room than a TLS record is cycled: a read into a sliver would be split. */
const MIN_SPACE = 16 * 1024;
/** A slow source still gets its bytes to disk this often, so a crash loses little. */
const WRITE_MAX_DELAY_MS = 250;

/** A failed write or hash of a batch, carried to whoever waits on the writer next. */
export class WriteError extends Error {
  constructor(override readonly cause: unknown) {
    super("write failed");
  }
}

/** True for a {@link WriteError}. */
export function isWriteError(error: unknown): error is WriteError {
  return error instanceof WriteError;
}

/** {@link Writer.flush}, a failure thrown as the typed local error. */
export async function flushOrThrow(writer: Writer, path: string): Promise<void> {
  try {
    await writer.flush();
  } catch (error) {
    throw localError(isWriteError(error) ? error.cause : error, path);
  }
}

/**
 * A file's write side, and the {@link BodySink} its bodies are read into.
 *
 * Bytes land in one of BATCHES buffers of WRITE_BATCH bytes: decrypted straight into it by the
 * SDK's own sources, copied into it from any other body. Each full batch is hashed (in the
 * worker of `sha256.ts`, in place in the shared memory) and written in one positioned write on
 * the threadpool while the next fills. Writes run one after the other, in file order, so a
 * crash can only ever cut the file short, never leave a hole that a resume would take for data.
 *
 * Where the file system allows it (Linux, not tmpfs) the batches go to the device with direct
 * I/O, bypassing the page cache: no copy into the cache, no writeback left for the final fsync,
 * and a gigabyte download does not push the installer's other files out of memory. Direct I/O
 * needs aligned buffers, offsets and lengths: a batch starts at a DIRECT_ALIGN boundary of the
 * file (a resume re-reads the part of its first block already on disk), its unaligned tail is
 * carried to the next batch, and whatever must be on disk before a new request goes through
 * the page cache. Memory: BATCHES × WRITE_BATCH per file, whatever its size.
 */
export class Writer implements BodySink {
  /** File position of byte 0 of the batch filling. */
  private position = 0;
  private current: Buffer | undefined;
  private readonly free: Buffer[];
  private readonly shared: boolean;
  private fill = 0;
  /** Bytes at the start of the batch filling that are already hashed (carried or re-read). */
  private carried = 0;
  /** Whether those bytes are on disk already (re-read, or written by a final cycle). */
  private carriedOnDisk = true;
  private fillSince = 0;
  /** Batches queued or in their write or hash, oldest first; each gives its buffer back when done. */
  private readonly busy: Promise<void>[] = [];
  private chain: Promise<void> = Promise.resolve();
  private failure: WriteError | undefined;
  private hasher: Sha256Stream;

  private constructor(
    private readonly fh: FileHandle,
    private direct: FileHandle | undefined,
    private readonly path: string,
    private readonly hooks: ReleaseTestHooks,
  ) {
    const aligned = alignedBuffers(BATCHES, WRITE_BATCH);
    if (!aligned) this.direct = undefined;
    this.free = aligned ?? Array.from({ length: BATCHES }, () => Buffer.allocUnsafeSlow(WRITE_BATCH));
    this.shared = this.free[0]!.buffer instanceof SharedArrayBuffer;
    this.hasher = sha256Stream(this.shared);
  }

  /** A Writer on `fh`, with a direct-I/O handle on the same file when the system gives one. */
  static async open(fh: FileHandle, path: string, hooks: ReleaseTestHooks): Promise<Writer> {
    const writer = new Writer(fh, await openDirect(fh), path, hooks);
    hooks.onWriter?.(path, { direct: writer.direct !== undefined, hashInWorker: writer.hasher.inWorker });
    return writer;
  }

  /** Closes the direct-I/O handle (the caller closes `fh`) and forgets the hash; never throws. */
  async close(): Promise<void> {
    this.hasher.drop();
    const direct = this.direct;
    this.direct = undefined;
    await direct?.close().catch(() => {});
  }

  /**
   * Starts the file over: a new hash, fed the first `prefix` bytes of the file (what an earlier
   * attempt left in the `.partial`), and the next byte accepted goes right after them. Nothing
   * may be pending. Resolves with the bytes of the file hashed (less than `prefix` only if the
   * file is shorter). With direct I/O the batch starts at the block boundary before that
   * position, the bytes of that block already on disk read back into it.
   */
  async start(prefix: number, signal?: AbortSignal, onBytes?: (n: number) => void): Promise<number> {
    this.hasher.drop();
    this.hasher = sha256Stream(this.shared);
    const buffer = (this.current ??= this.free.pop()!);
    const done = await hashPrefix(this.fh, this.hasher, prefix, signal, onBytes, buffer);
    const lead = this.direct ? done % DIRECT_ALIGN : 0;
    this.position = done - lead;
    this.fill = this.carried = 0;
    if (lead > 0) {
      const { bytesRead } = await this.fh.read(buffer, 0, lead, this.position);
      if (bytesRead !== lead)
        throw Object.assign(new Error("the partial file changed while it was resumed"), { code: "EIO" });
      this.fill = this.carried = lead;
    }
    this.carriedOnDisk = true;
    return done;
  }

  /** The free part of the batch filling; never empty while no wait is pending (a full batch is cycled at once). */
  space(): Uint8Array {
    this.current ??= this.free.pop()!;
    return this.current.subarray(this.fill);
  }

  /** `n` bytes were put at the start of {@link space}; a full (or stale) batch goes to be written and hashed. */
  filled(n: number): Promise<void> | undefined {
    if (n === 0) return undefined;
    if (this.fill === this.carried) this.fillSince = performance.now();
    this.fill += n;
    if (this.current!.length - this.fill < MIN_SPACE || performance.now() - this.fillSince >= WRITE_MAX_DELAY_MS)
      return this.cycle(false);
    return undefined;
  }

  /** Everything accepted is written (to the device or the page cache) and hashed, or the write error is thrown. */
  async flush(): Promise<void> {
    await this.cycle(true);
    while (this.busy.length > 0) await this.busy[0];
    if (this.failure) throw this.failure;
  }

  /** The SHA-256 (hex) of every byte accepted; call after {@link flush}. */
  digest(): Promise<string> {
    return this.hasher.digest();
  }

  /** Waits for the batches queued, dropping what was not yet queued; never throws. */
  async settle(): Promise<void> {
    this.fill = this.carried;
    while (this.busy.length > 0) await this.busy[0]!.catch(() => {});
  }

  /** Queues the batch filling, first waiting for a free buffer (the RSS bound). */
  private cycle(final: boolean): Promise<void> | undefined {
    if (this.failure) return Promise.reject(this.failure);
    if (this.free.length === 0 && this.fill > this.carried) {
      return this.busy[0]!.then(() => this.cycle(final));
    }
    this.rotate(final);
    return undefined;
  }

  private rotate(final: boolean): void {
    if (this.fill === this.carried && (!final || this.carriedOnDisk)) return;
    const batch = this.current!;
    const length = this.fill;
    const base = this.position;
    const fresh = batch.subarray(this.carried, length);
    // direct I/O writes whole blocks; the tail waits for the bytes after it, unless it must be on disk now
    const direct = this.direct !== undefined;
    const directLength = direct ? length - (length % DIRECT_ALIGN) : 0;
    const bufferedFrom = direct ? (final ? directLength : length) : 0;
    const tail = direct ? length - directLength : 0;
    const next = this.free.pop()!;
    if (tail > 0) batch.copy(next, 0, directLength, length);
    this.current = next;
    this.position = base + length - tail;
    this.fill = this.carried = tail;
    this.carriedOnDisk = final;
    // hashes run in order in the worker, writes one after the other on the threadpool
    const hashed = this.hasher.update(fresh);
    const written = (this.chain = this.chain.then(async () => {
      if (this.failure) return;
      await this.write(batch, base, directLength, bufferedFrom, length);
    }));
    const done: Promise<void> = Promise.all([hashed, written]).then(
      () => undefined,
      (error: unknown) => {
        this.failure ??= new WriteError(error);
      },
    );
    const tracked: Promise<void> = done.then(() => {
      this.free.push(batch);
      void this.busy.splice(this.busy.indexOf(tracked), 1);
    });
    this.busy.push(tracked);
  }

  private async write(
    batch: Buffer,
    base: number,
    directLength: number,
    bufferedFrom: number,
    length: number,
  ): Promise<void> {
    this.hooks.beforeWrite?.(this.path, base, length);
    if (directLength > 0) {
      let written = false;
      if (this.direct) {
        try {
          await writeAll(this.direct, batch, 0, directLength, base);
          written = true;
        } catch (error) {
          if (errorCode(error) !== "EINVAL") throw error;
          // the file system takes no direct I/O after all: the page cache from here on
          const direct = this.direct;
          this.direct = undefined;
          await direct.close().catch(() => {});
        }
      }
      if (!written) await writeAll(this.fh, batch, 0, directLength, base);
    }
    if (length > bufferedFrom) await writeAll(this.fh, batch, bufferedFrom, length - bufferedFrom, base + bufferedFrom);
  }
}

async function writeAll(fh: FileHandle, batch: Buffer, from: number, length: number, position: number): Promise<void> {
  let done = 0;
  while (done < length) {
    // a short write (the disk filling up) is followed by one that reports the error
    const { bytesWritten } = await fh.write(batch, from + done, length - done, position + done);
    if (bytesWritten === 0) throw Object.assign(new Error("no progress writing"), { code: "EIO" });
    done += bytesWritten;
  }
}
