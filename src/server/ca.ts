/**
 * The founder's side of the cluster's small PKI: the root CA, the join listener's leaf, and
 * node transport leaves. The joiner's check of the listener's leaf is in `src/protocol/pki.ts`.
 * Certificates are built with @peculiar/x509 (Web Crypto keys, ECDSA P-256), loaded by the
 * first call that issues one; fingerprints are SHA-256 as upper-case colon hex.
 * @module
 */
import type * as X509 from "@peculiar/x509";
import { StratumError } from "../errors/index.js";
import { loadX509 } from "../protocol/x509.js";
import {
  caFingerprint,
  dnValue,
  EKU_CLIENT_AUTH,
  EKU_SERVER_AUTH,
  LISTENER_ROLE_URI,
  NODE_ROLE_URI_PREFIX,
  normalizePem,
  pkcs8Pem,
  sanEntries,
  spkiFingerprint,
  splitHost,
} from "../protocol/pki.js";

const EC_P256: EcKeyGenParams & EcKeyImportParams = { name: "ECDSA", namedCurve: "P-256" };
const SIGNING_ALGORITHM: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };
const DAY_MS = 86_400_000;
// Backdating absorbs small clock differences between the founder and a joiner that has just
// booted: within 5 minutes the joiner judges validity by its own clock; a joiner further off
// judges it by the founder's time, learned in the PAKE (docs/protocol.md#founder-time).
const BACKDATE_MS = 5 * 60_000;

function validity(validDays: number | undefined, fallbackDays: number): { notBefore: Date; notAfter: Date } {
  const days = validDays ?? fallbackDays;
  if (!Number.isFinite(days) || days <= 0)
    throw new StratumError("INVALID_ARGUMENT", "validDays must be a positive number");
  const now = Date.now();
  return { notBefore: new Date(now - BACKDATE_MS), notAfter: new Date(now + days * DAY_MS) };
}

/** The cluster root CA, as the founder keeps it. `keyPem` is the CA's private key (PKCS#8). */
export interface ClusterCa {
  /** The CA certificate, PEM. */
  certPem: string;
  /** The CA's private key, PKCS#8 PEM. Secret. */
  keyPem: string;
  /** The CA certificate, DER. This is what the OPAQUE server identifier and the pinning hash. */
  certDer: Uint8Array;
  /** {@link caFingerprint} of `certDer`. */
  fingerprint: string;
}

/** A leaf issued by the cluster CA, with the fresh key generated for it. */
export interface IssuedCertificate {
  /** The leaf certificate, PEM. */
  certPem: string;
  /** The leaf's private key, PKCS#8 PEM. Secret. */
  keyPem: string;
  /** The leaf certificate, DER. */
  certDer: Uint8Array;
  /** {@link spkiFingerprint} of the leaf: the fingerprint of its key. */
  keyFingerprint: string;
}

/** A leaf issued by the cluster CA for a public key the caller holds the private half of. */
export interface IssuedCertificateForKey extends Omit<IssuedCertificate, "keyPem"> {
  /** Always undefined: the key stays with its owner. */
  keyPem: undefined;
}

/** Options of {@link issueNodeCertificate}. */
export interface NodeCertificateOptions {
  /** The node's id; letters, digits and `-._~` only (it goes into a URN). */
  nodeId: string;
  /** DNS names and IP literals of the node. */
  hosts?: readonly string[] | undefined;
  /** The node's own public key (SPKI PEM or DER, or a CryptoKey); when given, no key is generated. */
  publicKey?: string | Uint8Array | CryptoKey | undefined;
  /** Lifetime in days (default 365). */
  validDays?: number | undefined;
}

/**
 * Creates a cluster root CA: a fresh ECDSA P-256 key and a self-signed certificate with
 * basicConstraints CA (critical) and keyUsage keyCertSign + cRLSign (critical).
 * @param options.commonName the CA's CN (default `Stratum cluster CA`)
 * @param options.validDays lifetime in days (default 3650)
 */
