/**
 * The two fields of an X.509 certificate the joiner reads that `node:crypto`'s
 * `X509Certificate` does not hand out as bytes: the SubjectPublicKeyInfo exactly as encoded
 * (the key fingerprint hashes those bytes, never a re-encoding) and the subjectAltName entries
 * (Node gives them only as display text, with its own quoting). Read straight from the DER, so
 * the joiner needs no X.509 library at all: issuing certificates, which does, is
 * `src/protocol/x509.ts`.
 *
 * Only certificates that OpenSSL has already parsed (a `node:crypto` `X509Certificate` was made
 * from the same bytes) reach this reader, so it walks well-formed DER; still, every length is
 * checked against its enclosing element and anything unexpected throws.
 * @module
 */

/** One DER element: its tag, where it begins (its tag byte), and where its contents start and end. */
interface Element {
  tag: number;
  begin: number;
  start: number;
  end: number;
}

// Tags (X.690): universal SEQUENCE, OBJECT IDENTIFIER, OCTET STRING; context-specific
// constructed [0] (the version) and [3] (the extensions) of a TBSCertificate (RFC 5280 4.1).
const SEQUENCE = 0x30;
const OID = 0x06;
const OCTET_STRING = 0x04;
const VERSION = 0xa0;
const EXTENSIONS = 0xa3;
/** The OID 2.5.29.17 (id-ce-subjectAltName) as DER contents. */
const SUBJECT_ALT_NAME = Uint8Array.of(0x55, 0x1d, 0x11);
/** GeneralName choices (RFC 5280 4.2.1.6), context-specific primitive tags. */
const GENERAL_NAME = { 0x81: "email", 0x82: "dns", 0x86: "url", 0x87: "ip" } as const;

/** The element at `offset`, which must end within `limit`. */
function elementAt(der: Uint8Array, offset: number, limit: number): Element {
  if (offset + 2 > limit) throw new Error("truncated DER element");
  const tag = der[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new Error("unexpected high tag number in a certificate");
  let length = der[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    // Four length bytes address 4 GiB: more than any certificate; zero is BER's indefinite form.
    if (bytes === 0 || bytes > 4) throw new Error("unsupported DER length");
    length = 0;
    for (let i = 0; i < bytes; i++) {
      if (start >= limit) throw new Error("truncated DER length");
      length = length * 256 + der[start++]!;
    }
  }
  if (start + length > limit) throw new Error("DER element longer than its container");
  return { tag, begin: offset, start, end: start + length };
}

/** The elements inside a constructed element, in order. */
function childrenOf(der: Uint8Array, parent: Element): Element[] {
  const children: Element[] = [];
  for (let offset = parent.start; offset < parent.end;) {
    const child = elementAt(der, offset, parent.end);
    children.push(child);
    offset = child.end;
  }
  return children;
}

function expectTag(element: Element | undefined, tag: number, what: string): Element {
  if (!element || element.tag !== tag) throw new Error(`the certificate's ${what} is not where X.509 puts it`);
  return element;
}

/** The TBSCertificate's fields, with the optional version removed so the others have fixed positions. */
function tbsFields(der: Uint8Array): Element[] {
  const certificate = expectTag(elementAt(der, 0, der.length), SEQUENCE, "outer SEQUENCE");
  const tbs = expectTag(childrenOf(der, certificate)[0], SEQUENCE, "TBSCertificate");
  const fields = childrenOf(der, tbs);
  return fields[0]?.tag === VERSION ? fields.slice(1) : fields;
}

/**
 * The SubjectPublicKeyInfo of a certificate, DER, exactly as it is encoded inside it.
 * @throws Error when the DER is not laid out as an X.509 certificate
 */
export function subjectPublicKeyInfo(der: Uint8Array): Uint8Array {
  // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
  const spki = expectTag(tbsFields(der)[5], SEQUENCE, "subjectPublicKeyInfo");
  // The element's own tag and length bytes belong to the hashed encoding too.
  return der.slice(spki.begin, spki.end);
}

/** One subjectAltName entry the joiner compares: a DNS name, an IP address (its bytes), a URI or an e-mail address. */
export type AltName =
  | { type: "dns" | "url" | "email"; value: string }
  | {
      type: "ip";
      /** The address's 4 or 16 bytes, as in the certificate. */
      bytes: Uint8Array;
    };

/**
 * The subjectAltName entries of a certificate that the joiner compares, in order (other kinds
 * of name are skipped). Empty when the certificate has no subjectAltName extension.
 * @throws Error when the DER is not laid out as an X.509 certificate or the extension is malformed
 */
export function subjectAltNames(der: Uint8Array): AltName[] {
  const extensionsField = tbsFields(der).find((field) => field.tag === EXTENSIONS);
  if (!extensionsField) return [];
  const extensions = expectTag(childrenOf(der, extensionsField)[0], SEQUENCE, "extensions");
  for (const extension of childrenOf(der, extensions)) {
    const parts = childrenOf(der, expectTag(extension, SEQUENCE, "extension"));
    const id = expectTag(parts[0], OID, "extension id");
    if (!sameBytes(der.subarray(id.start, id.end), SUBJECT_ALT_NAME)) continue;
    // extnID, critical BOOLEAN DEFAULT FALSE (absent when false), extnValue OCTET STRING
    const value = expectTag(parts[parts.length - 1], OCTET_STRING, "subjectAltName value");
    const names = expectTag(elementAt(der, value.start, value.end), SEQUENCE, "GeneralNames");
    const entries: AltName[] = [];
    for (const name of childrenOf(der, names)) {
      const type = GENERAL_NAME[name.tag as keyof typeof GENERAL_NAME];
      if (type === undefined) continue;
      const bytes = der.slice(name.start, name.end);
      if (type === "ip") entries.push({ type, bytes });
      // IA5String: ASCII. latin1 keeps any stray high byte visible instead of folding it.
      else entries.push({ type, value: Buffer.from(bytes).toString("latin1") });
    }
    // RFC 5280 4.2: a certificate has at most one instance of an extension; the first counts.
    return entries;
  }
  return [];
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
