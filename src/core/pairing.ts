/**
 * What binds the OPAQUE proof of a join code to one TLS connection and one machine key, and
 * the pairing code both sides show (docs/protocol.md#pairing-code). Shared by the joiner and the reference
 * server, so the bytes here are the wire contract. Web Crypto only (`crypto.subtle`): runs in
 * a browser and in Node alike.
 * @module
 */

import { PairingCodeError, StratumError } from "../errors/index.js";
import { describeCharacter, encodeBase32Bits, readSymbols } from "./base32.js";
import { concatBytes, fromBase64, toBase64, utf8 } from "./bytes.js";

/** The protocol label: first field of the transcript, prefix of the HKDF infos. */
export const JOIN_PROTOCOL_LABEL = "stratum-join/v1";

/** Bytes of the TLS exporter value (`EXPORTER-Channel-Binding`, RFC 9266) in the transcript. */
export const EXPORTER_LENGTH = 32;

/** Symbols in a pairing code (30 bits). */
export const PAIRING_CODE_LENGTH = 6;

const subtle = (): SubtleCrypto => globalThis.crypto.subtle;

/** A copy of `bytes` on a plain `ArrayBuffer`, which is what Web Crypto's types accept. */
function own(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes);
}

function invalid(message: string): StratumError {
  return new StratumError("INVALID_ARGUMENT", message);
}

/** The keys both sides derive from the OPAQUE session key. */
export interface BindingKeys {
  /** Authenticates the joiner's `Join-Binding` header (on the KE3 request). */
  kc: Uint8Array<ArrayBuffer>;
  /** Authenticates the server's `Join-Binding` header (on the KE3 answer). */
  ks: Uint8Array<ArrayBuffer>;
  /** Keys the pairing code. */
  pairingKey: Uint8Array<ArrayBuffer>;
}

/**
 * `kc`, `ks` and the pairing key from the OPAQUE session key: HKDF-SHA256 (RFC 5869) with an
 * empty salt, 32 bytes each, infos (UTF-8) `stratum-join/v1 client`, `stratum-join/v1 server`,
 * `stratum-join/v1 pairing`.
 * @throws {StratumError} `INVALID_ARGUMENT` for an empty session key.
 */
export async function deriveBindingKeys(sessionKey: Uint8Array): Promise<BindingKeys> {
  if (!(sessionKey instanceof Uint8Array) || sessionKey.length === 0) throw invalid("the OPAQUE session key is empty");
  const ikm = await subtle().importKey("raw", own(sessionKey), "HKDF", false, ["deriveBits"]);
  const derive = async (label: string): Promise<Uint8Array<ArrayBuffer>> =>
    new Uint8Array(
      await subtle().deriveBits(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: utf8(`${JOIN_PROTOCOL_LABEL} ${label}`) },
        ikm,
        256,
      ),
    );
  const [kc, ks, pairingKey] = await Promise.all([derive("client"), derive("server"), derive("pairing")]);
  return { kc, ks, pairingKey };
}

/** The inputs of {@link bindingTranscript}. */
export interface BindingTranscriptInput {
  /** The `session` of the `POST /v1/join/pake` answer (`pk-…`). */
  session: string;
  /** KE1 as raw bytes (base64url-decoded from what `@serenity-kit/opaque` returns). */
  ke1: Uint8Array;
  /** KE2 as raw bytes. */
  ke2: Uint8Array;
  /** The cluster root CA's fingerprint, colon hex (`7D:9F:…`, 32 pairs); case-insensitive. */
  caFingerprint: string;
  /** The client certificate key's fingerprint, as {@link spkiFingerprint} computes it (colon hex); case-insensitive. */
  clientKeyFingerprint: string;
  /** The TLS exporter value, label `EXPORTER-Channel-Binding`, no context, 32 bytes. */
  exporter: Uint8Array;
  /**
   * The `serverTime` of the `POST /v1/join/pake` answer, exactly as carried (RFC 3339, UTC): the
   * founder's clock, which a joiner with a wrong clock trusts for certificate validity.
   */
  serverTime: string;
}

