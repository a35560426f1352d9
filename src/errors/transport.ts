/**
 * No answer came: the connection failed ({@link NetworkError}) or a deadline of the SDK ran
 * out ({@link TimeoutError}).
 * @module
 */
import { StratumError } from "./stratum-error.js";

/** The request never got an answer: refused, reset, DNS, TLS. The cause is the transport's error. */
export class NetworkError extends StratumError {
  /** Always `NETWORK`. */
  declare readonly code: "NETWORK";

  constructor(message: string, options?: { cause?: unknown }) {
    super("NETWORK", message, options);
    this.name = "NetworkError";
  }
}

/** A wait of the SDK's own (a `timeoutMs`) ran out. Aborts through a caller's signal are re-thrown as they are, not as this. */
export class TimeoutError extends StratumError {
  /** Always `TIMEOUT`. */
  declare readonly code: "TIMEOUT";

  constructor(message: string, options?: { cause?: unknown }) {
    super("TIMEOUT", message, options);
    this.name = "TimeoutError";
  }
}
