/**
 * The release downloader: the signed manifest first, then every file hashed while it streams,
 * cut off past its declared size, resumed from its `.partial` file (re-hashed first, also after
 * a process restart), fsync'd, renamed into place, the directory fsync'd. Nothing that fails
 * verification is ever left where a verified file belongs.
 * @module
 */
import { createHash } from "node:crypto";
import { constants as fsc } from "node:fs";
import { lstat, mkdir, open, rename, unlink, type FileHandle } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { StratumApiError, NetworkError, type ProblemBody } from "../errors/index.js";
import { abortReason, parseRetryAfter, retryDelay, sleep, throwIfAborted } from "../core/retry.js";
import { ReleaseArgumentError, ReleaseDownloadError, ReleaseVerificationError } from "../errors/index.js";
import {
  alignedBuffers,
  DIRECT_ALIGN,
  ensureRealDirs,
  hashPrefix,
  IO_CHUNK,
  localError,
  openDirect,
} from "./fsutil.js";
import { errorCode, fsyncDir, writeFileDurably } from "../fs/durable.js";
import type { ReleasePublicKeyInput } from "./keys.js";
import type { ReleaseFile, ReleaseManifest } from "./manifest.js";
import { isDirectBody, type BodySink } from "./http1.js";
import { sha256Stream, type Sha256Stream } from "./sha256.js";
import { mirrorSource, type MirrorSourceOptions, type ReleaseFetchResponse, type ReleaseSource } from "./sources.js";
import {
  checkTrustOptions,
  PARTIAL_SUFFIX,
  RELEASE_MANIFEST_PATH,
  resolveLimits,
  verifyReleaseManifest,
  type ReleaseLimits,
} from "./verify.js";

/** The `upgrade` object of a registration in `needs-upgrade` (the seed's shape). */
export interface ReleaseUpgrade {
  /** The release the joiner runs. */
  from?: string;
  /** The release the cluster runs: the only release the manifest may name. */
  to: string;
  /** The mirror's HTTPS URL of the release directory, when there is one. */
  source?: string;
  /** True when the founder serves the release itself (`GET /v1/join/registrations/{joinId}/release/{path}`). */
  served?: boolean;
}

/** How failed requests are retried. Counted per file, as consecutive failures that brought no new byte. */
export interface ReleaseRetryOptions {
  /** Failures in a row without progress before a file gives up. Default 8. */
  attempts?: number;
  /** First backoff ceiling, ms (full jitter). Default 500. */
  baseMs?: number;
  /** Largest backoff, ms. Default 30 000. */
  maxMs?: number;
  /** Largest wait a `Retry-After` may impose, ms. Default 300 000. */
  maxRetryAfterMs?: number;
}

/** A progress report; one is sent at most every 100 ms, and whenever a file is verified. */
export interface ReleaseProgress {
  /** The file this report is about. */
  file: {
    /** Its release path. */
    path: string;
    /** Bytes of it verified so far: re-hashed from a `.partial` or an earlier run's file, or fetched. */
    bytesDone: number;
    /** Its declared size. */
    size: number;
    /** `checking` while bytes already on disk are re-hashed, `downloading`, then `verified`. */
    state: "checking" | "downloading" | "verified";
  };
  /** Bytes of the whole release done (as `file.bytesDone`, summed). */
  bytesDone: number;
  /** Bytes of the whole release. */
  bytesTotal: number;
  /** Files verified and in place. */
  filesDone: number;
  /** Files in the manifest. */
  filesTotal: number;
  /** Bytes received from the source in this run. */
  bytesFetched: number;
  /** Receive rate over the last 2 s, bytes per second. */
  bytesPerSecond: number;
}

/** Options of {@link downloadRelease}. */
export interface DownloadReleaseOptions {
  /** The registration's `upgrade`: `to` is the release to expect; `source` a mirror URL. */
  upgrade: ReleaseUpgrade;
  /**
   * Where to fetch from, instead of a mirror made from `upgrade.source`. Required when the
   * founder serves the release (`upgrade.served`): the pinned founder connection, e.g.
   * `dispatcherSource(client, "/v1/join/registrations/{joinId}/release")`.
   */
  source?: ReleaseSource;
  /** Options of the mirror made from `upgrade.source` (e.g. `ca`). */
  mirror?: MirrorSourceOptions;
  /**
   * The directory to build the release in, created if missing. Files land at their release
   * paths, staged as `<path>.partial`; `payload/manifest.json` is written last, so its presence
   * means complete. Files the manifest does not list are left alone.
   */
  destDir: string;
  /** The release keys this joiner trusts (its OS trust store): PEM, raw 32 bytes or KeyObject. */
  trustedKeys: readonly ReleasePublicKeyInput[];
  /** Distinct trusted keys that must have signed. Default 1. */
  threshold?: number;
  /** Files fetched at once. Default 3 (the founder serves a few files at once per registration). */
  concurrency?: number;
  /** Aborts everything; the abort is re-thrown as is, the `.partial` files stay for a later run. */
  signal?: AbortSignal;
  /** Called with progress reports. Must not throw. */
  onProgress?: (progress: ReleaseProgress) => void;
  /** Retry tuning. */
  retry?: ReleaseRetryOptions;
  /** Manifest bounds; defaults in `DEFAULT_RELEASE_LIMITS`. */
  limits?: ReleaseLimits;
}

