/**
 * The rules a manifest's file list obeys (docs/protocol.md#release-files, rules 6 and 7: paths, then
 * sizes) and the bounds behind them. The verifier applies them to what it receives; the tooling
 * applies the same to what it signs, so it never signs what a joiner would refuse.
 * @module
 */
import { ReleaseVerificationError } from "../errors/index.js";
import type { ReleaseFile } from "./manifest-types.js";

/** Where the signed manifest lives in a release directory (and on a mirror). */
export const RELEASE_MANIFEST_PATH = "payload/manifest.json";

/** The directories a release file may live in. */
export const RELEASE_FILE_ROOTS = ["os/blobs/", "sysext/"] as const;

/** The suffix the downloader stages files under; reserved, so no release file can collide with another's staging file. */
export const PARTIAL_SUFFIX = ".partial";

/** Bounds a manifest must stay within. "Sizes bounded": a release cannot ask a joiner for unbounded disk, memory or time. */
export interface ReleaseLimits {
  /** Largest envelope (payload/manifest.json) in bytes. Default 4 MiB. */
  maxEnvelopeBytes?: number | undefined;
  /** Most signatures an envelope may carry. Default 16. */
  maxSignatures?: number | undefined;
  /** Most files a manifest may list. Default 10 000. */
  maxFiles?: number | undefined;
  /** Largest single file in bytes. Default 64 GiB. */
  maxFileSize?: number | undefined;
  /** Largest sum of all file sizes in bytes. Default 256 GiB. */
  maxTotalSize?: number | undefined;
}

/** The limits used when a caller names none. */
export const DEFAULT_RELEASE_LIMITS: Readonly<Required<ReleaseLimits>> = Object.freeze({
  // a manifest of maxFiles entries (~200 bytes each, base64'd in the envelope) fits with room
  maxEnvelopeBytes: 4 * 1024 * 1024,
  // far above any real threshold of release keys; bounds the signature checks an envelope costs
  maxSignatures: 16,
  // an OS release is tens of blobs and sysexts; bounds the requests and fsyncs one can ask for
  maxFiles: 10_000,
  // larger than any OS image; the bound a single file may ask of the disk
  maxFileSize: 64 * 1024 ** 3,
  // what a whole release may ask of the joiner's disk
  maxTotalSize: 256 * 1024 ** 3,
});

/**
 * Why a release path is not acceptable, or undefined if it is: relative POSIX, inside
 * `os/blobs/` or `sysext/`, no empty, `.` or `..` segment, no backslash, NUL or control
 * character, not ending in `.partial`, bounded length.
 */
export function releasePathProblem(path: string): string | undefined {
  if (typeof path !== "string" || path.length === 0) return "an empty path";
  // well inside PATH_MAX (4096) once joined to any destination directory
  if (Buffer.byteLength(path, "utf8") > 1024) return "a path longer than 1024 bytes";
  if (path.includes("\0")) return "a NUL byte";
  if (path.includes("\\")) return "a backslash (paths are POSIX)";
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (/[\u0000-\u001f\u007f]/.test(path)) return "a control character";
  if (path.startsWith("/")) return "an absolute path";
  const segments = path.split("/");
  for (const segment of segments) {
    if (segment === "") return "an empty path segment";
    if (segment === "..") return "a .. segment";
    if (segment === ".") return "a . segment";
    // NAME_MAX of the usual file systems: a longer name could be written on no joiner
    if (Buffer.byteLength(segment, "utf8") > 255) return "a path segment longer than 255 bytes";
  }
  if (!RELEASE_FILE_ROOTS.some((root) => path.startsWith(root) && path.length > root.length)) {
    return "a path outside os/blobs/ and sysext/";
  }
  if (path.endsWith(PARTIAL_SUFFIX)) return `a path ending in ${PARTIAL_SUFFIX} (reserved for staging)`;
  return undefined;
}

/** Rules 6 and 7 on a parsed file list: paths, then sizes. Exported for the tooling, which refuses to sign what would not verify. */
export function checkManifestFiles(
  files: readonly ReleaseFile[],
  limits: Required<ReleaseLimits> = DEFAULT_RELEASE_LIMITS,
): void {
  const seen = new Set<string>();
  for (const file of files) {
    const problem = releasePathProblem(file.path);
    if (problem)
      throw new ReleaseVerificationError("path", `manifest path ${JSON.stringify(file.path)}: ${problem}`, {
        path: file.path,
      });
    if (seen.has(file.path))
      throw new ReleaseVerificationError("path", `manifest path ${JSON.stringify(file.path)} is listed twice`, {
        path: file.path,
      });
    seen.add(file.path);
  }
  // a file that is also another file's directory can never be written
  for (const path of seen) {
    const segments = path.split("/");
    for (let i = 1; i < segments.length; i++) {
      const parent = segments.slice(0, i).join("/");
      if (seen.has(parent)) {
        throw new ReleaseVerificationError(
          "path",
          `manifest path ${JSON.stringify(parent)} is both a file and a directory`,
          { path: parent },
        );
      }
    }
  }
  if (files.length > limits.maxFiles) {
    throw new ReleaseVerificationError(
      "size",
      `the manifest lists ${files.length} files, more than the ${limits.maxFiles} allowed`,
    );
  }
  let total = 0;
  for (const file of files) {
    if (!Number.isSafeInteger(file.size) || file.size > limits.maxFileSize) {
      throw new ReleaseVerificationError(
        "size",
        `${file.path} declares ${file.size} bytes, more than the ${limits.maxFileSize} allowed`,
        { path: file.path },
      );
    }
    total += file.size;
  }
  if (total > limits.maxTotalSize) {
    throw new ReleaseVerificationError(
      "size",
      `the release declares ${total} bytes in all, more than the ${limits.maxTotalSize} allowed`,
    );
  }
}

/** Fills in the default limits. */
export function resolveLimits(limits: ReleaseLimits | undefined): Required<ReleaseLimits> {
  return {
    ...DEFAULT_RELEASE_LIMITS,
    ...Object.fromEntries(Object.entries(limits ?? {}).filter(([, v]) => v !== undefined)),
  };
}
