/**
 * The joiner's side of the cluster's small PKI: fingerprints, and the one check the joiner
 * makes of the listener's certificate before it pins the CA (docs/protocol.md, "Proving the
 * code"). Issuing (the CA, the listener's and the nodes' leaves) is the founder's, in
 * `src/server/ca.ts`. Fingerprints are SHA-256, upper-case hex pairs joined by colons.
 *
 * Everything here runs on `node:crypto`'s `X509Certificate` and `./certificate-fields.ts`, never
 * on @peculiar/x509: that library is for issuing only (`./x509.ts`, loaded when a certificate is
 * made), so importing the joiner or checking a certificate does not load it.
 * @module
 */

import { createHash, X509Certificate as NodeX509Certificate } from "node:crypto";
import { isIP } from "node:net";
import type * as X509 from "@peculiar/x509";
import { StratumError } from "../errors/index.js";
import { JoinProtocolError, type ListenerCertificateCheck } from "../errors/index.js";
import { subjectAltNames, subjectPublicKeyInfo, type AltName } from "./certificate-fields.js";
import { founderNow, pastTolerance } from "./founder-time.js";

/** The URI SAN that marks a leaf as the join listener's. Node transport leaves never carry it. */
export const LISTENER_ROLE_URI = "urn:stratum:join-listener";
/** Prefix of a node transport leaf's URI SAN; the node id follows. */
export const NODE_ROLE_URI_PREFIX = "urn:stratum:node:";

/** Extended key usage: TLS server authentication. @internal */
export const EKU_SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
/** Extended key usage: TLS client authentication. @internal */
export const EKU_CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

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

/**
 * The key fingerprint: SHA-256 of the certificate's SubjectPublicKeyInfo exactly as it is
 * encoded inside the certificate (not re-encoded from a parsed key, so both sides hash the same
 * bytes whatever point format the key uses), as upper-case colon hex.
 * @throws StratumError `INVALID_ARGUMENT` when the input is not a PEM (string) or DER certificate
 */
export function spkiFingerprint(certPemOrDer: string | Uint8Array): string {
  let der: Uint8Array;
  try {
    // Parsed by OpenSSL first: the DER walk below only ever sees a well-formed certificate.
    der = new Uint8Array(new NodeX509Certificate(certPemOrDer).raw);
  } catch (cause) {
    throw new StratumError(
      "INVALID_ARGUMENT",
      typeof certPemOrDer === "string" ? "not a PEM certificate" : "not a certificate",
      { cause },
    );
  }
  let spki: Uint8Array;
  try {
    spki = subjectPublicKeyInfo(der);
  } catch (cause) {
    throw new StratumError("INVALID_ARGUMENT", "not a certificate", { cause });
  }
  return colonHex(sha256(spki));
}

/**
 * PEM text ending in a newline, as OpenSSL and Node write it (@peculiar/x509 omits the final
 * newline), so a PEM round-tripped through Node compares equal and files concatenate cleanly.
 */
export function normalizePem(pem: string): string {
  const text = pem.replace(/\r\n/g, "\n").trim();
  return `${text}\n`;
}

/**
 * PEM of DER bytes under `label` (RFC 7468: base64 in lines of 64, ending in a newline).
 * @internal
 */
export function pemOf(der: ArrayBuffer | Uint8Array, label: string): string {
  const base64 = Buffer.from(der instanceof Uint8Array ? der : new Uint8Array(der)).toString("base64");
  return `-----BEGIN ${label}-----\n${base64.replace(/.{64}(?!$)/g, "$&\n")}\n-----END ${label}-----\n`;
}

/** PEM of a PKCS#8 private key. */
/** @internal */
export function pkcs8Pem(der: ArrayBuffer): string {
  return pemOf(der, "PRIVATE KEY");
}