/** A file of the release, verified and in place. */
export interface DownloadedReleaseFile extends ReleaseFile {
  /** Its absolute path on disk. */
  location: string;
  /** Bytes fetched for it in this run (0 when an earlier run had finished it). */
  bytesFetched: number;
}

/** What {@link downloadRelease} returns: a verified release on disk. */
export interface DownloadedRelease {
  /** The release (`upgrade.to`). */
  release: string;
  /** The verified manifest. */
  manifest: ReleaseManifest;
  /** The keyids of the trusted keys whose signatures verified. */
  signedBy: string[];
  /** Every file of the manifest, verified and in place, in manifest order. */
  files: DownloadedReleaseFile[];
  /** Where the envelope was written (`<destDir>/payload/manifest.json`). */
  manifestPath: string;
  /** Bytes received from the source in this run, manifest included. */
  bytesFetched: number;
  /** The source's description. */
  source: string;
}

/**
 * Fault injection for tests, keyed by a symbol that the package entry does not export. A
 * `beforeWrite` that throws (e.g. an ENOSPC error) fails the write as the disk would.
 * @internal
 */
export const RELEASE_TEST_HOOKS: unique symbol = Symbol("stratum.release.testHooks");

/** @internal */
export interface ReleaseTestHooks {
  beforeWrite?(releasePath: string, position: number, length: number): void;
  /** How a file is written: with direct I/O, and hashed in the worker thread. */
  onWriter?(releasePath: string, how: { direct: boolean; hashInWorker: boolean }): void;
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);
const WRITE_BATCH = 4 * IO_CHUNK;
/** Batches per file: one filling while the others wait for or are in their write. */
const BATCHES = 3;
/** A batch with less room than a TLS record is cycled: a read into a sliver would be split. */
const MIN_SPACE = 16 * 1024;
/** A slow source still gets its bytes to disk this often, so a crash loses little. */
const WRITE_MAX_DELAY_MS = 250;

const PROBLEM_CAP = 64 * 1024;

/**
 * Downloads and verifies the release the cluster named (`upgrade.to`) into `destDir`: the
 * manifest first, verified with every rule of PROTOCOL.md section 5, then every file (a few
 * at once), each hashed as it streams and accepted only at its exact size and hash.
 * Resumes from `.partial` files; retries 503 `RELEASE_BUSY`, 429, 5xx and broken connections
 * with backoff and jitter, honouring `Retry-After`.
 *
 * Throws {@link ReleaseVerificationError} (the release is not the signed one),
 * {@link ReleaseDownloadError} (retries exhausted, a refusal, a source breaking the range rules,
 * an unsafe or full disk), {@link ReleaseArgumentError}, or the abort reason as is.
 */
export async function downloadRelease(options: DownloadReleaseOptions): Promise<DownloadedRelease> {
  const concurrency = options.concurrency ?? 3;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 32)
    throw new ReleaseArgumentError("concurrency is a whole number from 1 to 32");
  if (!options.upgrade || typeof options.upgrade.to !== "string" || options.upgrade.to === "") {
    throw new ReleaseArgumentError("upgrade.to names the release to download");
  }
  checkTrustOptions({
    trustedKeys: options.trustedKeys,
    threshold: options.threshold,
    expectRelease: options.upgrade.to,
  });
  throwIfAborted(options.signal);
  const { source, owned } = resolveSource(options);
  const destDir = resolve(options.destDir);
  const limits = resolveLimits(options.limits);
  const internal = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, internal.signal]) : internal.signal;
  const ctx: Context = {
    source,
    destDir,
    signal,
    retry: {
      attempts: options.retry?.attempts ?? 8,
      baseMs: options.retry?.baseMs ?? 500,
      maxMs: options.retry?.maxMs ?? 30_000,
      maxRetryAfterMs: options.retry?.maxRetryAfterMs ?? 300_000,
    },
    hooks: (options as unknown as Record<symbol, ReleaseTestHooks | undefined>)[RELEASE_TEST_HOOKS] ?? {},
    fetched: 0,
    progress: undefined,
  };
  try {
    await mkdir(destDir, { recursive: true }).catch((error: unknown) => {
      throw localError(error, undefined);
    });
    const envelope = await fetchManifest(ctx, limits.maxEnvelopeBytes);
    const verified = verifyReleaseManifest(envelope, {
      trustedKeys: options.trustedKeys,
      ...(options.threshold === undefined ? {} : { threshold: options.threshold }),
      expectRelease: options.upgrade.to,
      limits,
    });
    const files = verified.manifest.files;
    await retractManifest(destDir);
    const progress = new Progress(files, options.onProgress, () => ctx.fetched);
    ctx.progress = progress;

    const results: DownloadedReleaseFile[] = new Array(files.length);
    let failure: { error: unknown } | undefined;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (!failure && next < files.length) {
        const index = next++;
        try {
          results[index] = await downloadFile(ctx, files[index]!);
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
    if (options.signal?.aborted) throw abortReason(options.signal);
    if (failure) throw failure.error;

    // every directory a rename went into, and its ancestors, so new directories survive a crash
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
      return {
        release: verified.manifest.release,
        manifest: verified.manifest,
        signedBy: verified.signedBy,
        files: results,
        manifestPath,
        bytesFetched: ctx.fetched,
        source: source.describe(),
      };
    } catch (error) {
      throw localError(error, RELEASE_MANIFEST_PATH);
    }
  } finally {
    if (owned) await source.close?.().catch(() => {});
  }
}

