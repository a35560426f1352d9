/**
 * Byte helpers that run the same in a browser and in Node: base64 without `Buffer`, UTF-8,
 * concatenation. The decoders are strict, because their input comes off the wire.
 * @module
 */

import { StratumError } from "../errors/index.js";

const STANDARD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function table(alphabet: string): Int16Array {
  const t = new Int16Array(128).fill(-1);
  for (let i = 0; i < alphabet.length; i++) t[alphabet.charCodeAt(i)] = i;
  return t;
}
const STANDARD_TABLE = table(STANDARD);
const URL_SAFE_TABLE = table(URL_SAFE);

function encode(bytes: Uint8Array, alphabet: string, pad: boolean): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += alphabet[n >>> 18]! + alphabet[(n >>> 12) & 63]! + alphabet[(n >>> 6) & 63]! + alphabet[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += alphabet[n >>> 18]! + alphabet[(n >>> 12) & 63]! + (pad ? "==" : "");
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += alphabet[n >>> 18]! + alphabet[(n >>> 12) & 63]! + alphabet[(n >>> 6) & 63]! + (pad ? "=" : "");
  }
  return out;
}

function malformed(what: string): StratumError {
  return new StratumError("BASE64_MALFORMED", `not valid ${what}`);
}

function decode(
  text: string,
  lookup: Int16Array,
  what: string,
  padding: "required" | "optional",
): Uint8Array<ArrayBuffer> {
  let body = text;
  if (padding === "required") {
    if (text.length % 4 !== 0) throw malformed(what);
  } else if (text.length % 4 === 1) {
    throw malformed(what);
  }
  if (body.endsWith("==")) body = body.slice(0, -2);
  else if (body.endsWith("=")) body = body.slice(0, -1);
  if (body.length !== text.length && text.length % 4 !== 0) throw malformed(what);
  if (body.length % 4 === 1) throw malformed(what);
  const out = new Uint8Array(Math.floor((body.length * 3) / 4));
  let buffer = 0;
  let bits = 0;
  let o = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    const v = c < 128 ? lookup[c]! : -1;
    if (v < 0) throw malformed(what);
    buffer = ((buffer << 6) | v) & 0xffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (buffer >>> bits) & 0xff;
    }
  }
  // Leftover bits must be zero, so that every byte string has exactly one encoding.
  if ((buffer & ((1 << bits) - 1)) !== 0) throw malformed(what);
  return out;
}

/** Standard base64 (RFC 4648 §4) with padding, as in the `Join-Binding` header. */
export function toBase64(bytes: Uint8Array): string {
  return encode(bytes, STANDARD, true);
}

/**
 * Decodes standard base64 (RFC 4648 §4). Strict: padding required, no white space, no
 * characters outside the alphabet, unused trailing bits zero.
 * @throws {StratumError} `BASE64_MALFORMED`.
 */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return decode(text, STANDARD_TABLE, "base64", "required");
}

/** URL-safe base64 (RFC 4648 §5) without padding, as OPAQUE messages travel. */
export function toBase64Url(bytes: Uint8Array): string {
  return encode(bytes, URL_SAFE, false);
}

/**
 * Decodes URL-safe base64 (RFC 4648 §5); padding optional, otherwise as strict as {@link fromBase64}.
 * @throws {StratumError} `BASE64_MALFORMED`.
 */
export function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  return decode(text, URL_SAFE_TABLE, "base64url", "optional");
}

const encoder = new TextEncoder();

/** The UTF-8 bytes of `text`. */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}

/** The bytes of all `parts`, one after the other, in a fresh buffer. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
