/**
 * Shared plumbing of the downloader tests: run a download against a mirror with fast retries,
 * and list what ended up in a destination.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import {
  downloadReleaseFrom,
  type DownloadReleaseOptions,
  type DownloadedRelease,
} from "../../../src/release/download/index.js";
import type { Mirror } from "./mirror.js";
import type { Fixture } from "./release.js";

/** downloadReleaseFrom from `mirror` into `destDir`, trusting the fixture's first key, with millisecond backoff. */
export function download(
  fx: Fixture,
  mirror: Mirror,
  destDir: string,
  extra: Partial<DownloadReleaseOptions> = {},
): Promise<DownloadedRelease> {
  return downloadReleaseFrom({
    upgrade: { from: "0.5.0", to: fx.release, source: mirror.url },
    mirror: { ca: mirror.caPem },
    destDir,
    trustedKeys: [fx.keys[0]!.publicKeyPem],
    ...extra,
    retry: { baseMs: 1, maxMs: 5, ...extra.retry },
  });
}

/** Every file and symlink below `dir` (relative, POSIX), directories left out. */
export async function listTree(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(at: string, prefix: string): Promise<void> {
    let entries;
    try {
      entries = await readdir(at, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(join(at, entry.name), rel);
      else out.push(rel);
    }
  }
  await walk(dir, "");
  return out.sort();
}

/** Catches the rejection of a promise (fails the test if it resolves). */
export async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure, got a result");
}