/**
 * A manifest in the destination says "this release is complete here". Before any file is
 * touched it goes (durably), and it comes back only when every file has verified: an
 * interrupted run can never leave a directory that looks complete.
 */
async function retractManifest(destDir: string): Promise<void> {
  const at = join(destDir, ...RELEASE_MANIFEST_PATH.split("/"));
  const stat = await lstatOrUndefined(at, RELEASE_MANIFEST_PATH);
  if (!stat) return;
  if (stat.isDirectory()) {
    throw new ReleaseDownloadError("unsafe-staging", `${RELEASE_MANIFEST_PATH} in the destination is a directory`, {
      path: RELEASE_MANIFEST_PATH,
    });
  }
  try {
    await unlink(at);
    await fsyncDir(dirname(at));
  } catch (error) {
    throw localError(error, RELEASE_MANIFEST_PATH);
  }
}

interface Context {
  source: ReleaseSource;
  destDir: string;
  signal: AbortSignal;
  retry: Required<ReleaseRetryOptions>;
  hooks: ReleaseTestHooks;
  fetched: number;
  progress: Progress | undefined;
}

function resolveSource(options: DownloadReleaseOptions): { source: ReleaseSource; owned: boolean } {
  if (options.source) return { source: options.source, owned: false };
  if (options.upgrade.source) return { source: mirrorSource(options.upgrade.source, options.mirror), owned: true };
  if (options.upgrade.served) {
    throw new ReleaseArgumentError(
      "the founder serves this release: pass `source`, the pinned founder connection (dispatcherSource(client, '/v1/join/registrations/{joinId}/release'))",
    );
  }
  throw new ReleaseArgumentError("the upgrade names no release source and the founder does not serve it");
}

// ---------------------------------------------------------------------------------------------
// Retry bookkeeping shared by the manifest and the files.

class Attempts {
  failures = 0;
  requests = 0;
  private highWater: number;

  constructor(
    private readonly ctx: Context,
    private readonly path: string,
    start: number,
  ) {
    this.highWater = start;
  }

  /** A byte beyond any received before is progress: the failure count starts over. Terminates, since files are finite. */
  progressTo(offset: number): void {
    if (offset > this.highWater) {
      this.highWater = offset;
      this.failures = 0;
    }
  }

  /** Waits before the next attempt, or gives up with `exhausted`. */
  async failed(cause: unknown, retryAfterSeconds?: number, status?: number): Promise<void> {
    this.failures += 1;
    if (this.failures > this.ctx.retry.attempts) {
      throw new ReleaseDownloadError(
        "exhausted",
        `${this.path} from ${this.ctx.source.describe()}: gave up after ${this.failures} failed attempts in a row (${describeCause(cause, status)})`,
        { path: this.path, attempts: this.requests, ...(status === undefined ? {} : { status }), cause },
      );
    }
    const delay =
      retryAfterSeconds !== undefined
        ? retryDelay(this.failures - 1, retryAfterSeconds, { maxMs: this.ctx.retry.maxRetryAfterMs })
        : retryDelay(this.failures - 1, undefined, { baseMs: this.ctx.retry.baseMs, maxMs: this.ctx.retry.maxMs });
    await sleep(delay, this.ctx.signal);
  }
}

