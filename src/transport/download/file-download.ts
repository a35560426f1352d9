/**
 * One file of the manifest, end to end: a file an earlier run put in place is trusted only
 * after it hashes right; otherwise the file is staged as `<path>.partial`, filled by a
 * {@link FileTransfer}, fsync'd, renamed into place and its directory fsync'd.
 * @internal
 * @module
 */
import { createHash } from "node:crypto";
import { constants as fsc } from "node:fs";
import { rename, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fsyncDir } from "../../fs/durable.js";
import { hashPrefix } from "../../release/file-hash.js";
import { PARTIAL_SUFFIX } from "../../release/manifest-rules.js";
import type { ReleaseFile } from "../../release/manifest-types.js";
import { FileTransfer } from "./file-transfer.js";
import type { DownloadedReleaseFile } from "./options.js";
import type { FileTrack, Progress } from "./progress.js";
import type { DownloadSession } from "./session.js";
import {
  ensureRealDirs,
  localError,
  localOrAbort,
  lstatOrUndefined,
  openNoFollow,
  openPartial,
  unsafeStaging,
} from "./staging.js";
import { Writer } from "./writer.js";

/** Downloads and verifies one file into `destDir`, or finds it there already verified. */
export async function downloadFile(
  session: DownloadSession,
  destDir: string,
  progress: Progress,
  file: ReleaseFile,
): Promise<DownloadedReleaseFile> {
  const segments = file.path.split("/");
  const finalPath = join(destDir, ...segments);
  const track = progress.track(file);
  await ensureRealDirs(destDir, segments.slice(0, -1).join("/"), file.path);
  if (await keepEarlierFile(session, file, finalPath, track)) {
    track.verified();
    return { ...file, location: finalPath, bytesFetched: 0 };
  }
  const partialPath = finalPath + PARTIAL_SUFFIX;
  const fh = await openPartial(partialPath, file.path);
  let closed = false;
  try {
    const writer = await Writer.open(fh, file.path, session.hooks);
    let fetched: number;
    try {
      fetched = await new FileTransfer(session, file, fh, partialPath, writer, track).run();
    } finally {
      await writer.settle();
      await writer.close();
    }
    try {
      await fh.sync();
      closed = true;
      await fh.close();
      await rename(partialPath, finalPath);
      await fsyncDir(dirname(finalPath));
    } catch (error) {
      throw localError(error, file.path);
    }
    track.verified();
    return { ...file, location: finalPath, bytesFetched: fetched };
  } finally {
    if (!closed) await fh.close().catch(() => {});
  }
}

/**
 * True when the file an earlier run put in place hashes right. A wrong one is removed; a
 * symlink or anything but a regular file there is `unsafe-staging`.
 */
async function keepEarlierFile(
  session: DownloadSession,
  file: ReleaseFile,
  finalPath: string,
  track: FileTrack,
): Promise<boolean> {
  const existing = await lstatOrUndefined(finalPath, file.path);
  if (!existing) return false;
  if (existing.isSymbolicLink() || !existing.isFile()) {
    const kind = existing.isSymbolicLink() ? "a symlink" : "not a regular file";
    throw unsafeStaging(file.path, file.path, `${kind}; refusing to replace it`);
  }
  if (existing.size === file.size) {
    const fh = await openNoFollow(finalPath, fsc.O_RDONLY, file.path);
    const hash = createHash("sha256");
    try {
      track.state = "checking";
      await hashPrefix(fh, hash, file.size, session.signal, (n) => track.add(n));
    } catch (error) {
      throw localOrAbort(session.signal, error, file.path);
    } finally {
      await fh.close().catch(() => {});
    }
    if (hash.digest("hex") === file.sha256) return true;
    track.reset();
  }
  await unlink(finalPath).catch((error: unknown) => {
    throw localError(error, file.path);
  });
  return false;
}
