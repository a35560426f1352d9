/**
 * The cluster's small PKI: the root CA, the join listener's leaf, node transport leaves, and
 * the one check the joiner makes of the listener's certificate before it pins the CA
 * (PROTOCOL.md section 2). Fingerprints are SHA-256, upper-case hex pairs joined by colons.
 * @module
 */

import { createHash, X509Certificate as NodeX509Certificate } from "node:crypto";
import { createRequire } from "node:module";
import { isIP } from "node:net";
import type * as X509 from "@peculiar/x509";
import { StratumError } from "../errors/index.js";
import { JoinProtocolError } from "./errors.js";

/**
 * @peculiar/x509 pulls in tsyringe, which throws at load time unless a `Reflect.getMetadata`
 * polyfill is installed, and this package does not depend on one. tsyringe only touches the
 * Reflect metadata API while the library's classes are being decorated, i.e. during the
 * synchronous load; so a tiny metadata store is installed for that load only and removed
 * again, leaving the global `Reflect` as the application had it. The library is loaded with
 * `require` (it ships CommonJS as `main`) so the order is guaranteed, which a hoisted `import`
 * or a side-effect import (dropped under `sideEffects: false`) would not be.
 */
function loadX509(): typeof X509 {
  const reflect = Reflect as unknown as Record<string, unknown>;
  const added: string[] = [];
  if (typeof reflect.getMetadata !== "function") {
    const store = new WeakMap<object, Map<unknown, unknown>>();
    const own = (target: object, key: unknown): unknown => store.get(target)?.get(key);
    const shim: Record<string, (...args: never[]) => unknown> = {
      getOwnMetadata: (key: unknown, target: object) => own(target, key),
      getMetadata: (key: unknown, target: object) => {
        for (let o: object | null = target; o !== null; o = Object.getPrototypeOf(o) as object | null) {
          const value = own(o, key);
          if (value !== undefined) return value;
        }
        return undefined;
      },
      defineMetadata: (key: unknown, value: unknown, target: object) => {
        let map = store.get(target);
        if (!map) store.set(target, (map = new Map()));
        map.set(key, value);
      },
    };
    for (const [name, fn] of Object.entries(shim)) {
      if (reflect[name] === undefined) {
        reflect[name] = fn;
        added.push(name);
      }
    }
  }
  try {
    return createRequire(import.meta.url)("@peculiar/x509") as typeof X509;
  } finally {
    for (const name of added) delete reflect[name];
  }
}

/**
 * The @peculiar/x509 module, loaded once with the polyfill dance above. Other Node modules of
 * the SDK use this instead of importing the package themselves (which throws without a
 * Reflect polyfill unless this module was loaded first).
 */
export const x509: typeof X509 = loadX509();
// Webcrypto of the running Node: the library's default provider lookup is browser-oriented.
x509.cryptoProvider.set(globalThis.crypto);

/** The URI SAN that marks a leaf as the join listener's. Node transport leaves never carry it. */
export const LISTENER_ROLE_URI = "urn:stratum:join-listener";
/** Prefix of a node transport leaf's URI SAN; the node id follows. */
export const NODE_ROLE_URI_PREFIX = "urn:stratum:node:";

const EKU_SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const EKU_CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
const DAY_MS = 86_400_000;
// Backdating absorbs small clock differences between the founder and a joiner that has just
// booted; a joiner whose clock is further off fails the validity check with a clear message.
const BACKDATE_MS = 5 * 60_000;
const EC_P256: EcKeyGenParams & EcKeyImportParams = { name: "ECDSA", namedCurve: "P-256" };
const SIGNING_ALGORITHM: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };

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
  hosts?: readonly string[];
  /** The node's own public key (SPKI PEM or DER, or a CryptoKey); when given, no key is generated. */
  publicKey?: string | Uint8Array | CryptoKey;
  /** Lifetime in days (default 365). */
  validDays?: number;
}

/** Upper-case hex pairs joined by colons, e.g. `AB:01:…`. */
function colonHex(bytes: Uint8Array): string {
  return Buffer.from(bytes)
    .toString("hex")
    .toUpperCase()
    .replace(/(..)(?!$)/g, "$1:");
}

function sha256(bytes: Uint8Array): Uint8Array {
  return createHash("sha256").update(bytes).digest();
}

/**
 * The CA fingerprint: SHA-256 of the certificate's DER, as upper-case colon hex. The same
 * string the console shows next to the join code, so an operator can compare them by eye.
 */
export function caFingerprint(der: Uint8Array): string {
  return colonHex(sha256(der));
}

function toDer(certPemOrDer: string | Uint8Array): Uint8Array {
  if (typeof certPemOrDer !== "string") return certPemOrDer;
  try {
    return new Uint8Array(new x509.X509Certificate(certPemOrDer).rawData);
  } catch (cause) {
    throw new StratumError("INVALID_ARGUMENT", "not a PEM certificate", { cause });
  }
}