function describeCause(cause: unknown, status: number | undefined): string {
  if (status !== undefined) return `last answer HTTP ${status}${problemCodeSuffix(cause)}`;
  const code = errorCode(cause) ?? errorCode((cause as { cause?: unknown } | undefined)?.cause);
  return code ? `last error ${code}` : "last error a broken connection";
}

function problemCodeSuffix(cause: unknown): string {
  return cause instanceof StratumApiError && !cause.code.startsWith("HTTP_") ? ` ${cause.code}` : "";
}

/** Re-throws an abort as is, a certificate refusal as `tls`; anything else is a transient network failure. */
function classifyThrown(ctx: Context, error: unknown, path: string): NetworkError {
  if (ctx.signal.aborted) throw abortReason(ctx.signal);
  if (error instanceof ReleaseDownloadError || error instanceof ReleaseVerificationError) throw error;
  const code = errorCode(error) ?? "";
  if (/CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS_|ERR_SSL_|HOSTNAME|ALTNAME/.test(code)) {
    throw new ReleaseDownloadError(
      "tls",
      `${ctx.source.describe()} presented a certificate this joiner does not trust (${code})`,
      { path, cause: error },
    );
  }
  return new NetworkError(`fetching ${path} from ${ctx.source.describe()} failed (${code || "connection error"})`, {
    cause: error,
  });
}

/** Handles an answer that is neither 200, 206 nor 416: retry it (503, 429, 5xx) or refuse it. */
async function handleOtherStatus(
  ctx: Context,
  attempts: Attempts,
  response: ReleaseFetchResponse,
  path: string,
): Promise<void> {
  const problem = await readProblem(response, ctx.signal);
  const retryAfter = parseRetryAfter(header(response, "retry-after"));
  const apiError = new StratumApiError(response.status, problem, retryAfter);
  if (RETRYABLE_STATUS.has(response.status)) {
    await attempts.failed(apiError, retryAfter, response.status);
    return;
  }
  throw new ReleaseDownloadError(
    "refused",
    `${ctx.source.describe()} refused ${path}: HTTP ${response.status}${problemCodeSuffix(apiError)}`,
    {
      path,
      status: response.status,
      cause: apiError,
    },
  );
}

// ---------------------------------------------------------------------------------------------
// The manifest.

async function fetchManifest(ctx: Context, cap: number): Promise<Buffer> {
  const path = RELEASE_MANIFEST_PATH;
  const attempts = new Attempts(ctx, path, 0);
  for (;;) {
    throwIfAborted(ctx.signal);
    attempts.requests += 1;
    let response: ReleaseFetchResponse;
    try {
      response = await ctx.source.fetch(path, { signal: ctx.signal });
    } catch (error) {
      await attempts.failed(classifyThrown(ctx, error, path));
      continue;
    }
    if (response.status !== 200) {
      if (response.status === 206 || response.status === 416) {
        await discard(response.body);
        throw badResponse(ctx, path, `answered HTTP ${response.status} to a request without Range`, response.status);
      }
      await handleOtherStatus(ctx, attempts, response, path);
      continue;
    }
    await checkEncoding(ctx, response, path);
    const declared = contentLength(response);
    if (declared !== undefined && declared > cap) {
      await discard(response.body);
      throw new ReleaseVerificationError(
        "envelope-size",
        `the manifest envelope is ${declared} bytes, more than the ${cap} allowed`,
        { path },
      );
    }
    const chunks: Uint8Array[] = [];
    let received = 0;
    try {
      for await (const chunk of iterate(response.body)) {
        received += chunk.length;
        ctx.fetched += chunk.length;
        if (received > cap) {
          // the cap applies before anything parses the bytes: stop reading now
          throw new ReleaseVerificationError(
            "envelope-size",
            `the manifest envelope is more than the ${cap} bytes allowed`,
            { path },
          );
        }
        chunks.push(chunk);
      }
    } catch (error) {
      await attempts.failed(classifyThrown(ctx, error, path));
      continue;
    }
    if (declared !== undefined && received !== declared) {
      await attempts.failed(new NetworkError(`the manifest body ended after ${received} of ${declared} bytes`));
      continue;
    }
    return Buffer.concat(chunks);
  }
}

// ---------------------------------------------------------------------------------------------
// One file.

