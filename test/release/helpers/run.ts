/**
 * Shared plumbing of the downloader tests: run a download against a mirror with fast retries,
 * list what ended up in a destination, count how many fetches overlap (held at a barrier until
 * they do), and kill a download in a process of its own part way.
 */
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  downloadReleaseFrom,
  type DownloadReleaseOptions,
  type DownloadedRelease,
} from "../../../src/transport/download/index.js";
import type { ReleaseFetchRequest, ReleaseSource } from "../../../src/transport/sources.js";
import type { Mirror } from "./mirror.js";
import type { Fixture } from "./release.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");

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

/**
 * A source that counts how many bodies are open at once. The first bodies are held until
 * `together` of them are open (a barrier), so the overlap a download allows is reached on any
 * machine, however slow; once there, they are held {@link GRACE_MS} longer, for a download
 * that allowed more to start more. Then every body flows.
 */
export interface OverlapCounter {
  source: ReleaseSource;
  /** The most bodies open at the same time so far. */
  peak(): number;
}

/** What a download that allowed more than `together` bodies at once gets to start more in. */
const GRACE_MS = 50;
/** A barrier never reached (a download that fetched one at a time) lets go after this. */
const BARRIER_GIVE_UP_MS = 10_000;

/**
 * Wraps `inner`: the fetches `counted` accepts (all by default) are counted, and held at the
 * barrier until `together` are open at once.
 */
export function countOverlap(
  inner: ReleaseSource,
  together: number,
  counted: (path: string, request: ReleaseFetchRequest) => boolean = () => true,
): OverlapCounter {
  let open = 0;
  let peak = 0;
  let letGo: () => void = () => undefined;
  const barrier = new Promise<void>((resolve) => (letGo = resolve));
  let reached = false;
  const giveUp = setTimeout(letGo, BARRIER_GIVE_UP_MS);
  giveUp.unref();
  void barrier.then(() => clearTimeout(giveUp));
  const source: ReleaseSource = {
    describe: () => `counting ${inner.describe()}`,
    async fetch(path, request) {
      const response = await inner.fetch(path, request);
      if (!counted(path, request)) return response;
      open++;
      peak = Math.max(peak, open);
      if (open >= together && !reached) {
        reached = true;
        setTimeout(letGo, GRACE_MS);
      }
      const body = response.body as AsyncIterable<Uint8Array>;
      return {
        ...response,
        body: (async function* () {
          try {
            await barrier;
            yield* body;
          } finally {
            open--;
          }
        })(),
      };
    },
  };
  return { source, peak: () => peak };
}

/** What {@link downloadInChild} runs: the JSON argument of `download-child.ts`. */
export interface ChildDownload {
  url: string;
  ca: string;
  destDir: string;
  release: string;
  key: string;
  connections?: number;
  segmentBytes?: number;
}

/**
 * Runs one download in a process of its own (`download-child.ts`) and SIGKILLs it once its
 * progress reaches `killAt` bytes. Resolves when it has exited: the signal that ended it (null
 * if it finished by itself) and what it wrote on stderr.
 */
export function downloadInChild(
  config: ChildDownload,
  killAt: number,
): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", join(here, "download-child.ts"), JSON.stringify(config)], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  let buffered = "";
  child.stdout.on("data", (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split("\n");
    buffered = lines.pop()!;
    for (const line of lines)
      if (line.startsWith("progress") && Number(line.split(" ")[1]) >= killAt) child.kill("SIGKILL");
  });
  return new Promise((done) => child.on("exit", (_code, signal) => done({ signal, stderr })));
}
