/**
 * File helpers of the release tooling and the downloader: hashing without holding a file in
 * memory, durable writes (fsync, rename, directory fsync), and directory creation that never
 * follows a symlink planted in the staging tree.
 * @internal
 * @module
 */
import { createHash } from "node:crypto";
import { constants as fsc } from "node:fs";
import { lstat, mkdir, open, readdir, type FileHandle } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { throwIfAborted } from "../core/retry.js";
import { errorCode } from "../fs/durable.js";
import { ReleaseDownloadError } from "../errors/index.js";

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

/**
 * Makes sure `root/relDir` exists as a chain of real directories below `root`, creating what
 * is missing. A component that is a symlink or not a directory is refused, not followed:
 * a symlink planted in the staging tree must not send a download elsewhere.
 */
export async function ensureRealDirs(root: string, relDir: string, releasePath: string): Promise<void> {
  let at = root;
  for (const part of relDir.split("/").filter(Boolean)) {
    at = join(at, part);
    let stat;
    try {
      stat = await lstat(at);
    } catch (error) {
      if (errorCode(error) !== "ENOENT") throw localError(error, releasePath);
      try {
        await mkdir(at, { mode: 0o755 });
      } catch (mkdirError) {
        if (errorCode(mkdirError) !== "EEXIST") throw localError(mkdirError, releasePath);
      }
      stat = await lstat(at);
    }
    if (stat.isSymbolicLink() || !stat.isDirectory()) {
      throw new ReleaseDownloadError(
        "unsafe-staging",
        `${relative(root, at).split(sep).join("/")} in the destination is ${stat.isSymbolicLink() ? "a symlink" : "not a directory"}; refusing to write ${releasePath} through it`,
        { path: releasePath },
      );
    }
  }
}

/** Every regular file below `dir`, as sorted release paths (POSIX, relative). Symlinks and other non-regular entries are returned in `rejected`. */
export async function walkFiles(dir: string): Promise<{ files: string[]; rejected: string[] }> {
  const files: string[] = [];
  const rejected: string[] = [];
  async function walk(at: string, prefix: string): Promise<void> {
    const entries = await readdir(at, { withFileTypes: true });
    for (const entry of entries) {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(join(at, entry.name), rel);
      else if (entry.isFile()) files.push(rel);
      else rejected.push(rel);
    }
  }
  await walk(dir, "");
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return { files: files.sort(order), rejected: rejected.sort(order) };
}

/** Wraps a local file error in the typed download error (`disk-full` for ENOSPC/EDQUOT). */
export function localError(error: unknown, releasePath: string | undefined): ReleaseDownloadError {
  if (error instanceof ReleaseDownloadError) return error;
  const code = errorCode(error);
  const full = code === "ENOSPC" || code === "EDQUOT";
  return new ReleaseDownloadError(
    full ? "disk-full" : "local-io",
    full
      ? `the disk is full while writing ${releasePath ?? "the release"}; what was written stays and a later run resumes from it`
      : `a local file operation failed for ${releasePath ?? "the release"} (${code ?? "error"})`,
    { ...(releasePath === undefined ? {} : { path: releasePath }), cause: error },
  );
}

/** Alignment of direct I/O: offsets, lengths and buffer addresses (4096 covers 512- and 4096-byte sectors). */
export const DIRECT_ALIGN = 4096;

/**
 * `count` buffers of `size` bytes (a multiple of {@link DIRECT_ALIGN}) at page-aligned
 * addresses, as direct I/O needs, and shared (views of a `SharedArrayBuffer`) when the
 * runtime allows, so a worker thread can hash them in place. JavaScript cannot ask for an
 * address; a WebAssembly memory's base is page-aligned by construction, so the buffers are
 * views of one. Undefined when WebAssembly is unavailable (`--jitless`): the caller then
 * writes through the page cache from ordinary buffers.
 */
export function alignedBuffers(count: number, size: number): Buffer[] | undefined {
  const pages = Math.ceil((count * size) / 65_536);
  let memory: WebAssembly.Memory | undefined;
  for (const shared of [true, false]) {
    try {
      memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared });
      break;
    } catch {
      // no shared memory here: try an unshared one
    }
  }
  if (!memory) return undefined;
  const buffer = memory.buffer;
  return Array.from({ length: count }, (_, i) => Buffer.from(buffer, i * size, size));
}

/**
 * A second handle on an open file, for direct I/O (`O_DIRECT`: written to the device, not
 * copied into the page cache, so the final fsync has nothing left to write back). Opened
 * through `/proc/self/fd`, so it is the very file `fh` has open, never whatever the path
 * names by now. Undefined where there is no `O_DIRECT` (not Linux) or the file system refuses
 * it: the caller then writes through `fh`.
 */
export async function openDirect(fh: FileHandle): Promise<FileHandle | undefined> {
  if (process.platform !== "linux" || !fsc.O_DIRECT) return undefined;
  try {
    return await open(`/proc/self/fd/${fh.fd}`, fsc.O_WRONLY | fsc.O_DIRECT);
  } catch {
    return undefined;
  }
}
