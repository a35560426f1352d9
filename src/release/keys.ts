/**
 * Ed25519 release keys. A key is named by its keyid: the lower-case hex SHA-256 of its raw
 * 32-byte public key. Trusted keys always come from the caller (the joiner's own OS trust
 * store); the keyid in a signature is only a hint for which of them to try first.
 * @module
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject } from "node:crypto";
import { ReleaseArgumentError } from "../errors/index.js";

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw key follows it. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/**
 * A release public key as a caller may hold it: a PEM (`-----BEGIN PUBLIC KEY-----`, SPKI), the
 * raw 32-byte Ed25519 public key, or a node:crypto `KeyObject`. There is no way to pass a keyid
 * with it: the keyid is always computed from the key.
 */
export type ReleasePublicKeyInput = string | Uint8Array | KeyObject;

/** A release private key: a PEM (`-----BEGIN PRIVATE KEY-----`, PKCS#8) or a node:crypto `KeyObject`. */
export type ReleasePrivateKeyInput = string | KeyObject;

/** A release public key, imported and named. */
export interface ReleasePublicKey {
  /** Lower-case hex SHA-256 of {@link ReleasePublicKey.raw}. */
  keyid: string;
  /** The raw 32-byte Ed25519 public key. */
  raw: Uint8Array;
  /** The key, ready for `crypto.verify`. */
  key: KeyObject;
}

/** A new release key pair, as written to disk by release tooling. */
export interface ReleaseKeyPair {
  /** Lower-case hex SHA-256 of the raw public key. */
  keyid: string;
  /** The public key, SPKI PEM: what goes into a joiner's trust store. */
  publicKeyPem: string;
  /** The private key, PKCS#8 PEM (unencrypted: protect the file it goes into). */
  privateKeyPem: string;
  /** The raw 32-byte public key. */
  publicKey: Uint8Array;
}

/** Makes a new Ed25519 release key pair. */
export function generateReleaseKeyPair(): ReleaseKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = rawEd25519(publicKey);
  return {
    keyid: keyIdOfRaw(raw),
    publicKeyPem: publicKey.export({ format: "pem", type: "spki" }).toString(),
    privateKeyPem: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
    publicKey: raw,
  };
}

/**
 * Imports a release public key and computes its keyid. Throws {@link ReleaseArgumentError}
 * for anything that is not an Ed25519 public key (a private key PEM yields its public half).
 */
export function importReleasePublicKey(input: ReleasePublicKeyInput): ReleasePublicKey {
  let key: KeyObject;
  try {
    if (input instanceof KeyObject) {
      key = input.type === "private" ? createPublicKey(input) : input;
    } else if (typeof input === "string") {
      key = createPublicKey(input);
    } else if (input instanceof Uint8Array) {
      if (input.length !== 32)
        throw new ReleaseArgumentError(`a raw Ed25519 public key is 32 bytes, not ${input.length}`);
      key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, input]), format: "der", type: "spki" });
    } else {
      throw new ReleaseArgumentError("a release public key is a PEM string, 32 raw bytes or a KeyObject");
    }
  } catch (error) {
    if (error instanceof ReleaseArgumentError) throw error;
    throw new ReleaseArgumentError("not a readable public key");
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new ReleaseArgumentError(`a release key is Ed25519, not ${key.asymmetricKeyType ?? "unknown"}`);
  }
  const raw = rawEd25519(key);
  return { keyid: keyIdOfRaw(raw), raw, key };
}

/** The keyid of a release public key: lower-case hex SHA-256 of the raw 32-byte key. */
export function releaseKeyId(input: ReleasePublicKeyInput): string {
  return importReleasePublicKey(input).keyid;
}

/** A release private key, imported, with the keyid of its public half. */
export interface ReleaseSigningKey {
  /** The keyid of the public half. */
  keyid: string;
  /** The private key, ready for `crypto.sign`. */
  key: KeyObject;
}

/** Imports a release private key (PKCS#8 PEM or KeyObject). Throws {@link ReleaseArgumentError} if it is not an Ed25519 private key. */
export function importReleasePrivateKey(input: ReleasePrivateKeyInput): ReleaseSigningKey {
  let key: KeyObject;
  try {
    key = input instanceof KeyObject ? input : createPrivateKey(input);
  } catch {
    throw new ReleaseArgumentError("not a readable private key");
  }
  if (key.type !== "private" || key.asymmetricKeyType !== "ed25519") {
    throw new ReleaseArgumentError("a release signing key is an Ed25519 private key");
  }
  return { keyid: keyIdOfRaw(rawEd25519(createPublicKey(key))), key };
}

function rawEd25519(publicKey: KeyObject): Uint8Array {
  const der = publicKey.export({ format: "der", type: "spki" });
  if (der.length !== 44 || !der.subarray(0, 12).equals(ED25519_SPKI_PREFIX)) {
    throw new ReleaseArgumentError("not an Ed25519 public key");
  }
  return new Uint8Array(der.subarray(12));
}

function keyIdOfRaw(raw: Uint8Array): string {
  return createHash("sha256").update(raw).digest("hex");
}
