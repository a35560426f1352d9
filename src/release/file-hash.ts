/**
 * Hashing files without holding them in memory: a prefix of an open file (what a `.partial`
 * already holds, a file an earlier run put in place) or a whole file of a release directory.
 * @internal
 * @module
 */
import { createHash } from "node:crypto";
import { constants as fsc } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { throwIfAborted } from "../core/retry.js";

/** Read and write unit: large enough that syscalls and hash calls are a rounding error. */
export const IO_CHUNK = 1 << 20;

/**
 * Feeds the first `length` bytes of an open file into `hash` (a node:crypto Hash, or any
 * `update` that may return a promise, awaited before the buffer is reused); returns how many
 * bytes it read (less only if the file is shorter). Reads into `buffer` when one is given.
 */
export async function hashPrefix(
  fh: FileHandle,
  hash: { update(bytes: Uint8Array): unknown },
  length: number,
  signal?: AbortSignal,
  onBytes?: (n: number) => void,
  // four I/O units: the reads stay few even on a cold cache, the buffer small next to a batch
  buffer: Buffer = Buffer.allocUnsafe(Math.min(IO_CHUNK * 4, Math.max(length, 1))),
): Promise<number> {
  let done = 0;
  while (done < length) {
    throwIfAborted(signal);
    const { bytesRead } = await fh.read(buffer, 0, Math.min(buffer.length, length - done), done);
    if (bytesRead === 0) break;
    await hash.update(buffer.subarray(0, bytesRead));
    done += bytesRead;
    onBytes?.(bytesRead);
  }
  return done;
}

/** SHA-256 (hex) and size of a file, streamed. The file is opened without following a symlink. */
export async function hashFile(path: string, signal?: AbortSignal): Promise<{ sha256: string; size: number }> {
  const fh = await open(path, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  try {
    const hash = createHash("sha256");
    const size = (await fh.stat()).size;
    const read = await hashPrefix(fh, hash, size, signal);
    return { sha256: hash.digest("hex"), size: read };
  } finally {
    await fh.close();
  }
}