async function downloadFile(ctx: Context, file: ReleaseFile): Promise<DownloadedReleaseFile> {
  const segments = file.path.split("/");
  const finalPath = join(ctx.destDir, ...segments);
  const partialPath = finalPath + PARTIAL_SUFFIX;
  const track = ctx.progress!.track(file);
  await ensureRealDirs(ctx.destDir, segments.slice(0, -1).join("/"), file.path);

  // A file an earlier run put in place is trusted only after it hashes right; a wrong one goes.
  const existing = await lstatOrUndefined(finalPath, file.path);
  if (existing) {
    if (existing.isSymbolicLink() || !existing.isFile()) {
      throw new ReleaseDownloadError(
        "unsafe-staging",
        `${file.path} in the destination is ${existing.isSymbolicLink() ? "a symlink" : "not a regular file"}; refusing to replace it`,
        { path: file.path },
      );
    }
    if (existing.size === file.size) {
      const fh = await openOrThrow(finalPath, fsc.O_RDONLY | fsc.O_NOFOLLOW, file.path);
      const hash = createHash("sha256");
      try {
        track.state = "checking";
        await hashPrefix(fh, hash, file.size, ctx.signal, (n) => track.add(n));
      } catch (error) {
        throw localOrAbort(ctx, error, file.path);
      } finally {
        await fh.close().catch(() => {});
      }
      if (hash.digest("hex") === file.sha256) {
        track.verified();
        return { ...file, location: finalPath, bytesFetched: 0 };
      }
      track.reset();
    }
    await unlink(finalPath).catch((error: unknown) => {
      throw localError(error, file.path);
    });
  }

  const fh = await openPartial(partialPath, file.path);
  let closed = false;
  try {
    const result = await fillPartial(ctx, file, fh, track, partialPath);
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
    return { ...file, location: finalPath, bytesFetched: result.fetched };
  } finally {
    if (!closed) await fh.close().catch(() => {});
  }
}

/** Brings the `.partial` to the file's exact size and hash, or throws; no write is left running. */
async function fillPartial(
  ctx: Context,
  file: ReleaseFile,
  fh: FileHandle,
  track: FileTrack,
  partialPath: string,
): Promise<{ fetched: number }> {
  const writer = await Writer.open(fh, file.path, ctx.hooks);
  try {
    return await fillWith(ctx, file, fh, track, partialPath, writer);
  } finally {
    await writer.settle();
    await writer.close();
  }
}

