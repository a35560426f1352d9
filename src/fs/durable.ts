/**
 * Durable writes: the one rule every file the SDK (and the reference founder) writes follows,
 * so that a crash or a power cut leaves the old content or the new one, never a torn or
 * empty file, and never a file that exists only in the page cache.
 *
 * The rule: write a temporary file beside the target (created exclusively, never through a
 * symlink), set its mode, fsync it, move it into place (rename, or link for an exclusive
 * write, which refuses an existing target atomically), then fsync the directory so the new
 * name itself survives the crash.
 * @internal
 * @module
 */
import { randomBytes } from "node:crypto";
import { constants as fsc } from "node:fs";
import { link, open, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Options of {@link writeFileDurably}. */
export interface DurableWriteOptions {
  /** The file's mode, applied whatever the umask (default 0644; use 0600 for secrets). */
  mode?: number | undefined;
  /** Refuse (with `EEXIST`) instead of replacing a file already at the path. */
  exclusive?: boolean | undefined;
}

/**
 * Writes `data` to `path` durably (see the module comment). Throws the file system's error
 * as is (`EEXIST` for an exclusive write onto an existing file); the temporary file is gone
 * either way.
 */
export async function writeFileDurably(
  path: string,
  data: string | Uint8Array,
  options: DurableWriteOptions = {},
): Promise<void> {
  const mode = options.mode ?? 0o644;
  // Hidden and unique: a crash leaves at most a stray dot-file, never a file a reader takes for the target.
  const temp = join(dirname(path), `.${basename(path)}.tmp-${randomBytes(6).toString("hex")}`);
  const fh = await open(temp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, mode);
  try {
    // The umask may have narrowed the mode at creation; a 0644 certificate stays 0644.
    await fh.chmod(mode);
    await fh.writeFile(data);
    await fh.sync();
    await fh.close();
    if (options.exclusive) {
      await link(temp, path);
      await unlink(temp);
    } else {
      await rename(temp, path);
    }
  } catch (error) {
    await fh.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await fsyncDir(dirname(path));
}

/** fsyncs a directory, so that the names created or renamed in it survive a crash. */
export async function fsyncDir(path: string): Promise<void> {
  const fh = await open(path, fsc.O_RDONLY | fsc.O_DIRECTORY);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** The `code` of a Node system error (`ENOENT`, `ENOSPC`, …), if any. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}
