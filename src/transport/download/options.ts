/**
 * What a caller gives the downloader and gets back, and the defaults behind what it leaves out.
 * @module
 */
import type { Upgrade } from "../../types.js";
import type { ReleasePublicKeyInput } from "../../release/keys.js";
import type { ReleaseLimits } from "../../release/manifest-rules.js";
import type { ReleaseFile, ReleaseManifest } from "../../release/manifest-types.js";
import type { MirrorSourceOptions, ReleaseSource } from "../sources.js";
import type { ReleaseProgress } from "./progress.js";
import type { ReleaseMinSpeed } from "./speed.js";

/**
 * How failed requests are retried. Counted per file, as consecutive failures that brought no
 * new byte (or only bytes slower than the minimum rate).
 */
export interface ReleaseRetryOptions {
  /** Failures in a row without progress before a file gives up. Default 8. */
  attempts?: number | undefined;
  /** First backoff ceiling, ms (full jitter). Default 500. */
  baseMs?: number | undefined;
  /** Largest backoff, ms. Default 30 000. */
  maxMs?: number | undefined;
  /** Largest wait a `Retry-After` may impose, ms. Default 300 000. */
  maxRetryAfterMs?: number | undefined;
}

/** Options of `downloadRelease`. */
export interface DownloadReleaseOptions {
  /**
   * The registration's `upgrade`: `to` is the release to expect; `source` a mirror URL;
   * `served` when the founder serves it. `from` is not needed to download.
   */
  upgrade: Pick<Upgrade, "to" | "source" | "served"> & {
    /** The release the joiner runs (informational; the manifest must name `to`). */
    from?: string | undefined;
  };
  /**
   * Where to fetch from, instead of a mirror made from `upgrade.source`. Required when the
   * founder serves the release (`upgrade.served`): a source on the pinned founder connection
   * (the joiner's `downloadRelease` of `@stratum/join/node` makes it from the join session).
   */
  source?: ReleaseSource | undefined;
  /** Options of the mirror made from `upgrade.source` (e.g. `ca`). */
  mirror?: MirrorSourceOptions | undefined;
  /**
   * The directory to build the release in, created if missing. Files land at their release
   * paths, staged as `<path>.partial`; `payload/manifest.json` is written last, so its presence
   * means complete. Files the manifest does not list are left alone.
   */
  destDir: string;
  /** The release keys this joiner trusts (its OS trust store): PEM, raw 32 bytes or KeyObject. */
  trustedKeys: readonly ReleasePublicKeyInput[];
  /** Distinct trusted keys that must have signed. Default 1. */
  threshold?: number | undefined;
  /**
   * Release files fetched at once, 1 to 32. Default 3 (the founder serves a few files at once
   * per registration: the reference server's `STRATUM_RELEASE_FILES_AT_ONCE`).
   */
  filesAtOnce?: number | undefined;
  /**
   * The former name of {@link DownloadReleaseOptions.filesAtOnce}, still read when that is
   * not given; refused when both are given and differ.
   * @deprecated Use `filesAtOnce`.
   */
  concurrency?: number | undefined;
  /**
   * Connections one large file is fetched on at once, 1 to 8, each asking for a closed range
   * of it (16 MiB segments, hashed in file order), as aria2c's `-x`: for a far mirror, where
   * one TCP stream is held back by the round trip, not by the CPU. Used for the rest of a file
   * of at least two segments, one file at a time, once an answer of it carried a strong ETag
   * (sent as `If-Range` with every range). Default 1: on a near mirror the download is bound by
   * the CPU at both ends, which more connections only share, while each adds 16 MiB of memory
   * (see docs/measurements.md).
   */
  connections?: number | undefined;
  /** Aborts everything; the abort is re-thrown as is, the `.partial` files stay for a later run. */
  signal?: AbortSignal | undefined;
  /** Called with progress reports. Must not throw. */
  onProgress?: ((progress: ReleaseProgress) => void) | undefined;
  /** Retry tuning. */
  retry?: ReleaseRetryOptions | undefined;
  /** Manifest bounds; defaults in `DEFAULT_RELEASE_LIMITS`. */
  limits?: ReleaseLimits | undefined;
  /**
   * The slowest a response body may arrive (as curl's `--speed-limit`/`--speed-time`): a body
   * averaging less than `bytesPerSecond` over a window of `windowMs` (time spent waiting on
   * the local disk not counted) is cut, and the request retried; bytes that came that slowly
   * do not count as progress, so a source that only trickles runs out of retries (`exhausted`).
   * Default 1 KiB/s over 30 s, which no healthy link falls below; `{ bytesPerSecond: 0 }`
   * turns the rule off, leaving the sources' inactivity timers alone.
   */
  minSpeed?: ReleaseMinSpeed | undefined;
}

/** A file of the release, verified and in place. */
export interface DownloadedReleaseFile extends ReleaseFile {
  /** Its absolute path on disk. */
  location: string;
  /** Bytes fetched for it in this run (0 when an earlier run had finished it). */
  bytesFetched: number;
}

/** What `downloadRelease` returns: a verified release on disk. */
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
  /** The segment size of a file on several connections (default {@link SEGMENT_BYTES}). */
  segmentBytes?: number | undefined;
}

/**
 * The segment of a file on several connections: each waits for its turn in a buffer of this
 * size, so the memory is `connections` × 16 MiB for the one file fetched so, whatever its size;
 * and at 16 MiB a new connection (TCP and TLS) costs a few milliseconds per segment, against
 * the 20 ms or more the segment takes to arrive even on loopback.
 */
export const SEGMENT_BYTES = 16 * 1024 * 1024;

/** Connections per large file by default: one (see {@link DownloadReleaseOptions.connections}). */
export const DEFAULT_CONNECTIONS = 1;

/** Most connections per file: a mirror serves many joiners; more only split the same link. */
export const MAX_CONNECTIONS = 8;

/**
 * Files fetched at once by default. The founder serves a few files at once per registration
 * (503 `RELEASE_BUSY` past that), and on one link three streams already fill it.
 */
export const DEFAULT_CONCURRENCY = 3;

/**
 * Most files fetched at once. Each file in flight holds its write batches (12 MiB) and a
 * connection; past a few dozen, more connections only split the same bandwidth while memory
 * and the source's load keep growing.
 */
export const MAX_CONCURRENCY = 32;

/** The retry defaults, each a decision: see {@link ReleaseRetryOptions}. */
export const DEFAULT_RETRY: Readonly<Required<ReleaseRetryOptions>> = Object.freeze({
  // with the backoff below, eight failures in a row span a minute or two: a mirror restart or
  // a network blip passes, a source that is really gone is given up on within minutes
  attempts: 8,
  // a reset or a busy answer is often momentary: the first retry comes within half a second
  baseMs: 500,
  // without a Retry-After, never more than half a minute between attempts
  maxMs: 30_000,
  // a source may ask for a pause (an upgrade in progress, RELEASE_BUSY), not hold a joiner for long
  maxRetryAfterMs: 300_000,
});
