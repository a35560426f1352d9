/**
 * A full disk is not a bug of the server: it is a state the operator fixes, after which the
 * founder carries on by itself. Every write the founder makes (a SQLite transaction, a durable
 * file such as a rotated CA's key) fails with `SQLITE_FULL` or the file system's `ENOSPC` /
 * `EDQUOT` while the disk is full; each change is one transaction or is written before it is
 * committed, so nothing half-done is left behind, and the next write after space is back
 * simply succeeds (no restart: the database connection stays usable, storage-faults.test.ts
 * fills a real tmpfs to hold that).
 *
 * Such a failure is answered 503 `STORAGE_UNAVAILABLE` with `Retry-After` instead of 500
 * `INTERNAL`, so the SDK's watchers and the CLI (exit 8, "retry later") wait and try again
 * rather than give up.
 * @module
 */

import { HttpProblem } from "./http-problem.js";

/**
 * What `Retry-After` tells a caller while the disk is full: space comes back at an operator's
 * pace, so half a minute keeps a waiting fleet from hammering a struggling founder while still
 * noticing soon after the disk is freed.
 */
export const STORAGE_RETRY_SECONDS = 30;

/** SQLite's result codes for "the database or disk is full" (libsql names them in `code`). */
const SQLITE_FULL_CODES = new Set(["SQLITE_FULL"]);

/** The file system's: no space left, or the owner's quota is used up. */
const FS_FULL_CODES = new Set(["ENOSPC", "EDQUOT"]);

/** True when `error` (or an error it wraps) says the disk or the database is full. */
export function isStorageFull(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== null && typeof e === "object" && depth < 8; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (SQLITE_FULL_CODES.has(code) || FS_FULL_CODES.has(code))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The 503 a request that could not be written gets. */
export function storageUnavailable(): HttpProblem {
  return new HttpProblem(503, "STORAGE_UNAVAILABLE", {
    detail: "The founder cannot write its state (its disk is full); nothing was changed. Retry later.",
    headers: { "Retry-After": String(STORAGE_RETRY_SECONDS) },
  });
}