export async function createClusterCa(
  options: { commonName?: string | undefined; validDays?: number | undefined } = {},
): Promise<ClusterCa> {
  const x509 = await loadX509();
  const keys = (await crypto.subtle.generateKey(EC_P256, true, ["sign", "verify"])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${dnValue(options.commonName ?? "Stratum cluster CA")}`,
    keys,
    signingAlgorithm: SIGNING_ALGORITHM,
    ...validity(options.validDays, 3650),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const certDer = new Uint8Array(cert.rawData);
  return {
    certPem: normalizePem(cert.toString("pem")),
    keyPem: pkcs8Pem(await crypto.subtle.exportKey("pkcs8", keys.privateKey)),
    certDer,
    fingerprint: caFingerprint(certDer),
  };
}

/** Loads the CA's certificate and signing key for issuing. */
async function caSigner(
  ca: Pick<ClusterCa, "certPem" | "keyPem">,
): Promise<{ cert: X509.X509Certificate; key: CryptoKey }> {
  const x509 = await loadX509();
  try {
    const cert = new x509.X509Certificate(ca.certPem);
    const key = await crypto.subtle.importKey("pkcs8", x509.PemConverter.decodeFirst(ca.keyPem), EC_P256, false, [
      "sign",
    ]);
    return { cert, key };
  } catch (cause) {
    throw new StratumError("INVALID_ARGUMENT", "the CA certificate or key cannot be loaded", { cause });
  }
}

/** Signs a leaf for `subjectKey` under the CA with the given SANs and extended key usages. */
async function issueLeaf(
  ca: Pick<ClusterCa, "certPem" | "keyPem">,
  leaf: { commonName: string; san: X509.JsonGeneralName[]; eku: string[]; validDays: number },
  subjectKey: CryptoKey | X509.PublicKey,
): Promise<X509.X509Certificate> {
  const x509 = await loadX509();
  const signer = await caSigner(ca);
  return x509.X509CertificateGenerator.create({
    subject: `CN=${dnValue(leaf.commonName)}`,
    issuer: signer.cert.subject,
    publicKey: subjectKey,
    signingKey: signer.key,
    signingAlgorithm: SIGNING_ALGORITHM,
    ...validity(leaf.validDays, leaf.validDays),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension(leaf.eku, false),
      new x509.SubjectAlternativeNameExtension(leaf.san, false),
      await x509.SubjectKeyIdentifierExtension.create(subjectKey),
      await x509.AuthorityKeyIdentifierExtension.create(signer.cert.publicKey),
    ],
  });
}

async function issuedWithFreshKey(
  ca: Pick<ClusterCa, "certPem" | "keyPem">,
  leaf: { commonName: string; san: X509.JsonGeneralName[]; eku: string[]; validDays: number },
): Promise<IssuedCertificate> {
  const keys = (await crypto.subtle.generateKey(EC_P256, true, ["sign", "verify"])) as CryptoKeyPair;
  const cert = await issueLeaf(ca, leaf, keys.publicKey);
  const certDer = new Uint8Array(cert.rawData);
  return {
    certPem: normalizePem(cert.toString("pem")),
    keyPem: pkcs8Pem(await crypto.subtle.exportKey("pkcs8", keys.privateKey)),
    certDer,
    keyFingerprint: spkiFingerprint(certDer),
  };
}

/**
 * Issues the join listener's leaf: a fresh P-256 key, SANs for every host (iPAddress for IP
 * literals, dNSName otherwise) plus the listener role URI `urn:stratum:join-listener`, EKU
 * serverAuth. Name the listener's addresses and the API VIP.
 * @param options.hosts DNS names and IP literals the listener is dialled by (at least one)
 * @param options.validDays lifetime in days (default 90)
 */
export async function issueListenerCertificate(
  ca: Pick<ClusterCa, "certPem" | "keyPem">,
  options: { hosts: readonly string[]; validDays?: number | undefined },
): Promise<IssuedCertificate> {
  if (options.hosts.length === 0)
    throw new StratumError("INVALID_ARGUMENT", "a listener certificate needs at least one host");
  return issuedWithFreshKey(ca, {
    commonName: splitHost(options.hosts[0]!).bare,
    san: [...sanEntries(options.hosts), { type: "url", value: LISTENER_ROLE_URI }],
    eku: [EKU_SERVER_AUTH],
    validDays: options.validDays ?? 90,
  });
}

/**
 * Issues a node transport leaf: URI SAN `urn:stratum:node:<nodeId>`, optional host SANs, EKU
 * serverAuth + clientAuth. It never carries the listener role, so a node's leaf cannot be
 * replayed as a join listener. With `publicKey`, the leaf certifies that key and `keyPem` of
 * the result is undefined; otherwise a fresh P-256 key is generated and returned.
 */
export async function issueNodeCertificate(
  ca: Pick<ClusterCa, "certPem" | "keyPem">,
  options: NodeCertificateOptions & { publicKey: string | Uint8Array | CryptoKey },
): Promise<IssuedCertificateForKey>;
export async function issueNodeCertificate(
  ca: Pick<ClusterCa, "certPem" | "keyPem">,
  options: NodeCertificateOptions & { publicKey?: undefined },
): Promise<IssuedCertificate>;
export async function issueNodeCertificate(
  ca: Pick<ClusterCa, "certPem" | "keyPem">,
  options: NodeCertificateOptions,
): Promise<IssuedCertificate | IssuedCertificateForKey>;
export async function issueNodeCertificate(
  ca: Pick<ClusterCa, "certPem" | "keyPem">,
  options: NodeCertificateOptions,
): Promise<IssuedCertificate | IssuedCertificateForKey> {
  if (!/^[A-Za-z0-9._~-]{1,128}$/.test(options.nodeId)) {
    throw new StratumError("INVALID_ARGUMENT", "nodeId must be 1 to 128 of A-Z a-z 0-9 - . _ ~");
  }
  const leaf = {
    commonName: options.nodeId,
    san: [
      ...sanEntries(options.hosts ?? []),
      { type: "url" as const, value: `${NODE_ROLE_URI_PREFIX}${options.nodeId}` },
    ],
    eku: [EKU_SERVER_AUTH, EKU_CLIENT_AUTH],
    validDays: options.validDays ?? 365,
  };
  if (options.publicKey === undefined) return issuedWithFreshKey(ca, leaf);
  const x509 = await loadX509();
  let subjectKey: CryptoKey | X509.PublicKey;
  try {
    subjectKey =
      typeof options.publicKey === "string"
        ? new x509.PublicKey(options.publicKey)
        : options.publicKey instanceof Uint8Array
          ? new x509.PublicKey(new Uint8Array(options.publicKey))
          : options.publicKey;
  } catch (cause) {
    throw new StratumError("INVALID_ARGUMENT", "publicKey is not an SPKI public key", { cause });
  }
  const cert = await issueLeaf(ca, leaf, subjectKey);
  const certDer = new Uint8Array(cert.rawData);
  return {
    certPem: normalizePem(cert.toString("pem")),
    keyPem: undefined,
    certDer,
    keyFingerprint: spkiFingerprint(certDer),
  };
}