async function fillWith(
  ctx: Context,
  file: ReleaseFile,
  fh: FileHandle,
  track: FileTrack,
  partialPath: string,
  writer: Writer,
): Promise<{ fetched: number }> {
  const path = file.path;
  let offset = 0;
  /** How many answers (or a prefix from before) the bytes came from: a splice is only suspect when > 1. */
  let pieces = 0;
  let fetched = 0;
  /** A strong ETag of the answer the bytes in hand came from; sent as If-Range. */
  let etag: string | undefined;
  let restartedOnMismatch = false;

  try {
    let size = (await fh.stat()).size;
    if (size > file.size) {
      await fh.truncate(0);
      size = 0;
    }
    if (size > 0) track.state = "checking";
    offset = await writer.start(size, ctx.signal, (n) => track.add(n));
    if (offset > 0) pieces = 1;
  } catch (error) {
    throw localOrAbort(ctx, error, path);
  }

  const restart = async (): Promise<void> => {
    await flushOrThrow(writer, path);
    try {
      await fh.truncate(0);
    } catch (error) {
      throw localError(error, path);
    }
    offset = 0;
    await writer.start(0);
    pieces = 0;
    etag = undefined;
    track.reset();
  };

  const attempts = new Attempts(ctx, path, offset);
  for (;;) {
    while (offset < file.size) {
      throwIfAborted(ctx.signal);
      attempts.requests += 1;
      let response: ReleaseFetchResponse;
      try {
        response = await ctx.source.fetch(path, {
          ...(offset > 0 ? { range: { start: offset } } : {}),
          ...(offset > 0 && etag ? { ifRange: etag } : {}),
          signal: ctx.signal,
        });
      } catch (error) {
        await attempts.failed(classifyThrown(ctx, error, path));
        continue;
      }

      let end: number; // exclusive end of the bytes this answer carries
      if (response.status === 200) {
        await checkEncoding(ctx, response, path);
        const length = contentLength(response);
        if (length !== undefined && length !== file.size) {
          await discard(response.body);
          throw badResponse(
            ctx,
            path,
            `sent Content-Length ${length} for a file the manifest says is ${file.size} bytes`,
            200,
          );
        }
        if (offset > 0) await restart(); // Range ignored or the file changed (If-Range): take it whole
        end = file.size;
      } else if (response.status === 206) {
        await checkEncoding(ctx, response, path);
        const range = parseContentRange(header(response, "content-range"));
        if (offset === 0) {
          await discard(response.body);
          throw badResponse(ctx, path, "answered 206 to a request without Range", 206);
        }
        if (
          !range ||
          range.start !== offset ||
          range.total !== file.size ||
          range.end < range.start ||
          range.end >= range.total
        ) {
          await discard(response.body);
          throw badResponse(
            ctx,
            path,
            `answered Content-Range ${JSON.stringify(header(response, "content-range") ?? "")} to Range bytes=${offset}- of a ${file.size}-byte file`,
            206,
          );
        }
        const length = contentLength(response);
        if (length !== undefined && length !== range.end + 1 - range.start) {
          await discard(response.body);
          throw badResponse(
            ctx,
            path,
            `sent Content-Length ${length} with Content-Range ${range.start}-${range.end}`,
            206,
          );
        }
        const tag = strongEtag(response);
        if (etag !== undefined && tag !== etag) {
          // a source that ignores If-Range: the tail is of another version than the bytes in hand
          await discard(response.body);
          await restart();
          await attempts.failed(new NetworkError(`${path} changed on the source during the download`));
          continue;
        }
        end = range.end + 1;
      } else if (response.status === 416) {
        const total = parseUnsatisfiedRange(header(response, "content-range"));
        await discard(response.body);
        if (total !== undefined && total !== file.size) {
          throw badResponse(ctx, path, `says the file is ${total} bytes; the manifest says ${file.size}`, 416);
        }
        // the source denies a range inside a file of the right size: start over from zero
        await restart();
        await attempts.failed(
          new NetworkError(`${path}: the source answered 416 to bytes=${offset}- of ${file.size}`),
          undefined,
          416,
        );
        continue;
      } else {
        await handleOtherStatus(ctx, attempts, response, path);
        continue;
      }

      const tag = strongEtag(response);
      if (tag !== undefined) etag = tag;
      pieces += 1;
      track.state = "downloading";
      let broken: unknown;
      const status = response.status;
      // every byte of the body passes here, in place in the Writer's batch, before it is hashed
      const sink: BodySink = {
        space: () => writer.space(),
        filled: (n) => {
          if (offset + n > end) {
            if (end === file.size) {
              throw new ReleaseVerificationError(
                "size",
                `${path}: the source sent more than the ${file.size} bytes the manifest declares`,
                { path },
              );
            }
            throw badResponse(ctx, path, `sent more than its Content-Range ${end - 1} end`, status);
          }
          offset += n;
          fetched += n;
          ctx.fetched += n;
          track.add(n);
          return writer.filled(n);
        },
      };
      try {
        if (isDirectBody(response.body)) await response.body.readInto(sink);
        else await consumeBody(response.body, (chunk) => copyInto(sink, chunk));
      } catch (error) {
        if (error instanceof ReleaseVerificationError) {
          await writer.settle();
          await fh.truncate(0).catch(() => {});
          await unlink(partialPath).catch(() => {});
          throw error;
        }
        if (isWriteError(error)) {
          await writer.settle();
          throw localError(error.cause, path);
        }
        if (error instanceof ReleaseDownloadError || ctx.signal.aborted) {
          // what arrived is good: keep it for the next run
          await writer.flush().catch(() => {});
          throw error instanceof ReleaseDownloadError ? error : abortReason(ctx.signal);
        }
        broken = error;
      }
      // bytes hashed must be bytes on disk before the next request asks for what follows
      await flushOrThrow(writer, path);
      attempts.progressTo(offset);
      if (broken !== undefined) {
        await attempts.failed(classifyThrown(ctx, broken, path));
      } else if (offset < end) {
        await attempts.failed(new NetworkError(`${path}: the answer ended after ${offset} of ${end} bytes`));
      }
    }

    await flushOrThrow(writer, path);
    if ((await writer.digest()) === file.sha256) return { fetched };
    if (pieces > 1 && !restartedOnMismatch) {
      // spliced from several answers (or a prefix of unknown origin): one clean start before judging
      restartedOnMismatch = true;
      await restart();
      continue;
    }
    await fh.truncate(0).catch(() => {});
    await unlink(partialPath).catch(() => {});
    throw new ReleaseVerificationError("hash", `${path} does not have the SHA-256 the manifest gives`, { path });
  }
}

async function openPartial(partialPath: string, path: string): Promise<FileHandle> {
  const stat = await lstatOrUndefined(partialPath, path);
  if (stat && (stat.isSymbolicLink() || !stat.isFile())) {
    throw new ReleaseDownloadError(
      "unsafe-staging",
      `${path}${PARTIAL_SUFFIX} in the destination is ${stat.isSymbolicLink() ? "a symlink" : "not a regular file"}; refusing to write through it`,
      { path },
    );
  }
  const fh = await openOrThrow(partialPath, fsc.O_RDWR | fsc.O_CREAT | fsc.O_NOFOLLOW | fsc.O_NONBLOCK, path);
  const opened = await fh.stat();
  if (!opened.isFile() || opened.nlink !== 1) {
    await fh.close().catch(() => {});
    // a hard link would make the download overwrite another file
    throw new ReleaseDownloadError(
      "unsafe-staging",
      `${path}${PARTIAL_SUFFIX} in the destination is ${opened.isFile() ? "a hard link" : "not a regular file"}; refusing to write through it`,
      { path },
    );
  }
  return fh;
}

