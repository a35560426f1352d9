/**
 * The setup every downloader suite shares: a signed release of `files`, a test mirror serving it
 * over HTTPS, and temp directories that are all removed at the end.
 */
import { startMirror, type Mirror } from "./mirror.js";
import { makeTestPki, type TestPki } from "./pki.js";
import { makeRelease, removeDir, tempDir, type Fixture } from "./release.js";

/** A served release and the temp directories of a suite. */
export interface MirroredRelease {
  pki: TestPki;
  fx: Fixture;
  mirror: Mirror;
  /** A fresh destination directory, removed by {@link MirroredRelease.close}. */
  dest(): Promise<string>;
  /** Removes `dir` too at the end. */
  track(dir: string): void;
  /** Every directory made or tracked so far. */
  dirs(): readonly string[];
  /** Stops the mirror and removes every directory made or tracked. */
  close(): Promise<void>;
}

/** Signs a release of `files` (release path → content or size) and serves it from a mirror. */
export async function startMirroredRelease(files: Record<string, Buffer | number>): Promise<MirroredRelease> {
  const cleanup: string[] = [];
  const pki = await makeTestPki();
  const fx = await makeRelease(files);
  cleanup.push(fx.dir);
  const mirror = await startMirror({ root: fx.dir, pki });
  return {
    pki,
    fx,
    mirror,
    async dest() {
      const dir = await tempDir();
      cleanup.push(dir);
      return dir;
    },
    track: (dir) => void cleanup.push(dir),
    dirs: () => cleanup,
    async close() {
      await mirror.close();
      await Promise.all(cleanup.map(removeDir));
    },
  };
}
