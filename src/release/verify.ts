/**
 * Verification of a release manifest: every rule of docs/protocol.md#release-verification, in its order, each
 * failure a {@link ReleaseVerificationError} naming the rule. The security decisions of the
 * release live here and nowhere else; the downloader and the tooling call into them.
 * @module
 */
import { verify as cryptoVerify } from "node:crypto";
import { constants as fsc } from "node:fs";
import { lstat, open } from "node:fs/promises";
import { join } from "node:path";
import { preAuthEncoding, RELEASE_MANIFEST_PAYLOAD_TYPE, type DsseEnvelope, type DsseSignature } from "./dsse.js";
import { ReleaseArgumentError, ReleaseVerificationError } from "../errors/index.js";
import { importReleasePublicKey, type ReleasePublicKey, type ReleasePublicKeyInput } from "./keys.js";
import type { ReleaseFile, ReleaseManifest } from "./manifest-types.js";
import { hashFile } from "./file-hash.js";
import { walkFiles } from "./list-files.js";
import { checkManifestFiles, RELEASE_MANIFEST_PATH, resolveLimits, type ReleaseLimits } from "./manifest-rules.js";

// the bounds are part of what the verifier is called with
export type { ReleaseLimits } from "./manifest-rules.js";

/** What {@link verifyReleaseManifest} checks the envelope against. */
export interface VerifyReleaseManifestOptions {
  /**
   * The release keys this joiner trusts, from its own OS trust store (never from the release):
   * PEM strings, raw 32-byte keys or KeyObjects. Duplicates count once.
   */
  trustedKeys: readonly ReleasePublicKeyInput[];
  /** How many distinct trusted keys must have signed. Default 1. */
  threshold?: number | undefined;
  /** The release the cluster told this joiner to upgrade to (`upgrade.to`). Anything else is refused: no rollback, no mix-and-match. */
  expectRelease: string;
  /** Bounds; each defaults as {@link ReleaseLimits} says. */
  limits?: ReleaseLimits | undefined;
}

/** A manifest that passed every rule. */
export interface VerifiedReleaseManifest {
  /** The parsed payload. */
  manifest: ReleaseManifest;
  /** The keyids of the trusted keys whose signatures verified (at least `threshold`). */
  signedBy: string[];
}

/**
 * Verifies the bytes of a `payload/manifest.json` (a DSSE envelope), in the order of
 * docs/protocol.md#release-verification: envelope size; signatures by at least `threshold` distinct trusted
 * keys (the keyid only a hint); payloadType; strict parse; `release` equal to `expectRelease`;
 * every path relative POSIX inside `os/blobs/` or `sysext/`, no `..`, no duplicate; sizes
 * bounded. Throws {@link ReleaseVerificationError} (with `rule`) at the first failure, and
 * {@link ReleaseArgumentError} for options that can never verify anything.
 *
 * @param envelope The envelope's bytes (or its text) as read; the size cap applies to them.
 */
export function verifyReleaseManifest(
  envelope: string | Uint8Array,
  options: VerifyReleaseManifestOptions,
): VerifiedReleaseManifest {
  const limits = resolveLimits(options.limits);
  const { trusted, threshold } = checkTrustOptions(options);

  // 1. size cap, before anything reads the bytes
  const bytes = typeof envelope === "string" ? Buffer.from(envelope, "utf8") : envelope;
  if (bytes.length > limits.maxEnvelopeBytes) {
    throw new ReleaseVerificationError(
      "envelope-size",
      `the manifest envelope is ${bytes.length} bytes, more than the ${limits.maxEnvelopeBytes} allowed`,
    );
  }
  const parsed = parseEnvelope(bytes, limits);

  // 2. signatures by distinct trusted keys
  const signedBy = verifySignatures(parsed.envelope, parsed.payload, trusted);
  if (signedBy.length < threshold) {
    throw new ReleaseVerificationError(
      "signature-threshold",
      `the manifest carries valid signatures by ${signedBy.length} distinct trusted release key(s); ${threshold} required`,
    );
  }

  // 3. payloadType: signed, but a signature for another type of document is no manifest
  if (parsed.envelope.payloadType !== RELEASE_MANIFEST_PAYLOAD_TYPE) {
    throw new ReleaseVerificationError(
      "payload-type",
      `the envelope's payloadType is not ${RELEASE_MANIFEST_PAYLOAD_TYPE}`,
    );
  }

  // 4. strict parse
  const manifest = parseManifestPayload(parsed.payload);

  // 5. the release the cluster named
  if (manifest.release !== options.expectRelease) {
    throw new ReleaseVerificationError(
      "release",
      `the manifest is of release ${JSON.stringify(manifest.release)}, not the ${JSON.stringify(options.expectRelease)} the cluster runs`,
    );
  }

  // 6. paths, 7. sizes
  checkManifestFiles(manifest.files, limits);
  return { manifest, signedBy };
}