async function openOrThrow(at: string, flags: number, path: string): Promise<FileHandle> {
  try {
    return await open(at, flags, 0o644);
  } catch (error) {
    if (errorCode(error) === "ELOOP") {
      throw new ReleaseDownloadError(
        "unsafe-staging",
        `${path} in the destination is a symlink; refusing to follow it`,
        { path, cause: error },
      );
    }
    throw localError(error, path);
  }
}

async function lstatOrUndefined(at: string, path: string) {
  try {
    return await lstat(at);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw localError(error, path);
  }
}

function localOrAbort(ctx: Context, error: unknown, path: string): unknown {
  if (ctx.signal.aborted) return abortReason(ctx.signal);
  return localError(error, path);
}

// ---------------------------------------------------------------------------------------------
// Writing and hashing. (A background fdatasync every 128 MiB was tried, to start writeback
// early: on the benchmark machine it cost more system time than it saved.)

class WriteError extends Error {
  constructor(override readonly cause: unknown) {
    super("write failed");
  }
}

function isWriteError(error: unknown): error is WriteError {
  return error instanceof WriteError;
}

async function flushOrThrow(writer: Writer, path: string): Promise<void> {
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
class Writer implements BodySink {
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

/** Copies a chunk of a body that is not read in place into `sink`; a promise when the rest must wait. */
function copyInto(sink: BodySink, chunk: Uint8Array): Promise<void> | undefined {
  let offset = 0;
  while (offset < chunk.length) {
    const space = sink.space();
    const n = Math.min(space.length, chunk.length - offset);
    space.set(chunk.subarray(offset, offset + n));
    offset += n;
    const wait = sink.filled(n);
    if (wait) {
      const rest = chunk.subarray(offset);
      return rest.length === 0 ? wait : wait.then(() => copyInto(sink, rest));
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Answers.

function header(response: ReleaseFetchResponse, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

function contentLength(response: ReleaseFetchResponse): number | undefined {
  const value = header(response, "content-length");
  if (value === undefined) return undefined;
  return /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
}

function strongEtag(response: ReleaseFetchResponse): string | undefined {
  const value = header(response, "etag")?.trim();
  return value && /^"[^"]*"$/.test(value) ? value : undefined;
}

function parseContentRange(value: string | undefined): { start: number; end: number; total: number } | undefined {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value?.trim() ?? "");
  if (!match) return undefined;
  return { start: Number(match[1]), end: Number(match[2]), total: Number(match[3]) };
}

function parseUnsatisfiedRange(value: string | undefined): number | undefined {
  const match = /^bytes \*\/(\d+)$/.exec(value?.trim() ?? "");
  return match ? Number(match[1]) : undefined;
}

async function checkEncoding(ctx: Context, response: ReleaseFetchResponse, path: string): Promise<void> {
  const encoding = header(response, "content-encoding")?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    await discard(response.body);
    throw badResponse(ctx, path, `sent Content-Encoding ${encoding}; only identity was accepted`, response.status);
  }
}

function badResponse(ctx: Context, path: string, what: string, status: number): ReleaseDownloadError {
  return new ReleaseDownloadError("bad-response", `${ctx.source.describe()} ${what} (${path})`, { path, status });
}

/** What {@link consumeBody} needs of a Node Readable (undici's body is one). */
interface NodeReadableLike {
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  pause(): unknown;
  resume(): unknown;
  destroy(error?: Error): unknown;
  readableEnded?: boolean;
}

function isNodeReadable(body: unknown): body is NodeReadableLike {
  const b = body as Partial<NodeReadableLike> | null;
  return (
    typeof b?.on === "function" &&
    typeof b.pause === "function" &&
    typeof b.resume === "function" &&
    typeof b.destroy === "function"
  );
}

/**
 * Feeds every chunk of a body to `onChunk`, waiting whenever it returns a promise, and stops
 * (cancelling the body) when it throws. A Node Readable is read in flowing mode with pause and
 * resume: no promise per chunk and no concatenation of buffered chunks, the hot path of a
 * large download. Anything else is iterated.
 */
async function consumeBody(
  body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => Promise<void> | undefined,
): Promise<void> {
  if (!isNodeReadable(body)) {
    for await (const chunk of Symbol.asyncIterator in body ? (body as AsyncIterable<Uint8Array>) : iterate(body)) {
      const wait = onChunk(chunk);
      if (wait) await wait;
    }
    return;
  }
  const stream = body;
  await new Promise<void>((resolve, reject) => {
    let pending: Promise<void> | undefined;
    let ended = false;
    let settled = false;
    const cleanup = () => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.off("close", onClose);
    };
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      // undici's body errors with "Request aborted" when destroyed: nobody is listening any more
      stream.on("error", ignore);
      stream.destroy();
      reject(error);
    };
    const finish = () => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve();
    };
    const onData = (chunk: Uint8Array) => {
      if (settled) return;
      let wait: Promise<void> | undefined;
      try {
        wait = onChunk(chunk);
      } catch (error) {
        fail(error);
        return;
      }
      if (wait) {
        stream.pause();
        pending = wait;
        wait.then(() => {
          pending = undefined;
          if (ended) finish();
          else if (!settled) stream.resume();
        }, fail);
      }
    };
    const onEnd = () => {
      ended = true;
      if (!pending) finish();
    };
    const onError = (error: unknown) => fail(error);
    const onClose = () => {
      // destroyed without an error and without an end: the body was cut
      if (!ended)
        fail(Object.assign(new Error("the response body was closed before its end"), { code: "UND_ERR_SOCKET" }));
    };
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.on("close", onClose);
  });
}

