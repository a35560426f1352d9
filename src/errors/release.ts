/**
 * The errors of the release verifier and downloader. Two families a caller branches on:
 * {@link ReleaseVerificationError} (the release is not the one the trusted keys signed: never
 * retry it as is) and {@link ReleaseDownloadError} (the transport or the disk failed: the
 * `.partial` files stay, a later run resumes).
 * @module
 */
import { StratumError } from "./stratum-error.js";

/**
 * Which rule of docs/protocol.md#release-verification a release failed, in the order they are checked:
 * `envelope-size` (the envelope is larger than the cap), `envelope-parse` (not a DSSE
 * envelope), `signature-threshold` (fewer than `threshold` distinct trusted keys signed),
 * `payload-type`, `payload-parse` (the payload is not a strict v1 manifest), `release` (another
 * release than the one expected: rollback, mix-and-match), `path` (a path outside `os/blobs/`
 * and `sysext/`, not relative POSIX, `..`, a duplicate), `size` (a declared size out of bounds,
 * or a body longer than declared) and, per downloaded file, `hash`.
 */
export type ReleaseVerificationRule =
  | "envelope-size"
  | "envelope-parse"
  | "signature-threshold"
  | "payload-type"
  | "payload-parse"
  | "release"
  | "path"
  | "size"
  | "hash";

/**
 * The release (its manifest, or one of its files) failed a verification rule. Code
 * `RELEASE_UNVERIFIED`; `rule` says which. Nothing failing it is ever left where a verified
 * file belongs.
 */
export class ReleaseVerificationError extends StratumError {
  /** Always `RELEASE_UNVERIFIED`. */
  declare readonly code: "RELEASE_UNVERIFIED";
  /** The rule that failed. */
  readonly rule: ReleaseVerificationRule;
  /** The release path of the file concerned, when the rule is about one file. */
  readonly path: string | undefined;

  constructor(rule: ReleaseVerificationRule, message: string, options: { path?: string; cause?: unknown } = {}) {
    super("RELEASE_UNVERIFIED", message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ReleaseVerificationError";
    this.rule = rule;
    this.path = options.path;
  }
}

/**
 * Why a download failed without a verification failure:
 * - `exhausted`: retries ran out (503 `RELEASE_BUSY`, 429, 5xx, broken or truncated
 *   connections); `cause` is the last failure.
 * - `refused`: the source answered a status that retrying cannot fix (403, 404, 409…);
 *   `status` says which, and `cause` is the `StratumApiError` when the body was a problem.
 * - `bad-response`: the source broke the range rules (a 206 not starting at the offset asked
 *   for or with another total, a Content-Length that disagrees, a Content-Encoding other than
 *   identity, a 416 naming another size).
 * - `tls`: the source's certificate was refused; not retried.
 * - `proxy`: the HTTP proxy on the way to the mirror refused the tunnel (`status` is its
 *   answer: 407 credentials refused or missing, 403 a policy; not retried) or kept failing it
 *   (5xx, unreachable, reset: retried first, as any broken connection).
 * - `unsafe-staging`: a symlink, hard link or non-regular file where the downloader writes;
 *   nothing is followed or deleted.
 * - `disk-full`: ENOSPC/EDQUOT while writing; the `.partial` keeps what was written.
 * - `local-io`: any other local file error.
 */
export type ReleaseDownloadFailure =
  "exhausted" | "refused" | "bad-response" | "tls" | "proxy" | "unsafe-staging" | "disk-full" | "local-io";

/**
 * A download failed for a reason other than verification. Code `RELEASE_DOWNLOAD_FAILED`;
 * `reason` says why. The `.partial` files stay (they are re-hashed before a later run
 * resumes from them), so retrying the whole download later costs only the missing bytes.
 */
export class ReleaseDownloadError extends StratumError {
  /** Always `RELEASE_DOWNLOAD_FAILED`. */
  declare readonly code: "RELEASE_DOWNLOAD_FAILED";
  /** Why it failed. */
  readonly reason: ReleaseDownloadFailure;
  /** The release path of the file concerned, if any (`payload/manifest.json` for the manifest). */
  readonly path: string | undefined;
  /** The HTTP status of the answer concerned, if any. */
  readonly status: number | undefined;
  /** How many requests were made for this file before giving up, for `exhausted`. */
  readonly attempts: number | undefined;

  constructor(
    reason: ReleaseDownloadFailure,
    message: string,
    extra: { path?: string; status?: number; attempts?: number; cause?: unknown } = {},
  ) {
    super("RELEASE_DOWNLOAD_FAILED", message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "ReleaseDownloadError";
    this.reason = reason;
    this.path = extra.path;
    this.status = extra.status;
    this.attempts = extra.attempts;
  }
}

/** A caller passed options that can never work (no trusted key, a threshold above the key count, a plain-HTTP mirror). Code `INVALID_ARGUMENT`. */
export class ReleaseArgumentError extends StratumError {
  /** Always `INVALID_ARGUMENT`. */
  declare readonly code: "INVALID_ARGUMENT";

  constructor(message: string) {
    super("INVALID_ARGUMENT", message);
    this.name = "ReleaseArgumentError";
  }
}
