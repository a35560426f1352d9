/**
 * Join codes: 10 random Crockford base32 symbols and a Luhn mod 32 check symbol, shown
 * `XXXX-XXXX-XXX`. A typo is caught here, before any network call, so it never costs a PAKE
 * attempt. Shared by the joiner and the reference server; browser-safe.
 *
 * The code is a secret: no message here repeats it, except the suggestion of an adjacent swap
 * that makes it valid (which the person typing it already knows).
 * @module
 */

import { JoinCodeError } from "../errors/index.js";
import {
  CROCKFORD_ALPHABET,
  describeCharacter,
  encodeBase32Bits,
  readSymbols,
  symbolOf,
  symbolValue,
} from "./base32.js";

/** Symbols in a join code, the check symbol included. */
export const JOIN_CODE_LENGTH = 11;
/** Random symbols in a join code (50 bits; the first two, 10 bits, are the public selector). */
export const JOIN_CODE_DATA_LENGTH = 10;

/** A well-formed join code, in the forms the SDK and the API use. */
export interface JoinCode {
  /** Canonical form: 11 upper-case symbols, no separators, e.g. `4F7K2Q9MABD`. The OPAQUE password. Secret. */
  readonly code: string;
  /** Display form `XXXX-XXXX-XXX`, e.g. `4F7K-2Q9M-ABD`. Secret. */
  readonly formatted: string;
  /** The first two symbols, which pick the code among the cluster's live codes. Public. */
  readonly selector: string;
}

const N = CROCKFORD_ALPHABET.length; // 32

/**
 * The Luhn mod N sum of `symbols` (canonical), with the factor 2 on the rightmost symbol
 * when `doubleRightmost`, alternating leftwards. A doubled value d adds floor(d/N) + d mod N.
 */
function luhnSum(symbols: string, doubleRightmost: boolean): number {
  let sum = 0;
  let double = doubleRightmost;
  for (let i = symbols.length - 1; i >= 0; i--) {
    let value = symbolValue(symbols.charAt(i));
    if (double) {
      value *= 2;
      value = Math.floor(value / N) + (value % N);
    }
    sum += value;
    double = !double;
  }
  return sum % N;
}

/** True when 11 canonical symbols carry a correct check symbol: the Luhn sum, check included (factor 1), is 0 mod 32. */
function checks(code: string): boolean {
  return luhnSum(code, false) === 0;
}

/** `XXXX-XXXX-XXX` from 11 canonical symbols. */
function display(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4, 8)}-${code.slice(8)}`;
}

function build(code: string): JoinCode {
  return { code, formatted: display(code), selector: code.slice(0, 2) };
}

/**
 * The check symbol of 10 canonical data symbols: Luhn mod N with N = 32 over the Crockford
 * alphabet, factor 2 on the rightmost data symbol, alternating leftwards; a doubled value d
 * adds floor(d/32) + d mod 32; check = (32 − sum mod 32) mod 32. This is the plain Luhn mod N
 * reading; under it the seed example `4F7K-2Q9M-ABD` is valid (data `4F7K2Q9MAB`, check `D`).
 * @throws {JoinCodeError} `length` or `character` when `data10` is not 10 canonical symbols.
 */
export function computeCheckSymbol(data10: string): string {
  let position = 0;
  for (const character of data10) {
    position++;
    if (symbolValue(character) < 0) {
      throw new JoinCodeError(
        "character",
        `the character ${describeCharacter(character)} at position ${position} is not a canonical join-code symbol (upper-case Crockford base32)`,
        { position, character },
      );
    }
  }
  if (data10.length !== JOIN_CODE_DATA_LENGTH) {
    throw new JoinCodeError("length", `a join code's data is ${JOIN_CODE_DATA_LENGTH} symbols, not ${data10.length}`);
  }
  return symbolOf((N - luhnSum(data10, true)) % N);
}

/**
 * Reads a join code as a person types or pastes it. Case does not matter, dashes and white
 * space are ignored, `O` reads as `0`, `I` and `L` as `1`.
 *
 * Refusals, in this order, all {@link JoinCodeError} (`code` `JOIN_CODE_MALFORMED`):
 * - `empty`: nothing but separators;
 * - `character`: the first character outside the alphabet (including `U`), with its 1-based
 *   `position` in `input` (in code points) and the `character`;
 * - `length`: not 11 symbols;
 * - `check`: the check symbol does not match. When exactly one swap of two adjacent symbols
 *   makes the code valid, `suggestion` is that code's display form (for the person typing
 *   only: the message never carries it, and no serialisation of the error shows it). (Luhn
 *   mod 32 misses only the swaps `0Z` ↔ `Z0`.)
 */
export function parseJoinCode(input: string): JoinCode {
  if (typeof input !== "string") throw new JoinCodeError("empty", "no join code was given");
  const reading = readSymbols(input);
  if (!reading.ok) {
    const { position, character } = reading;
    throw new JoinCodeError(
      "character",
      `the character ${describeCharacter(character)} at position ${position} is not part of a join code (Crockford base32: 0-9 and A-Z without U)`,
      { position, character },
    );
  }
  const code = reading.symbols;
  if (code.length === 0) throw new JoinCodeError("empty", "no join code was given");
  if (code.length !== JOIN_CODE_LENGTH) {
    throw new JoinCodeError(
      "length",
      `a join code has ${JOIN_CODE_LENGTH} symbols (XXXX-XXXX-XXX), this one has ${code.length}`,
    );
  }
  if (!checks(code)) {
    const suggestion = uniqueSwapSuggestion(code);
    const base = "the join code's check symbol does not match";
    throw suggestion === undefined
      ? new JoinCodeError("check", `${base}: a symbol is mistyped`)
      : new JoinCodeError("check", `${base}: two adjacent symbols look swapped`, { suggestion });
  }
  return build(code);
}

/** The display form of the only valid code one adjacent swap makes of `code`, if exactly one does. */
function uniqueSwapSuggestion(code: string): string | undefined {
  let found: string | undefined;
  for (let i = 0; i + 1 < code.length; i++) {
    // swapping two equal symbols gives `code` back, which does not check
    const swapped = code.slice(0, i) + code.charAt(i + 1) + code.charAt(i) + code.slice(i + 2);
    if (!checks(swapped)) continue;
    if (found !== undefined) return undefined;
    found = swapped;
  }
  return found === undefined ? undefined : display(found);
}

/** True when `input` reads as a valid join code under {@link parseJoinCode}'s rules. Never throws. */
export function isJoinCode(input: string): boolean {
  try {
    parseJoinCode(input);
    return true;
  } catch {
    return false;
  }
}

/**
 * The display form `XXXX-XXXX-XXX` of a join code typed in any tolerated way.
 * @throws {JoinCodeError} as {@link parseJoinCode}.
 */
export function formatJoinCode(input: string): string {
  return parseJoinCode(input).formatted;
}

/**
 * A fresh join code: 10 symbols from 50 bits of `crypto.getRandomValues` (each 5-bit group is
 * one symbol, so every symbol is uniform without rejection), plus the check symbol. The caller
 * (the mint) draws again while the selector collides with a live code's.
 */
export function generateJoinCode(): JoinCode {
  const bytes = new Uint8Array(7); // 56 bits, of which the first 50 are used
  globalThis.crypto.getRandomValues(bytes);
  const data = encodeBase32Bits(bytes, JOIN_CODE_DATA_LENGTH);
  bytes.fill(0);
  return build(data + computeCheckSymbol(data));
}
