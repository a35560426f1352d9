/**
 * Release fixtures: a release directory of random files, signed with fresh keys.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  generateReleaseKeyPair,
  signReleaseDirectory,
  type ReleaseKeyPair,
  type ReleaseManifest,
} from "../../../src/release/index.js";

/** A signed release directory on disk. */
export interface Fixture {
  dir: string;
  release: string;
  keys: ReleaseKeyPair[];
  manifest: ReleaseManifest;
  contents: Map<string, Buffer>;
}

/** A fresh temp dir; removed by the returned cleanup. */
export async function tempDir(prefix = "stratum-release-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Removes a temp dir, whatever is in it. */
export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** Writes files (release path → content or size in random bytes) and signs the directory with `signers` keys. */
export async function makeRelease(
  files: Record<string, Buffer | number>,
  options: { release?: string; signers?: number; keys?: ReleaseKeyPair[]; dir?: string } = {},
): Promise<Fixture> {
  const dir = options.dir ?? (await tempDir("stratum-mirror-"));
  const release = options.release ?? "0.6.0";
  const keys = options.keys ?? Array.from({ length: options.signers ?? 1 }, () => generateReleaseKeyPair());
  const contents = new Map<string, Buffer>();
  for (const [path, spec] of Object.entries(files)) {
    const content = typeof spec === "number" ? randomBytes(spec) : spec;
    contents.set(path, content);
    const at = join(dir, ...path.split("/"));
    await mkdir(dirname(at), { recursive: true });
    await writeFile(at, content);
  }
  const signed = await signReleaseDirectory(dir, { release, keys: keys.map((k) => k.privateKeyPem) });
  return { dir, release, keys, manifest: signed.manifest, contents };
}

/** Writes raw envelope bytes as the release's payload/manifest.json. */
export async function writeEnvelope(dir: string, envelope: unknown): Promise<void> {
  await mkdir(join(dir, "payload"), { recursive: true });
  await writeFile(
    join(dir, "payload", "manifest.json"),
    typeof envelope === "string" || Buffer.isBuffer(envelope) ? envelope : JSON.stringify(envelope),
  );
}