/** Escapes a value for an RFC 4514 distinguished name, so a host like `a,b` cannot add an RDN. */
/** @internal */
export function dnValue(value: string): string {
  return value.replace(/[\\,+"<>;=#]/g, (c) => `\\${c}`).replace(/^ | $/g, (c) => `\\${c}`);
}

/** Strips the brackets of `[v6]` and a `%zone` suffix; the IP family (4, 6) or 0 for a name. */
/** @internal */
export function splitHost(host: string): { bare: string; family: 0 | 4 | 6 } {
  let bare = host.trim();
  if (bare.startsWith("[") && bare.endsWith("]")) bare = bare.slice(1, -1);
  const zone = bare.indexOf("%");
  const unzoned = zone >= 0 ? bare.slice(0, zone) : bare;
  const family = isIP(unzoned);
  if (family !== 0) return { bare: unzoned, family: family as 4 | 6 };
  return { bare, family: 0 };
}

/**
 * The 16 bytes of an IPv6 literal (no brackets, no zone), a dotted IPv4 tail included
 * (`::ffff:127.0.0.2`, `64:ff9b::192.0.2.1`).
 */
function ipv6Bytes(literal: string): Uint8Array {
  let text = literal.toLowerCase();
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
  return out;
}

/**
 * The 4 or 16 bytes of an IP literal, so `::1`, `0:0::1` and `0:0:0:0:0:0:0:1` compare equal.
 * An IPv4-mapped IPv6 address is reduced to its IPv4 bytes: it names the same host.
 */
export function ipBytes(ip: string): Uint8Array | undefined {
  const { bare, family } = splitHost(ip);
  if (family === 4) return Uint8Array.from(bare.split(".").map(Number));
  if (family !== 6) return undefined;
  return unmapped(ipv6Bytes(bare));
}

/** An IP SAN's bytes, an IPv4-mapped IPv6 address reduced to its IPv4 bytes (as {@link ipBytes} does). */
function unmapped(ip: Uint8Array): Uint8Array {
  const mapped = ip.length === 16 && ip.subarray(0, 10).every((b) => b === 0) && ip[10] === 0xff && ip[11] === 0xff;
  return mapped ? ip.slice(12) : ip;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** DNS names lower-cased without a trailing dot: the form in which two names are compared. */
function dnsName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, "");
}

/** @internal */
export function sanEntries(hosts: readonly string[]): X509.JsonGeneralName[] {
  return hosts.map((host) => {
    const { bare, family } = splitHost(host);
    if (family === 4) return { type: "ip", value: bare };
    // Eight hex groups: @peculiar/x509 reads a dotted IPv4 tail (`::ffff:127.0.0.2`,
    // `64:ff9b::192.0.2.1`) as one more hex group and signs another address.
    if (family === 6) {
      const bytes = ipv6Bytes(bare);
      const words = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i]! << 8) | bytes[2 * i + 1]!).toString(16));
      return { type: "ip", value: words.join(":") };
    }
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

