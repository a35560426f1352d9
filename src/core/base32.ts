/**
 * Crockford base32: the alphabet of join codes and pairing codes, and the tolerant reading of
 * what a person types. Browser-safe; no `node:` import.
 * @module
 */

/**
 * Crockford's base32 alphabet: digits, then the letters without I, L, O and U (which read
 * like 1, 1, 0 and V, or spell words). A symbol's value is its index.
 */
export const CROCKFORD_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

const VALUES: ReadonlyMap<string, number> = new Map([...CROCKFORD_ALPHABET].map((symbol, value) => [symbol, value]));

/** The value (0–31) of a canonical upper-case symbol, or -1 for anything else. */
export function symbolValue(symbol: string): number {
  return VALUES.get(symbol) ?? -1;
}

/** The symbol of a value 0–31. */
export function symbolOf(value: number): string {
  const symbol = CROCKFORD_ALPHABET[value];
  if (symbol === undefined || !Number.isInteger(value)) throw new RangeError(`${value} is not a base32 value (0-31)`);
  return symbol;
}

/**
 * The first `symbols` × 5 bits of `bytes`, most significant bit first, as symbols. Every 5-bit
 * group maps to exactly one symbol, so uniform random bytes give uniform symbols: no
 * rejection, no modulo bias.
 */
export function encodeBase32Bits(bytes: Uint8Array, symbols: number): string {
  if (!Number.isInteger(symbols) || symbols < 0 || symbols * 5 > bytes.length * 8) {
    throw new RangeError(`${symbols} symbols need ${Math.ceil((symbols * 5) / 8)} bytes, got ${bytes.length}`);
  }
  let out = "";
  let buffer = 0;
  let bits = 0;
  let next = 0;
  while (out.length < symbols) {
    if (bits < 5) {
      // At most 12 bits are held at once, far from the 32-bit limit of `<<`.
      buffer = ((buffer << 8) | (bytes[next++] ?? 0)) & 0xfff;
      bits += 8;
    }
    bits -= 5;
    out += CROCKFORD_ALPHABET[(buffer >>> bits) & 31];
  }
  return out;
}

/**
 * `symbols` uniformly random Crockford symbols (upper case) from `crypto.getRandomValues`:
 * for identifiers such as a PAKE session (`pk-` and 16 symbols) or a founder's own ids.
 */
export function randomCrockford(symbols: number): string {
  const bytes = new Uint8Array(Math.ceil((symbols * 5) / 8));
  globalThis.crypto.getRandomValues(bytes);
  return encodeBase32Bits(bytes, symbols);
}

/** What {@link readSymbols} found: the canonical symbols, or the first character it cannot read. */
export type SymbolReading = { ok: true; symbols: string } | { ok: false; position: number; character: string };

// Dashes of any kind (a pasted en dash is still a dash) and the minus sign.
const SEPARATOR = /^[\s\p{Pd}\u2212]$/u;

/**
 * Reads typed text as Crockford symbols, the way a person means it: ASCII case does not matter,
 * white space and dashes are ignored, `O` reads as `0`, `I` and `L` as `1`. Anything else
 * (including `U`) is refused with its 1-based position in the input, counted in Unicode code
 * points (what a person sees as characters), and the character itself.
 *
 * Only ASCII letters are case-folded: `toUpperCase` would turn a Turkish dotless `ı` into `I`
 * and so into `1`, or `ß` into two symbols.
 */
export function readSymbols(input: string): SymbolReading {
  let symbols = "";
  let position = 0;
  for (const character of input) {
    position++;
    if (SEPARATOR.test(character)) continue;
    let c = character;
    const code = c.charCodeAt(0);
    if (code >= 0x61 && code <= 0x7a) c = String.fromCharCode(code - 0x20);
    if (c === "O") c = "0";
    else if (c === "I" || c === "L") c = "1";
    if (!VALUES.has(c)) return { ok: false, position, character };
    symbols += c;
  }
  return { ok: true, symbols };
}

/** A printable form of a refused character for a message: itself, or its code point when it would not show. */
export function describeCharacter(character: string): string {
  const cp = character.codePointAt(0) ?? 0;
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;
  return /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(character) ? `"${character}" (${hex})` : hex;
}
