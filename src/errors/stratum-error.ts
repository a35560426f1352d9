/**
 * The base of every error the SDK throws, and the abort test every waiting function uses.
 * @module
 */

const BRAND = Symbol.for("stratum.join.error");

/**
 * The base of every error the SDK throws. `code` is stable and meant to be branched on:
 * for API refusals it is the problem code of the spec (`JOIN_CODE_EXPIRED`, …), for local
 * failures one of the SDK's own codes (`JOIN_CODE_MALFORMED`, `NETWORK`, …).
 */
export class StratumError extends Error {
  /** A stable, machine-readable code; see the README's error table. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StratumError";
    this.code = code;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /**
   * True for any error of the SDK, also one made by another copy of the SDK or in another
   * realm (an iframe, a worker, a vm context), where `instanceof` fails.
   */
  static is(value: unknown): value is StratumError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** True for the error an aborted `AbortSignal` throws (a DOMException `AbortError`, or the signal's own reason). */
export function isAbortError(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "AbortError";
}