function certificateError(check: ListenerCertificateCheck, message: string, cause?: unknown): JoinProtocolError {
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
 * What the PAKE proved of the listener's TLS leaf (docs/protocol.md#pinned-calls): its key and
 * when it became valid. The join session keeps it, and a later connection takes only this key,
 * or a leaf the CA issued no earlier (a reissue, a rotation of the listener's key): never an
 * older leaf of the cluster's CA, however its dates look to either clock.
 */
export interface ListenerPin {
  /** The leaf's key fingerprint (SHA-256 of its SPKI, colon hex). */
  keyFingerprint: string;
  /** The leaf's notBefore, ms since the epoch. */
  notBeforeMs: number;
}

/** A listener leaf that passed every check but the dates: see {@link inspectListenerCertificate}. */
export interface CheckedListener {
  /** The leaf's key and notBefore, as a join session pins them. */
  pin: ListenerPin;
  /**
   * Throws `LISTENER_CERTIFICATE` `validity` unless the leaf, the intermediate (if any) and the
   * pinned CA are all valid at `now`.
   */
  assertValidAt(now: Date): void;
  /** Whether {@link CheckedListener.assertValidAt} would pass at `now`. */
  validAt(now: Date): boolean;
}

/**
 * The joiner's check of the listener's TLS certificate, all but its dates (which clock judges
 * them is the caller's: docs/protocol.md#founder-time): the leaf is signed by the pinned CA
 * (directly, or by one intermediate CA certificate in the chain that the CA signed), its SANs
 * name the dialled host (IP literals compared as addresses, so any IPv6 spelling matches; DNS
 * names case-insensitively, no wildcards) and it carries the listener role (URI SAN
 * `urn:stratum:join-listener`).
 * @param options.chain the peer's certificates as presented, DER, leaf first (a copy of the CA
 *   itself in the chain is tolerated and ignored)
 * @param options.caDer the CA pinned for this cluster (from the PAKE answer, or stored)
 * @param options.dialledHost the host or IP literal the joiner connected to (brackets allowed)
 * @throws JoinProtocolError `LISTENER_CERTIFICATE`, its `check` and message naming what failed
 * @internal
 */
export function inspectListenerCertificate(options: {
  chain: readonly Uint8Array[];
  caDer: Uint8Array;
  dialledHost: string;
}): CheckedListener {
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

  let names: AltName[];
  try {
    names = subjectAltNames(presented[0]);
  } catch (cause) {
    throw certificateError("name", "the leaf's subjectAltName cannot be parsed", cause);
  }
  const dialled = splitHost(options.dialledHost);
  const dialledIp = dialled.family === 0 ? undefined : ipBytes(dialled.bare);
  const named = names.some((n) => {
    if (dialledIp) return n.type === "ip" && sameBytes(unmapped(n.bytes), dialledIp);
    return n.type === "dns" && dnsName(n.value) === dnsName(dialled.bare);
  });
  if (!named)
    throw certificateError("name", `its SANs do not name the dialled ${dialledIp ? "IP" : "host"} ${dialled.bare}`);

  if (!names.some((n) => n.type === "url" && n.value === LISTENER_ROLE_URI)) {
    throw certificateError("role", `it lacks the listener role (URI SAN ${LISTENER_ROLE_URI})`);
  }

  const certs = [
    ...path.map((c, i) => [c, i === 0 ? "the leaf" : "the intermediate"] as const),
    [ca, "the pinned CA"] as const,
  ];
  return {
    pin: { keyFingerprint: spkiFingerprint(presented[0]), notBeforeMs: Date.parse(leaf.validFrom) },
    validAt: (now) => certs.every(([cert]) => validAt(cert, now)),
    assertValidAt: (now) => {
      for (const [cert, what] of certs) {
        if (!validAt(cert, now)) {
          throw certificateError(
            "validity",
            `${what} is not valid now (valid ${cert.validFrom} to ${cert.validTo}, checked at ${now.toISOString()})`,
          );
        }
      }
    },
  };
}

/**
 * {@link inspectListenerCertificate}, and every certificate involved valid at `now`.
 * @param options.now the time to check validity at (default: now)
 * @throws JoinProtocolError `LISTENER_CERTIFICATE`, its `check` and message naming what failed
 * @internal
 */
export function verifyListenerCertificate(options: {
  chain: readonly Uint8Array[];
  caDer: Uint8Array;
  dialledHost: string;
  now?: Date | undefined;
}): void {
  inspectListenerCertificate(options).assertValidAt(options.now ?? new Date());
}

// OpenSSL's verdicts that only say the local clock is outside a certificate's dates.
const DATE_ONLY = new Set(["CERT_NOT_YET_VALID", "CERT_HAS_EXPIRED"]);

/**
 * The listener check of a connection pinned to a CA (docs/protocol.md#pinned-calls):
 * {@link inspectListenerCertificate}, then what the PAKE proved (`pin`): the leaf must carry
 * the key the PAKE proved, or have been issued by the CA no earlier than that leaf (a reissue),
 * so no older leaf of the cluster's CA, leaked or retired, is taken for the listener whatever
 * its dates. Then the dates: with a clock offset past the tolerance
 * (docs/protocol.md#founder-time), the founder's time (authenticated by the exchange that
 * recorded it), and this machine's own clock when that fails: a clock fixed since the join
 * (NTP on the next boot) makes the recorded offset stale, and must not lock the machine out.
 * Last, OpenSSL's own verdict against the CA as a second opinion, heard on everything but the
 * dates when the offset is past the tolerance (it only knows the local clock).
 * @param options.clockOffsetMs the founder's time minus this machine's, ms, from the join session
 * @param options.pin the leaf the PAKE proved, from the join session (absent in a session
 *   written before it was recorded: then any leaf of the CA that passes the other checks)
 * @param options.openSslError OpenSSL's verification error (`socket.authorizationError`), or
 *   undefined when it accepted the chain
 * @throws JoinProtocolError `LISTENER_CERTIFICATE`
 * @internal
 */
export function verifyPinnedListener(options: {
  chain: readonly Uint8Array[];
  caDer: Uint8Array;
  dialledHost: string;
  clockOffsetMs?: number | undefined;
  pin?: ListenerPin | undefined;
  openSslError: string | undefined;
}): void {
  const { chain, caDer, dialledHost, clockOffsetMs, pin, openSslError } = options;
  const listener = inspectListenerCertificate({ chain, caDer, dialledHost });
  if (pin && listener.pin.keyFingerprint !== pin.keyFingerprint && listener.pin.notBeforeMs < pin.notBeforeMs) {
    throw certificateError(
      "pinned",
      `it is neither the leaf the join proved (another key) nor one the CA issued since (valid from ${new Date(listener.pin.notBeforeMs).toISOString()}, before the proven leaf's ${new Date(pin.notBeforeMs).toISOString()})`,
    );
  }
  const corrected = pastTolerance(clockOffsetMs);
  const founderTime = founderNow(clockOffsetMs);
  if (!listener.validAt(founderTime) && !(corrected && listener.validAt(new Date()))) {
    listener.assertValidAt(founderTime);
  }
  if (openSslError === undefined || (corrected && DATE_ONLY.has(openSslError))) return;
  throw certificateError("chain", `refused by OpenSSL against the pinned CA (${openSslError})`);
}
