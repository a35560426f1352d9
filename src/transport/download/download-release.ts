/**
 * The release downloader: the signed manifest first, then every file hashed while it streams,
 * cut off past its declared size, resumed from its `.partial` file (re-hashed first, also after
 * a process restart), fsync'd, renamed into place, the directory fsync'd. Nothing that fails
 * verification is ever left where a verified file belongs.
 * @module
 */
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { abortReason, throwIfAborted } from "../../core/retry.js";
import { ReleaseArgumentError } from "../../errors/index.js";
import { fsyncDir, writeFileDurably } from "../../fs/durable.js";
import { RELEASE_MANIFEST_PATH, resolveLimits } from "../../release/manifest-rules.js";
import type { ReleaseFile } from "../../release/manifest-types.js";
import { mirrorSource, type ReleaseSource } from "../sources.js";
import { checkTrustOptions, verifyReleaseManifest } from "../../release/verify.js";
import { downloadFile } from "./file-download.js";
import { fetchManifest } from "./manifest-fetch.js";
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_CONNECTIONS,
  DEFAULT_RETRY,
  MAX_CONCURRENCY,
  MAX_CONNECTIONS,
  SEGMENT_BYTES,
  RELEASE_TEST_HOOKS,
  type DownloadedRelease,
  type DownloadedReleaseFile,
  type DownloadReleaseOptions,
  type ReleaseTestHooks,
} from "./options.js";
import { Progress } from "./progress.js";
import { DownloadSession } from "./session.js";
import { DEFAULT_MIN_SPEED } from "./speed.js";
import { ensureRealDirs, localError, retractManifest } from "./staging.js";

/**
 * Downloads and verifies the release the cluster named (`upgrade.to`) into `destDir` from the
 * source given (or the mirror `upgrade.source` names): the manifest first, verified with every
 * rule of docs/protocol.md#release-verification, then every file (a few at once), each hashed as it streams
 * and accepted only at its exact size and hash. Resumes from `.partial` files; retries 503
 * `RELEASE_BUSY`, 429, 5xx and broken connections with backoff and jitter, honouring
 * `Retry-After`. The joiner's `downloadRelease` (`@stratum/join/node`) calls this with the
 * founder's source when the founder serves the release.
 *
 * Throws {@link ReleaseVerificationError} (the release is not the signed one),
 * {@link ReleaseDownloadError} (retries exhausted, a refusal, a source breaking the range rules,
 * an unsafe or full disk), {@link ReleaseArgumentError}, or the abort reason as is.
 */
export async function downloadReleaseFrom(options: DownloadReleaseOptions): Promise<DownloadedRelease> {
  const concurrency = checkOptions(options);
  throwIfAborted(options.signal);
  const { source, owned } = resolveSource(options);
  const destDir = resolve(options.destDir);
  const limits = resolveLimits(options.limits);
  // a failing file stops its siblings through this, the caller's abort through theirs
  const internal = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, internal.signal]) : internal.signal;
  const hooks = (options as unknown as Record<symbol, ReleaseTestHooks | undefined>)[RELEASE_TEST_HOOKS] ?? {};
  const retry = { ...DEFAULT_RETRY, ...definedOnly(options.retry) };
  const minSpeed = { ...DEFAULT_MIN_SPEED, ...definedOnly(options.minSpeed) };
  const connections = options.connections ?? DEFAULT_CONNECTIONS;
  const session = new DownloadSession(source, signal, retry, minSpeed, hooks, {
    connections,
    segmentBytes: hooks.segmentBytes ?? SEGMENT_BYTES,
  });
  try {
    await mkdir(destDir, { recursive: true }).catch((error: unknown) => {
      throw localError(error, undefined);
    });
    const envelope = await fetchManifest(session, limits.maxEnvelopeBytes);
    const verified = verifyReleaseManifest(envelope, {
      trustedKeys: options.trustedKeys,
      ...(options.threshold === undefined ? {} : { threshold: options.threshold }),
      expectRelease: options.upgrade.to,
      limits,
    });
    const files = verified.manifest.files;
    await retractManifest(destDir);
    const progress = new Progress(files, options.onProgress, () => session.fetched);
    const results = await eachFile(files, concurrency, internal, (file) =>
      downloadFile(session, destDir, progress, file),
    ).catch((error: unknown) => {
      // the caller's abort, not the sibling failures it caused
      throw options.signal?.aborted ? abortReason(options.signal) : error;
    });
    if (options.signal?.aborted) throw abortReason(options.signal);
    const manifestPath = await completeDirectory(destDir, files, envelope);
    return {
      release: verified.manifest.release,
      manifest: verified.manifest,
      signedBy: verified.signedBy,
      files: results,
      manifestPath,
      bytesFetched: session.fetched,
      source: source.describe(),
    };
  } finally {
    if (owned) await source.close?.().catch(() => {});
  }
}

