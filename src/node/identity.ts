/**
 * The machine identity: the key a joiner presents as its TLS client certificate. The key *is*
 * the identity (the listener accepts any key and pins the registration to its fingerprint),
 * so the certificate is self-signed and only carries the key.
 * @module
 */

import { createPrivateKey, createPublicKey, X509Certificate as NodeX509Certificate, type KeyObject } from "node:crypto";
import { inspect } from "node:util";
import { IdentityError } from "../errors/index.js";
import { normalizePem, pkcs8Pem, spkiFingerprint } from "../protocol/pki.js";
import { loadX509 } from "../protocol/x509.js";

/**
 * A machine identity. `keyPem` is readable but deliberately hidden from `util.inspect`,
 * `console.log`, `JSON.stringify` and object spread, so a log line or a persisted status
 * document never carries the private key by accident.
 */
export interface MachineIdentity {
  /** The self-signed client certificate, PEM. */
  readonly certPem: string;
  /** The private key, PKCS#8 PEM. Secret: never log it. */
  readonly keyPem: string;
  /** SHA-256 of the certificate's SubjectPublicKeyInfo, upper-case colon hex: the key fingerprint of docs/protocol.md#fingerprints. */
  readonly keyFingerprint: string;
}

/** The key algorithms {@link createMachineIdentity} can generate. */
export type IdentityAlgorithm = "Ed25519" | "P-256";

/**
 * Why Ed25519 is the default: Node 20 (OpenSSL 3) accepts an Ed25519 client certificate in a
 * TLS 1.3 handshake (OpenSSL lists ed25519 in the CertificateRequest's signature_algorithms;
 * test/node/identity.test.ts proves it with a real handshake), and Ed25519 keys are small,
 * fast and have no curve-parameter or nonce pitfalls.
 */
const DEFAULT_ALGORITHM: IdentityAlgorithm = "Ed25519";

// RFC 5280 4.1.2.5: 99991231235959Z means "no well-defined expiration". The certificate is only
// a carrier for the key; nobody validates its dates, and a joiner must not stop working because
// a self-signed wrapper aged out.
const NO_EXPIRY = new Date(Date.UTC(9999, 11, 31, 23, 59, 59));
const EKU_CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

class Identity implements MachineIdentity {
  readonly certPem: string;
  readonly keyFingerprint: string;
  // A private field: not an own enumerable property, so neither JSON nor spread nor inspect sees it.
  readonly #keyPem: string;

  constructor(certPem: string, keyPem: string, keyFingerprint: string) {
    this.certPem = certPem;
    this.#keyPem = keyPem;
    this.keyFingerprint = keyFingerprint;
  }

  /** The private key, PKCS#8 PEM. */
  get keyPem(): string {
    return this.#keyPem;
  }

  /** What `JSON.stringify` writes: the public parts only. */
  toJSON(): { certPem: string; keyFingerprint: string } {
    return { certPem: this.certPem, keyFingerprint: this.keyFingerprint };
  }

  [inspect.custom](): string {
    return `MachineIdentity { keyFingerprint: '${this.keyFingerprint}', keyPem: [redacted] }`;
  }
}

function keyAlgorithm(key: KeyObject): string | undefined {
  if (key.asymmetricKeyType === "ed25519") return "Ed25519";
  if (key.asymmetricKeyType === "ec") {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === "prime256v1") return "P-256";
    if (curve === "secp384r1") return "P-384";
    return undefined;
  }
  if (key.asymmetricKeyType === "rsa" && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048) return "RSA";
  return undefined;
}

/**
 * Creates a fresh machine identity: a new key and a self-signed certificate (EKU clientAuth,
 * no expiry) around it. Ed25519 by default; `P-256` for peers that cannot verify Ed25519.
 * @param options.algorithm the key algorithm (default `Ed25519`)
 * @param options.commonName the certificate's CN (default `stratum-join machine`); public,
 *   shown in server logs, so no secret in it
 */
export async function createMachineIdentity(
  options: { algorithm?: IdentityAlgorithm | undefined; commonName?: string | undefined } = {},
): Promise<MachineIdentity> {
  const algorithm = options.algorithm ?? DEFAULT_ALGORITHM;
  const params: EcKeyGenParams | Algorithm =
    algorithm === "Ed25519" ? { name: "Ed25519" } : { name: "ECDSA", namedCurve: "P-256" };
  const signingAlgorithm: Algorithm | EcdsaParams =
    algorithm === "Ed25519" ? { name: "Ed25519" } : { name: "ECDSA", hash: "SHA-256" };
  // The X.509 library is loaded here, on the first identity made, not when the joiner is imported.
  const x509 = await loadX509();
  const keys = (await crypto.subtle.generateKey(params, true, ["sign", "verify"])) as CryptoKeyPair;
  const commonName = (options.commonName ?? "stratum-join machine").replace(/[\\,+"<>;=#]/g, (c) => `\\${c}`);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${commonName}`,
    keys,
    signingAlgorithm,
    notBefore: new Date(Date.now() - 5 * 60_000),
    notAfter: NO_EXPIRY,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([EKU_CLIENT_AUTH], false),
    ],
  });
  const certPem = normalizePem(cert.toString("pem"));
  const keyPem = pkcs8Pem(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  return new Identity(certPem, keyPem, spkiFingerprint(certPem));
}

/**
 * Loads a stored identity, checking that the key is an unencrypted private key of a supported
 * type (Ed25519, P-256, P-384, RSA >= 2048) and that it belongs to the certificate.
 * @throws IdentityError (`IDENTITY_INVALID`) naming what is wrong, never quoting the key
 */
export function loadMachineIdentity(stored: { certPem: string; keyPem: string }): MachineIdentity {
  let cert: NodeX509Certificate;
  try {
    cert = new NodeX509Certificate(stored.certPem);
  } catch (cause) {
    throw new IdentityError("the identity's certificate is not a PEM certificate", { cause });
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: stored.keyPem, format: "pem" });
  } catch (cause) {
    // Deliberately not chained: an OpenSSL error about a malformed key can quote parts of it.
    void cause;
    throw new IdentityError("the identity's key is not an unencrypted PEM private key");
  }
  if (keyAlgorithm(key) === undefined) {
    throw new IdentityError(
      `the identity's key type (${key.asymmetricKeyType ?? "unknown"}) is not supported for TLS 1.3 client authentication`,
    );
  }
  // Compare public keys rather than trusting checkPrivateKey alone: both must agree.
  const matches =
    cert.checkPrivateKey(key) &&
    createPublicKey(key)
      .export({ type: "spki", format: "der" })
      .equals(cert.publicKey.export({ type: "spki", format: "der" }));
  if (!matches) throw new IdentityError("the identity's key does not belong to its certificate");
  const certPem = cert.toString();
  const keyPem = key.export({ type: "pkcs8", format: "pem" }).toString();
  return new Identity(certPem, keyPem, spkiFingerprint(certPem));
}

/**
 * A one-off identity for a call that must not be tied to this machine's key (checking a join
 * code before deciding to register). Kept in memory only; a fresh key every time.
 */
export function createThrowawayIdentity(): Promise<MachineIdentity> {
  return createMachineIdentity({ commonName: "stratum-join throwaway" });
}