/**
 * The key fingerprint: SHA-256 of the certificate's SubjectPublicKeyInfo exactly as it is
 * encoded inside the certificate (not re-encoded from a parsed key, so both sides hash the same
 * bytes whatever point format the key uses), as upper-case colon hex.
 */
export function spkiFingerprint(certPemOrDer: string | Uint8Array): string {
  let cert: X509.X509Certificate;
  try {
    cert = new x509.X509Certificate(new Uint8Array(toDer(certPemOrDer)));
  } catch (cause) {
    if (StratumError.is(cause)) throw cause;
    throw new StratumError("INVALID_ARGUMENT", "not a certificate", { cause });
  }
  return colonHex(sha256(new Uint8Array(cert.publicKey.rawData)));
}

/**
 * PEM text ending in a newline, as OpenSSL and Node write it (@peculiar/x509 omits the final
 * newline), so a PEM round-tripped through Node compares equal and files concatenate cleanly.
 */
export function normalizePem(pem: string): string {
  const text = pem.replace(/\r\n/g, "\n").trim();
  return `${text}\n`;
}

/** PEM of a PKCS#8 private key. */
function pkcs8Pem(der: ArrayBuffer): string {
  return normalizePem(x509.PemConverter.encode(der, "PRIVATE KEY"));
}

function validity(validDays: number | undefined, fallbackDays: number): { notBefore: Date; notAfter: Date } {
  const days = validDays ?? fallbackDays;
  if (!Number.isFinite(days) || days <= 0)
    throw new StratumError("INVALID_ARGUMENT", "validDays must be a positive number");
  const now = Date.now();
  return { notBefore: new Date(now - BACKDATE_MS), notAfter: new Date(now + days * DAY_MS) };
}

