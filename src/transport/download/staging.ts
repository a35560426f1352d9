/**
 * The destination directory as the downloader touches it: nothing is followed through a
 * symlink or a hard link planted there, and a local file error becomes a typed
 * {@link ReleaseDownloadError} (`unsafe-staging`, `disk-full`, `local-io`).
 * @internal
 * @module
 */
import { constants as fsc, type Stats } from "node:fs";
import { lstat, mkdir, open, unlink, type FileHandle } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { abortReason } from "../../core/retry.js";
import { ReleaseDownloadError } from "../../errors/index.js";
import { errorCode, fsyncDir } from "../../fs/durable.js";
import { PARTIAL_SUFFIX, RELEASE_MANIFEST_PATH } from "../../release/manifest-rules.js";

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

/** The abort reason when `signal` is aborted (a local error then is only its echo), else {@link localError}. */
export function localOrAbort(signal: AbortSignal, error: unknown, releasePath: string): unknown {
  if (signal.aborted) return abortReason(signal);
  return localError(error, releasePath);
}

/** The `unsafe-staging` error for something in the destination the downloader will not go through. */
export function unsafeStaging(
  releasePath: string,
  what: string,
  refusal: string,
  cause?: unknown,
): ReleaseDownloadError {
  return new ReleaseDownloadError("unsafe-staging", `${what} in the destination is ${refusal}`, {
    path: releasePath,
    ...(cause === undefined ? {} : { cause }),
  });
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
      throw unsafeStaging(
        releasePath,
        relative(root, at).split(sep).join("/"),
        `${stat.isSymbolicLink() ? "a symlink" : "not a directory"}; refusing to write ${releasePath} through it`,
      );
    }
  }
}

/** `lstat`, or undefined when nothing is there; any other error is a typed local error. */
export async function lstatOrUndefined(at: string, releasePath: string): Promise<Stats | undefined> {
  try {
    return await lstat(at);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw localError(error, releasePath);
  }
}

/** Opens `at` without following a symlink (a symlink there is `unsafe-staging`). */
export async function openNoFollow(at: string, flags: number, releasePath: string): Promise<FileHandle> {
  try {
    return await open(at, flags | fsc.O_NOFOLLOW, 0o644);
  } catch (error) {
    if (errorCode(error) === "ELOOP")
      throw unsafeStaging(releasePath, releasePath, "a symlink; refusing to follow it", error);
    throw localError(error, releasePath);
  }
}

/**
 * Opens (creating it if missing) the `.partial` a file is staged in, refusing a symlink, a
 * non-regular file or a hard link there: writing through any of them would overwrite another file.
 */
export async function openPartial(partialPath: string, releasePath: string): Promise<FileHandle> {
  const what = `${releasePath}${PARTIAL_SUFFIX}`;
  const stat = await lstatOrUndefined(partialPath, releasePath);
  if (stat && (stat.isSymbolicLink() || !stat.isFile())) {
    const kind = stat.isSymbolicLink() ? "a symlink" : "not a regular file";
    throw unsafeStaging(releasePath, what, `${kind}; refusing to write through it`);
  }
  const fh = await openNoFollow(partialPath, fsc.O_RDWR | fsc.O_CREAT | fsc.O_NONBLOCK, releasePath);
  const opened = await fh.stat();
  if (!opened.isFile() || opened.nlink !== 1) {
    await fh.close().catch(() => {});
    const kind = opened.isFile() ? "a hard link" : "not a regular file";
    throw unsafeStaging(releasePath, what, `${kind}; refusing to write through it`);
  }
  return fh;
}

/**
 * A manifest in the destination says "this release is complete here". Before any file is
 * touched it goes (durably), and it comes back only when every file has verified: an
 * interrupted run can never leave a directory that looks complete.
 */
export async function retractManifest(destDir: string): Promise<void> {
  const at = join(destDir, ...RELEASE_MANIFEST_PATH.split("/"));
  const stat = await lstatOrUndefined(at, RELEASE_MANIFEST_PATH);
  if (!stat) return;
  if (stat.isDirectory()) throw unsafeStaging(RELEASE_MANIFEST_PATH, RELEASE_MANIFEST_PATH, "a directory");
  try {
    await unlink(at);
    await fsyncDir(dirname(at));
  } catch (error) {
    throw localError(error, RELEASE_MANIFEST_PATH);
  }
}
