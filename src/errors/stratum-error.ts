/**
 * The base of every error the SDK throws, and the abort test every waiting function uses.
 * @module
 */

import type { StratumErrorCode } from "./codes.js";

const BRAND = Symbol.for("stratum.join.error");

/**
 * The base of every error the SDK throws. `code` is stable and meant to be branched on:
 * for API refusals it is the problem code of the spec (`JOIN_CODE_EXPIRED`, …), for local
 * failures one of the SDK's own codes (`JOIN_CODE_MALFORMED`, `NETWORK`, …).
 */
export class StratumError extends Error {
  /** A stable, machine-readable code, one of {@link StratumErrorCode}; docs/errors.md lists them. */
  readonly code: StratumErrorCode;

  constructor(code: StratumErrorCode, message: string, options?: { cause?: unknown }) {
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

/**
 * True for a caller's abort as the SDK re-throws it: every function that waits re-throws the
 * abort as is, the signal's `reason`. Without `signal`: true for an error named `AbortError`
 * (the DOMException of `controller.abort()` with no reason). With `signal`: also true when
 * `error` is that aborted signal's own reason, whatever it is (`controller.abort(myReason)`,
 * `AbortSignal.timeout()`'s `TimeoutError` DOMException).
 */
export function isAbortError(error: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted && error === signal.reason) return true;
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === "AbortError";
}