const FINGERPRINT = /^[0-9A-F]{2}(?::[0-9A-F]{2}){31}$/;

/** A SHA-256 fingerprint in colon hex, upper-cased; refused when it is not 32 pairs. */
function normalizeFingerprint(value: string, name: string): string {
  if (typeof value !== "string" || !FINGERPRINT.test(value.toUpperCase()))
    throw invalid(`${name} is not a SHA-256 fingerprint in colon hex (32 pairs like 7D:9F:…)`);
  return value.toUpperCase();
}

function lengthPrefixed(field: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(4 + field.length);
  new DataView(out.buffer).setUint32(0, field.length, false);
  out.set(field, 4);
  return out;
}

/**
 * The channel-binding transcript both sides MAC. Wire contract, byte for byte: seven fields, each
 * written as a 4-byte unsigned big-endian length followed by that many bytes, concatenated with
 * nothing before, between or after:
 *
 * 1. UTF-8 `stratum-join/v1` (15 bytes);
 * 2. UTF-8 `session`, as received;
 * 3. SHA-256(ke1 ‖ ke2) over the raw KE1 and KE2 bytes (32 bytes);
 * 4. UTF-8 `caFingerprint`, upper-case colon hex (95 bytes);
 * 5. UTF-8 `clientKeyFingerprint`, upper-case colon hex (95 bytes);
 * 6. `exporter`, the TLS exporter `EXPORTER-Channel-Binding` with no context (32 bytes);
 * 7. UTF-8 `serverTime`, exactly as the PAKE answer carried it (docs/protocol.md#founder-time).
 *
 * Fingerprints are accepted in either case and upper-cased, so a lower-case copy cannot break
 * the binding.
 * @throws {StratumError} `INVALID_ARGUMENT` when a fingerprint is not 32 colon-hex pairs, the
 * exporter is not 32 bytes, or `session`, `ke1`, `ke2` or `serverTime` is empty.
 */
export async function bindingTranscript(input: BindingTranscriptInput): Promise<Uint8Array<ArrayBuffer>> {
  const { session, ke1, ke2, exporter, serverTime } = input;
  if (typeof session !== "string" || session === "") throw invalid("the PAKE session is empty");
  if (typeof serverTime !== "string" || serverTime === "") throw invalid("the PAKE answer's serverTime is empty");
  if (!(ke1 instanceof Uint8Array) || ke1.length === 0) throw invalid("ke1 is empty");
  if (!(ke2 instanceof Uint8Array) || ke2.length === 0) throw invalid("ke2 is empty");
  if (!(exporter instanceof Uint8Array) || exporter.length !== EXPORTER_LENGTH) {
    throw invalid(`the TLS exporter must be ${EXPORTER_LENGTH} bytes`);
  }
  const ca = normalizeFingerprint(input.caFingerprint, "caFingerprint");
  const clientKey = normalizeFingerprint(input.clientKeyFingerprint, "clientKeyFingerprint");
  const messages = new Uint8Array(await subtle().digest("SHA-256", concatBytes(ke1, ke2)));
  return concatBytes(
    ...[utf8(JOIN_PROTOCOL_LABEL), utf8(session), messages, utf8(ca), utf8(clientKey), exporter, utf8(serverTime)].map(
      lengthPrefixed,
    ),
  );
}