/** Escapes a value for an RFC 4514 distinguished name, so a host like `a,b` cannot add an RDN. */
function dnValue(value: string): string {
  return value.replace(/[\\,+"<>;=#]/g, (c) => `\\${c}`).replace(/^ | $/g, (c) => `\\${c}`);
}

/** Strips the brackets of `[v6]` and a `%zone` suffix; the IP family (4, 6) or 0 for a name. */
function splitHost(host: string): { bare: string; family: 0 | 4 | 6 } {
  let bare = host.trim();
  if (bare.startsWith("[") && bare.endsWith("]")) bare = bare.slice(1, -1);
  const zone = bare.indexOf("%");
  const unzoned = zone >= 0 ? bare.slice(0, zone) : bare;
  const family = isIP(unzoned);
  if (family !== 0) return { bare: unzoned, family: family as 4 | 6 };
  return { bare, family: 0 };
}

/**
 * The 4 or 16 bytes of an IP literal, so `::1`, `0:0::1` and `0:0:0:0:0:0:0:1` compare equal.
 * An IPv4-mapped IPv6 address is reduced to its IPv4 bytes: it names the same host.
 */
export function ipBytes(ip: string): Uint8Array | undefined {
  const { bare, family } = splitHost(ip);
  if (family === 4) return Uint8Array.from(bare.split(".").map(Number));
  if (family !== 6) return undefined;
  let text = bare.toLowerCase();
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    tail = text
      .slice(lastColon + 1)
      .split(".")
      .map(Number);
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const groups = (s: string): number[] => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const fill = rest === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  const words = [...left, ...fill, ...right];
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  if (tail.length === 4) out.set(tail, 12);
  const mapped = out.subarray(0, 10).every((b) => b === 0) && out[10] === 0xff && out[11] === 0xff;
  return mapped ? out.slice(12) : out;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** DNS names lower-cased without a trailing dot: the form in which two names are compared. */
function dnsName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, "");
}

function sanEntries(hosts: readonly string[]): X509.JsonGeneralName[] {
  return hosts.map((host) => {
    const { bare, family } = splitHost(host);
    if (family !== 0) return { type: "ip", value: bare };
    const name = dnsName(host);
    // A SAN dNSName is an IA5 host name; refusing anything else keeps a typo from being signed.
    if (
      !/^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/.test(name)
    ) {
      throw new StratumError("INVALID_ARGUMENT", `not a DNS name or IP address: ${JSON.stringify(host)}`);
    }
    return { type: "dns", value: name };
  });
}

/**
 * Creates a cluster root CA: a fresh ECDSA P-256 key and a self-signed certificate with
 * basicConstraints CA (critical) and keyUsage keyCertSign + cRLSign (critical).
 * @param options.commonName the CA's CN (default `Stratum cluster CA`)
 * @param options.validDays lifetime in days (default 3650)
 */
export async function createClusterCa(options: { commonName?: string; validDays?: number } = {}): Promise<ClusterCa> {
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
  options: { hosts: readonly string[]; validDays?: number },
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

function certificateError(
  check: "missing" | "chain" | "validity" | "name" | "role",
  message: string,
  cause?: unknown,
): JoinProtocolError {
  return new JoinProtocolError("LISTENER_CERTIFICATE", `listener certificate: ${message}`, { check, cause });
}

function signedBy(child: NodeX509Certificate, issuer: NodeX509Certificate): boolean {
  try {
    return child.checkIssued(issuer) && child.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

function validAt(cert: NodeX509Certificate, now: Date): boolean {
  return Date.parse(cert.validFrom) <= now.getTime() && now.getTime() <= Date.parse(cert.validTo);
}

/**
 * The joiner's check of the listener's TLS certificate, made before the CA is pinned and on
 * every later connection: the leaf is signed by the pinned CA (directly, or by one
 * intermediate CA certificate in the chain that the CA signed), every certificate involved is
 * valid at `now`, the leaf's SANs name the dialled host (IP literals compared as addresses, so
 * any IPv6 spelling matches; DNS names case-insensitively, no wildcards) and the leaf carries
 * the listener role (URI SAN `urn:stratum:join-listener`).
 * @param options.chain the peer's certificates as presented, DER, leaf first (a copy of the CA
 *   itself in the chain is tolerated and ignored)
 * @param options.caDer the CA pinned for this cluster (from the PAKE answer, or stored)
 * @param options.dialledHost the host or IP literal the joiner connected to (brackets allowed)
 * @param options.now the time to check validity at (default: now)
 * @throws JoinProtocolError `LISTENER_CERTIFICATE`, its `check` and message naming what failed
 */
export function verifyListenerCertificate(options: {
  chain: readonly Uint8Array[];
  caDer: Uint8Array;
  dialledHost: string;
  now?: Date;
}): void {
  const now = options.now ?? new Date();
  let ca: NodeX509Certificate;
  try {
    ca = new NodeX509Certificate(options.caDer);
  } catch (cause) {
    throw certificateError("chain", "the pinned CA certificate cannot be parsed", cause);
  }
  // The server may send the root along; it adds nothing, the pinned copy is the trust anchor.
  const presented = options.chain.filter((der) => !sameBytes(der, options.caDer));
  if (presented.length === 0 || presented[0] === undefined)
    throw certificateError("missing", "the listener presented no certificate");
  let leaf: NodeX509Certificate;
  let others: NodeX509Certificate[];
  try {
    leaf = new NodeX509Certificate(presented[0]);
    others = presented.slice(1).map((der) => new NodeX509Certificate(der));
  } catch (cause) {
    throw certificateError("missing", "the listener's certificate cannot be parsed", cause);
  }

  let path: NodeX509Certificate[] | undefined;
  if (signedBy(leaf, ca)) path = [leaf];
  else {
    const intermediate = others.find((c) => c.ca && signedBy(leaf, c) && signedBy(c, ca));
    if (intermediate) path = [leaf, intermediate];
  }
  if (!path) throw certificateError("chain", "not signed by the pinned cluster CA");

  for (const [cert, what] of [
    ...path.map((c, i) => [c, i === 0 ? "the leaf" : "the intermediate"] as const),
    [ca, "the pinned CA"] as const,
  ]) {
    if (!validAt(cert, now)) {
      throw certificateError(
        "validity",
        `${what} is not valid now (valid ${cert.validFrom} to ${cert.validTo}, checked at ${now.toISOString()})`,
      );
    }
  }

  let names: readonly X509.GeneralName[];
  try {
    names =
      new x509.X509Certificate(new Uint8Array(presented[0])).getExtension(x509.SubjectAlternativeNameExtension)?.names
        .items ?? [];
  } catch (cause) {
    throw certificateError("name", "the leaf's subjectAltName cannot be parsed", cause);
  }
  const dialled = splitHost(options.dialledHost);
  const dialledIp = dialled.family === 0 ? undefined : ipBytes(dialled.bare);
  const named = names.some((n) => {
    if (dialledIp) {
      if (n.type !== "ip") return false;
      const san = ipBytes(n.value);
      return san !== undefined && sameBytes(san, dialledIp);
    }
    return n.type === "dns" && dnsName(n.value) === dnsName(dialled.bare);
  });
  if (!named)
    throw certificateError("name", `its SANs do not name the dialled ${dialledIp ? "IP" : "host"} ${dialled.bare}`);

  if (!names.some((n) => n.type === "url" && n.value === LISTENER_ROLE_URI)) {
    throw certificateError("role", `it lacks the listener role (URI SAN ${LISTENER_ROLE_URI})`);
  }
}