/** What {@link verifyReleaseDirectory} checks. */
export interface VerifyReleaseDirectoryOptions extends VerifyReleaseManifestOptions {
  /** Accept files the manifest does not list (other than the manifest itself). Default false: a release directory is exactly its manifest. */
  allowExtraFiles?: boolean | undefined;
  /** Aborts the hashing. */
  signal?: AbortSignal | undefined;
}

/**
 * Verifies a release directory on disk: its `payload/manifest.json` with
 * {@link verifyReleaseManifest}, then every listed file's size and SHA-256 (streamed), and,
 * unless `allowExtraFiles`, that nothing else is there. Symlinks are never followed.
 */
export async function verifyReleaseDirectory(
  dir: string,
  options: VerifyReleaseDirectoryOptions,
): Promise<VerifiedReleaseManifest> {
  const limits = resolveLimits(options.limits);
  const envelopePath = join(dir, ...RELEASE_MANIFEST_PATH.split("/"));
  const fh = await open(envelopePath, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  let bytes: Buffer;
  try {
    const size = (await fh.stat()).size;
    if (size > limits.maxEnvelopeBytes) {
      throw new ReleaseVerificationError(
        "envelope-size",
        `the manifest envelope is ${size} bytes, more than the ${limits.maxEnvelopeBytes} allowed`,
      );
    }
    bytes = await fh.readFile();
  } finally {
    await fh.close();
  }
  const verified = verifyReleaseManifest(bytes, options);
  for (const file of verified.manifest.files) {
    const at = join(dir, ...file.path.split("/"));
    const stat = await lstat(at).catch(() => undefined);
    if (!stat || !stat.isFile()) {
      throw new ReleaseVerificationError("size", `${file.path} is missing or not a regular file`, { path: file.path });
    }
    if (stat.size !== file.size) {
      throw new ReleaseVerificationError("size", `${file.path} is ${stat.size} bytes; the manifest says ${file.size}`, {
        path: file.path,
      });
    }
    const { sha256 } = await hashFile(at, options.signal);
    if (sha256 !== file.sha256) {
      throw new ReleaseVerificationError("hash", `${file.path} does not have the SHA-256 the manifest gives`, {
        path: file.path,
      });
    }
  }
  if (!options.allowExtraFiles) {
    const listed = new Set(verified.manifest.files.map((f) => f.path));
    const { files, rejected } = await walkFiles(dir);
    const extra = [...files.filter((p) => p !== RELEASE_MANIFEST_PATH && !listed.has(p)), ...rejected];
    if (extra.length > 0) {
      throw new ReleaseVerificationError("path", `${extra[0]} is in the release directory but not in its manifest`, {
        path: extra[0]!,
      });
    }
  }
  return verified;
}

/**
 * Imports the trusted keys (duplicates counted once) and checks the threshold and the expected
 * release, throwing {@link ReleaseArgumentError} for options that could never verify anything.
 * The downloader calls it before its first request.
 */
export function checkTrustOptions(
  options: Pick<VerifyReleaseManifestOptions, "trustedKeys" | "threshold" | "expectRelease">,
): {
  trusted: ReleasePublicKey[];
  threshold: number;
} {
  const trusted = prepareTrustedKeys(options.trustedKeys);
  const threshold = options.threshold ?? 1;
  if (!Number.isInteger(threshold) || threshold < 1)
    throw new ReleaseArgumentError("threshold is a whole number of at least 1");
  if (threshold > trusted.length) {
    throw new ReleaseArgumentError(
      `threshold ${threshold} exceeds the ${trusted.length} distinct trusted release key(s)`,
    );
  }
  if (typeof options.expectRelease !== "string" || options.expectRelease === "") {
    throw new ReleaseArgumentError("expectRelease names the release the cluster runs");
  }
  return { trusted, threshold };
}

function prepareTrustedKeys(inputs: readonly ReleasePublicKeyInput[]): ReleasePublicKey[] {
  if (!Array.isArray(inputs) || inputs.length === 0)
    throw new ReleaseArgumentError("trustedKeys names at least one release public key");
  const byId = new Map<string, ReleasePublicKey>();
  for (const input of inputs) {
    const key = importReleasePublicKey(input);
    byId.set(key.keyid, key);
  }
  return [...byId.values()];
}

function parseEnvelope(
  bytes: Uint8Array,
  limits: Required<ReleaseLimits>,
): { envelope: DsseEnvelope; payload: Buffer } {
  const fail = (why: string): never => {
    throw new ReleaseVerificationError("envelope-parse", `the manifest is not a DSSE envelope: ${why}`);
  };
  let value: unknown;
  try {
    value = JSON.parse(decodeUtf8(bytes));
  } catch {
    fail("not UTF-8 JSON");
  }
  if (!isPlainObject(value)) return fail("not a JSON object");
  if (!hasExactly(value, ["payloadType", "payload", "signatures"]))
    return fail("fields other than payloadType, payload, signatures");
  const { payloadType, payload, signatures } = value as Record<string, unknown>;
  if (typeof payloadType !== "string") return fail("payloadType is not a string");
  if (typeof payload !== "string") return fail("payload is not a string");
  const payloadBytes = decodeBase64Strict(payload);
  if (!payloadBytes) return fail("payload is not canonical base64");
  if (!Array.isArray(signatures)) return fail("signatures is not an array");
  if (signatures.length > limits.maxSignatures) return fail(`more than ${limits.maxSignatures} signatures`);
  const sigs: DsseSignature[] = [];
  for (const sig of signatures) {
    if (
      !isPlainObject(sig) ||
      typeof sig.sig !== "string" ||
      (sig.keyid !== undefined && typeof sig.keyid !== "string")
    ) {
      return fail("a signature is not { keyid, sig }");
    }
    sigs.push({ keyid: typeof sig.keyid === "string" ? sig.keyid : "", sig: sig.sig });
  }
  return { envelope: { payloadType, payload, signatures: sigs }, payload: payloadBytes };
}

function verifySignatures(envelope: DsseEnvelope, payload: Buffer, trusted: ReleasePublicKey[]): string[] {
  const pae = preAuthEncoding(envelope.payloadType, payload);
  const signers = new Set<string>();
  for (const { keyid, sig } of envelope.signatures) {
    const signature = decodeBase64Strict(sig);
    if (!signature || signature.length !== 64) continue;
    // the keyid only orders the attempts; whichever trusted key verifies is the signer
    const candidates = [...trusted].sort((a, b) => Number(b.keyid === keyid) - Number(a.keyid === keyid));
    for (const key of candidates) {
      if (signers.has(key.keyid)) continue;
      if (cryptoVerify(null, pae, key.key, signature)) {
        signers.add(key.keyid);
        break;
      }
    }
  }
  return [...signers];
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

function parseManifestPayload(payload: Uint8Array): ReleaseManifest {
  const fail = (why: string): never => {
    throw new ReleaseVerificationError("payload-parse", `the manifest payload is not a v1 release manifest: ${why}`);
  };
  let value: unknown;
  try {
    value = JSON.parse(decodeUtf8(payload));
  } catch {
    fail("not UTF-8 JSON");
  }
  if (!isPlainObject(value)) return fail("not a JSON object");
  if (!hasExactly(value, ["schema", "release", "createdAt", "files"]))
    return fail("fields other than schema, release, createdAt, files");
  if (value.schema !== 1) return fail("schema is not 1");
  const release = value.release;

  if (
    typeof release !== "string" ||
    release.length === 0 ||
    // a release name becomes a directory name and appears in messages: short, like any version
    release.length > 128 ||
    // eslint-disable-next-line no-control-regex -- a release name must not hold control characters
    /[\u0000-\u001f\u007f]/.test(release)
  ) {
    return fail("release is not a release name");
  }
  const createdAt = value.createdAt;
  if (typeof createdAt !== "string" || !RFC3339.test(createdAt) || Number.isNaN(Date.parse(createdAt))) {
    return fail("createdAt is not an RFC 3339 time");
  }
  if (!Array.isArray(value.files)) return fail("files is not an array");
  const files: ReleaseFile[] = [];
  for (const [i, file] of value.files.entries()) {
    if (!isPlainObject(file) || !hasExactly(file, ["path", "size", "sha256"]))
      return fail(`files[${i}] is not { path, size, sha256 }`);
    if (typeof file.path !== "string") return fail(`files[${i}].path is not a string`);
    if (typeof file.size !== "number" || !Number.isInteger(file.size) || file.size < 0)
      return fail(`files[${i}].size is not a byte count`);
    if (typeof file.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(file.sha256))
      return fail(`files[${i}].sha256 is not lower-case hex SHA-256`);
    files.push({ path: file.path, size: file.size, sha256: file.sha256 });
  }
  return { schema: 1, release, createdAt, files };
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function decodeUtf8(bytes: Uint8Array): string {
  return UTF8.decode(bytes);
}

function decodeBase64Strict(text: string): Buffer | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? bytes : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasExactly(value: Record<string, unknown>, keys: readonly string[]): boolean {
  const own = Object.keys(value);
  return own.length === keys.length && keys.every((k) => Object.prototype.hasOwnProperty.call(value, k));
}