/** The options that can never work, refused before any request; returns how many files go at once. */
function checkOptions(options: DownloadReleaseOptions): number {
  const { filesAtOnce: given, concurrency: formerName } = options;
  if (given !== undefined && formerName !== undefined && given !== formerName)
    throw new ReleaseArgumentError("filesAtOnce and its former name concurrency differ: give filesAtOnce only");
  const concurrency = given ?? formerName ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY)
    throw new ReleaseArgumentError(`filesAtOnce is a whole number from 1 to ${MAX_CONCURRENCY}`);
  const connections = options.connections;
  if (connections !== undefined && (!Number.isInteger(connections) || connections < 1 || connections > MAX_CONNECTIONS))
    throw new ReleaseArgumentError(`connections is a whole number from 1 to ${MAX_CONNECTIONS}`);
  if (!options.upgrade || typeof options.upgrade.to !== "string" || options.upgrade.to === "") {
    throw new ReleaseArgumentError("upgrade.to names the release to download");
  }
  const { bytesPerSecond, windowMs } = { ...DEFAULT_MIN_SPEED, ...definedOnly(options.minSpeed) };
  if (
    !(typeof bytesPerSecond === "number" && bytesPerSecond >= 0 && Number.isFinite(bytesPerSecond)) ||
    !(typeof windowMs === "number" && windowMs > 0 && Number.isFinite(windowMs))
  )
    throw new ReleaseArgumentError("minSpeed is { bytesPerSecond: a rate of 0 or more, windowMs: a duration above 0 }");
  checkTrustOptions({
    trustedKeys: options.trustedKeys,
    threshold: options.threshold,
    expectRelease: options.upgrade.to,
  });
  return concurrency;
}

function resolveSource(options: DownloadReleaseOptions): { source: ReleaseSource; owned: boolean } {
  if (options.source) return { source: options.source, owned: false };
  if (options.upgrade.source) return { source: mirrorSource(options.upgrade.source, options.mirror), owned: true };
  if (options.upgrade.served) {
    throw new ReleaseArgumentError(
      "the founder serves this release: pass `source`, a source on the pinned founder connection (the joiner's downloadRelease makes it from the join session)",
    );
  }
  throw new ReleaseArgumentError("the upgrade names no release source and the founder does not serve it");
}

/** The fields of `value` that are set, so a default is not overridden by an explicit undefined or null. */
function definedOnly<T extends object>(value: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}

/**
 * Runs `download` on every file, `concurrency` at a time, results in manifest order. The
 * first failure aborts `internal` (its siblings stop) and is thrown once all have stopped.
 */
async function eachFile(
  files: readonly ReleaseFile[],
  concurrency: number,
  internal: AbortController,
  download: (file: ReleaseFile) => Promise<DownloadedReleaseFile>,
): Promise<DownloadedReleaseFile[]> {
  const results: DownloadedReleaseFile[] = new Array(files.length);
  let failure: { error: unknown } | undefined;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (!failure && next < files.length) {
      const index = next++;
      try {
        results[index] = await download(files[index]!);
      } catch (error) {
        if (!failure) {
          failure = { error };
          internal.abort(new DOMException("a sibling download failed", "AbortError"));
        }
        return;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(files.length, 1)) }, worker));
  if (failure) throw failure.error;
  return results;
}

/**
 * Makes the verified files durable where they are (every directory a rename went into, and
 * its ancestors, so new directories survive a crash), then writes the manifest: from here on
 * the directory says "complete". Returns where the manifest went.
 */
async function completeDirectory(destDir: string, files: readonly ReleaseFile[], envelope: Buffer): Promise<string> {
  const dirs = new Set<string>();
  for (const file of files) {
    const parts = file.path.split("/");
    for (let i = parts.length - 1; i >= 0; i--) dirs.add(join(destDir, ...parts.slice(0, i)));
  }
  try {
    for (const dir of [...dirs].sort((a, b) => b.length - a.length)) await fsyncDir(dir);
    await ensureRealDirs(destDir, "payload", RELEASE_MANIFEST_PATH);
    const manifestPath = join(destDir, ...RELEASE_MANIFEST_PATH.split("/"));
    await writeFileDurably(manifestPath, envelope);
    await fsyncDir(destDir);
    return manifestPath;
  } catch (error) {
    throw localError(error, RELEASE_MANIFEST_PATH);
  }
}