function hmacKey(key: Uint8Array, usage: "sign" | "verify"): Promise<CryptoKey> {
  if (!(key instanceof Uint8Array) || key.length === 0) throw invalid("the HMAC key is empty");
  return subtle().importKey("raw", own(key), { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

async function hmac(key: Uint8Array, data: Uint8Array): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await subtle().sign("HMAC", await hmacKey(key, "sign"), own(data)));
}

/**
 * The joiner's `Join-Binding` header value: base64(HMAC-SHA256(kc, transcript)), standard
 * alphabet with padding (44 characters).
 */
export async function clientBinding(kc: Uint8Array, transcript: Uint8Array): Promise<string> {
  return toBase64(await hmac(kc, transcript));
}

/** The server's `Join-Binding` header value: base64(HMAC-SHA256(ks, transcript)), standard alphabet with padding (44 characters). */
export async function serverBinding(ks: Uint8Array, transcript: Uint8Array): Promise<string> {
  return toBase64(await hmac(ks, transcript));
}

/**
 * Checks a received `Join-Binding` header against `key` (`kc` on the server, `ks` on the
 * joiner) in constant time: the MAC comparison is Web Crypto's HMAC verify. False, never a
 * throw, for an absent, malformed or wrong value; surrounding white space is ignored.
 */
export async function verifyBinding(
  key: Uint8Array,
  transcript: Uint8Array,
  headerValue: string | null | undefined,
): Promise<boolean> {
  if (typeof headerValue !== "string") return false;
  const text = headerValue.trim();
  let mac: Uint8Array<ArrayBuffer>;
  try {
    mac = fromBase64(text);
  } catch {
    return false;
  }
  if (mac.length !== 32) return false;
  return subtle().verify("HMAC", await hmacKey(key, "verify"), mac, own(transcript));
}

/**
 * The pairing code both sides compute and a person compares: HMAC-SHA256(pairingKey, UTF-8
 * of the upper-case client key fingerprint), its first 30 bits as 6 Crockford symbols, raw
 * (no dash; {@link formatPairingCode} for display).
 * @throws {StratumError} `INVALID_ARGUMENT` when the fingerprint is not 32 colon-hex pairs.
 */
export async function derivePairingCode(pairingKey: Uint8Array, clientKeyFingerprint: string): Promise<string> {
  const fingerprint = normalizeFingerprint(clientKeyFingerprint, "clientKeyFingerprint");
  return encodeBase32Bits(await hmac(pairingKey, utf8(fingerprint)), PAIRING_CODE_LENGTH);
}

/**
 * Reads a pairing code as typed or as an answer carries it (`4F7-K2Q` or `4F7K2Q`), with the
 * join code's tolerance (case, dashes, white space, O/I/L). Returns the 6 raw symbols, the form
 * {@link derivePairingCode} returns, so the two compare with `===`.
 * @throws {PairingCodeError}
 */
export function parsePairingCode(input: string): string {
  const reading = readSymbols(typeof input === "string" ? input : "");
  if (!reading.ok) {
    const { position, character } = reading;
    throw new PairingCodeError(
      "character",
      `the character ${describeCharacter(character)} at position ${position} is not part of a pairing code (Crockford base32: 0-9 and A-Z without U)`,
      { position, character },
    );
  }
  const code = reading.symbols;
  if (code.length === 0) throw new PairingCodeError("empty", "no pairing code was given");
  if (code.length !== PAIRING_CODE_LENGTH) {
    throw new PairingCodeError(
      "length",
      `a pairing code has ${PAIRING_CODE_LENGTH} symbols (XXX-XXX), this one has ${code.length}`,
    );
  }
  return code;
}

/**
 * The display form `XXX-XXX` of a pairing code (the form the API's `pairingCode` carries).
 * @throws {PairingCodeError}
 */
export function formatPairingCode(code: string): string {
  const raw = parsePairingCode(code);
  return `${raw.slice(0, 3)}-${raw.slice(3)}`;
}

/** Bytes as upper-case hex pairs joined by colons (`7D:9F:05:…`), the API's fingerprint form. */
export function fingerprintHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).toUpperCase().padStart(2, "0")).join(":");
}

/**
 * The SHA-256 fingerprint of DER bytes in {@link fingerprintHex} form: of a certificate's
 * SubjectPublicKeyInfo for a key fingerprint, of the root CA certificate for `caFingerprint`.
 */
export async function sha256Fingerprint(der: Uint8Array): Promise<string> {
  return fingerprintHex(new Uint8Array(await subtle().digest("SHA-256", own(der))));
}
