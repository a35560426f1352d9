/**
 * Release tooling: build the manifest of a release directory from its files, sign it as a
 * DSSE envelope with one or more release keys, and write it to `payload/manifest.json`.
 * @module
 */
import { createHash, sign as cryptoSign } from "node:crypto";
import { join } from "node:path";
import { mkdir } from "node:fs/promises";
import { RELEASE_MANIFEST_PAYLOAD_TYPE, preAuthEncoding, type DsseEnvelope } from "./dsse.js";
import { ReleaseArgumentError, ReleaseVerificationError } from "../errors/index.js";
import { importReleasePrivateKey, type ReleasePrivateKeyInput } from "./keys.js";
import { hashFile } from "./file-hash.js";
import { walkFiles } from "./list-files.js";
import { writeFileDurably } from "../fs/durable.js";
import {
  checkManifestFiles,
  RELEASE_MANIFEST_PATH,
  releasePathProblem,
  resolveLimits,
  type ReleaseLimits,
} from "./manifest-rules.js";
import type { ReleaseFile, ReleaseManifest } from "./manifest-types.js";

// what the tooling builds and signs, named where it is built
export type { ReleaseFile, ReleaseManifest } from "./manifest-types.js";

/**
 * Builds the manifest of a release directory: every regular file but `payload/manifest.json`,
 * streamed through SHA-256. Refuses (with {@link ReleaseVerificationError}) a directory whose
 * files would not verify: a symlink, a file outside `os/blobs/` and `sysext/`, a bad path.
 */
export async function buildReleaseManifest(
  dir: string,
  options: {
    release: string;
    createdAt?: string | Date | undefined;
    signal?: AbortSignal | undefined;
    limits?: ReleaseLimits | undefined;
  },
): Promise<ReleaseManifest> {
  if (typeof options.release !== "string" || options.release === "")
    throw new ReleaseArgumentError("release names the release being built");
  const { files: paths, rejected } = await walkFiles(dir);
  if (rejected.length > 0) {
    throw new ReleaseVerificationError("path", `${rejected[0]} is not a regular file; a release holds no symlinks`, {
      path: rejected[0]!,
    });
  }
  const files: ReleaseFile[] = [];
  for (const path of paths) {
    if (path === RELEASE_MANIFEST_PATH) continue;
    const problem = releasePathProblem(path);
    if (problem) throw new ReleaseVerificationError("path", `${path}: ${problem}`, { path });
    const { sha256, size } = await hashFile(join(dir, ...path.split("/")), options.signal);
    files.push({ path, size, sha256 });
  }
  checkManifestFiles(files, resolveLimits(options.limits));
  const createdAt = options.createdAt instanceof Date ? options.createdAt : new Date(options.createdAt ?? Date.now());
  if (Number.isNaN(createdAt.getTime())) throw new ReleaseArgumentError("createdAt is not a time");
  return { schema: 1, release: options.release, createdAt: createdAt.toISOString(), files };
}

/**
 * Signs arbitrary bytes as a DSSE envelope: one Ed25519 signature per key over
 * PAE(payloadType, payload). Low level: {@link signReleaseManifest} is the checked way to sign
 * a manifest; this one signs whatever it is given (tests use it to build hostile envelopes).
 */
export function signDsseEnvelope(
  payloadType: string,
  payload: Uint8Array,
  keys: readonly ReleasePrivateKeyInput[],
): DsseEnvelope {
  if (keys.length === 0) throw new ReleaseArgumentError("signing needs at least one release private key");
  const pae = preAuthEncoding(payloadType, payload);
  return {
    payloadType,
    payload: Buffer.from(payload).toString("base64"),
    signatures: keys.map((input) => {
      const { keyid, key } = importReleasePrivateKey(input);
      return { keyid, sig: cryptoSign(null, pae, key).toString("base64") };
    }),
  };
}

/**
 * Signs a manifest with every key given (distinct keys, so that a threshold of N needs N of
 * them). The manifest is checked against the path and size rules first: the tooling never
 * signs what a joiner would refuse.
 */
export function signReleaseManifest(
  manifest: ReleaseManifest,
  keys: readonly ReleasePrivateKeyInput[],
  limits?: ReleaseLimits,
): DsseEnvelope {
  checkManifestFiles(manifest.files, resolveLimits(limits));
  const ids = new Set(keys.map((k) => importReleasePrivateKey(k).keyid));
  if (ids.size !== keys.length)
    throw new ReleaseArgumentError("the same release key is given twice; it would count once");
  const payload = Buffer.from(
    JSON.stringify({
      schema: 1,
      release: manifest.release,
      createdAt: manifest.createdAt,
      files: manifest.files.map((f) => ({ path: f.path, size: f.size, sha256: f.sha256 })),
    }),
    "utf8",
  );
  return signDsseEnvelope(RELEASE_MANIFEST_PAYLOAD_TYPE, payload, keys);
}

/** What {@link signReleaseDirectory} wrote. */
export interface SignedReleaseDirectory {
  /** The manifest that was signed. */
  manifest: ReleaseManifest;
  /** The envelope written. */
  envelope: DsseEnvelope;
  /** Where it was written (`<dir>/payload/manifest.json`). */
  manifestPath: string;
  /** SHA-256 (hex) of the envelope bytes written, to publish beside the release if wanted. */
  envelopeSha256: string;
}

/**
 * Builds, signs and writes (durably) `payload/manifest.json` of a release directory, from the
 * directory's files. An existing manifest there is replaced (and never listed in itself).
 */
export async function signReleaseDirectory(
  dir: string,
  options: {
    release: string;
    keys: readonly ReleasePrivateKeyInput[];
    createdAt?: string | Date | undefined;
    signal?: AbortSignal | undefined;
    limits?: ReleaseLimits | undefined;
  },
): Promise<SignedReleaseDirectory> {
  const manifest = await buildReleaseManifest(dir, options);
  const envelope = signReleaseManifest(manifest, options.keys, options.limits);
  const bytes = Buffer.from(`${JSON.stringify(envelope, null, 2)}\n`, "utf8");
  const manifestPath = join(dir, ...RELEASE_MANIFEST_PATH.split("/"));
  await mkdir(join(dir, "payload"), { recursive: true });
  await writeFileDurably(manifestPath, bytes);
  return { manifest, envelope, manifestPath, envelopeSha256: createHash("sha256").update(bytes).digest("hex") };
}