function ignore(): void {}

async function* iterate(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (Symbol.asyncIterator in body) {
    yield* body as AsyncIterable<Uint8Array>;
    return;
  }
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Stops a body without reading it, so its connection is released. */
async function discard(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): Promise<void> {
  try {
    if (isNodeReadable(body)) {
      // a destroyed undici body emits "Request aborted": expected here, not an uncaught error
      body.on("error", ignore);
      body.destroy();
    } else if (typeof (body as { destroy?: unknown }).destroy === "function") {
      (body as unknown as { destroy(): void }).destroy();
    } else if (Symbol.asyncIterator in body) {
      await (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]().return?.();
    } else {
      await (body as ReadableStream<Uint8Array>).cancel();
    }
  } catch {
    // the body is going away either way
  }
}

async function readProblem(response: ReleaseFetchResponse, signal: AbortSignal): Promise<ProblemBody> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of iterate(response.body)) {
      chunks.push(chunk);
      size += chunk.length;
      if (size > PROBLEM_CAP) break;
    }
  } catch {
    if (signal.aborted) throw abortReason(signal);
    return {};
  }
  const type = header(response, "content-type") ?? "";
  if (!/json/i.test(type) || size > PROBLEM_CAP) return {};
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as ProblemBody) : {};
  } catch {
    return {};
  }
}

// ---------------------------------------------------------------------------------------------
// Progress.

interface FileTrack {
  state: ReleaseProgress["file"]["state"];
  add(n: number): void;
  reset(): void;
  verified(): void;
}

class Progress {
  private bytesDone = 0;
  private filesDone = 0;
  private readonly bytesTotal: number;
  private last = 0;
  private readonly samples: Array<[number, number]> = [];

  constructor(
    private readonly files: readonly ReleaseFile[],
    private readonly onProgress: ((p: ReleaseProgress) => void) | undefined,
    private readonly fetched: () => number,
  ) {
    this.bytesTotal = files.reduce((sum, f) => sum + f.size, 0);
  }

  track(file: ReleaseFile): FileTrack {
    const state = {
      path: file.path,
      bytesDone: 0,
      size: file.size,
      state: "downloading" as ReleaseProgress["file"]["state"],
    };
    const self = this;
    return {
      get state() {
        return state.state;
      },
      set state(value) {
        state.state = value;
      },
      add(n) {
        state.bytesDone += n;
        self.bytesDone += n;
        self.emit(state, false);
      },
      reset() {
        self.bytesDone -= state.bytesDone;
        state.bytesDone = 0;
      },
      verified() {
        self.bytesDone += file.size - state.bytesDone;
        state.bytesDone = file.size;
        state.state = "verified";
        self.filesDone += 1;
        self.emit(state, true);
      },
    };
  }

  private emit(file: ReleaseProgress["file"], force: boolean): void {
    if (!this.onProgress) return;
    const now = performance.now();
    if (!force && now - this.last < 100) return;
    this.last = now;
    const fetched = this.fetched();
    this.samples.push([now, fetched]);
    while (this.samples.length > 2 && now - this.samples[1]![0] >= 2000) this.samples.shift();
    const [t0, f0] = this.samples[0]!;
    const rate = now - t0 > 0 ? ((fetched - f0) * 1000) / (now - t0) : 0;
    try {
      this.onProgress({
        file: { ...file },
        bytesDone: this.bytesDone,
        bytesTotal: this.bytesTotal,
        filesDone: this.filesDone,
        filesTotal: this.files.length,
        bytesFetched: fetched,
        bytesPerSecond: Math.round(rate),
      });
    } catch {
      // a progress callback cannot break a download
    }
  }
}
