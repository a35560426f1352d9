/**
 * Input refused locally, before anything reaches the network: a join code, a join URL or
 * endpoint, a pairing code. A typo never costs a PAKE attempt. Messages name the position and
 * the character that is wrong, never the code itself.
 * @module
 */
import { StratumError } from "./stratum-error.js";

/** Why a join code was refused locally, before any network call. */
export type JoinCodeErrorReason = "empty" | "length" | "character" | "check";

/**
 * A join code that is not well formed. Thrown by `parseJoinCode` before anything reaches the
 * network, so a typo never costs a PAKE attempt. The message never repeats the code itself,
 * except as the suggestion of an adjacent swap that makes it valid.
 */
export class JoinCodeError extends StratumError {
  /** What is wrong: nothing typed, the wrong number of symbols, a symbol outside the alphabet, or a failed check symbol. */
  readonly reason: JoinCodeErrorReason;
  /** With `character`: the 1-based position in the input of the offending character. */
  readonly position: number | undefined;
  /** With `character`: the offending character. */
  readonly character: string | undefined;
  /** With `check`: the display form of the one code that a single adjacent swap makes valid, if there is exactly one. */
  readonly suggestion: string | undefined;

  constructor(
    reason: JoinCodeErrorReason,
    message: string,
    extra: { position?: number; character?: string; suggestion?: string } = {},
  ) {
    super("JOIN_CODE_MALFORMED", message);
    this.name = "JoinCodeError";
    this.reason = reason;
    this.position = extra.position;
    this.character = extra.character;
    this.suggestion = extra.suggestion;
  }
}

/** What is wrong with a join URL or endpoint. */
export type JoinUrlErrorReason = "empty" | "scheme" | "host" | "port" | "path";

/**
 * A join URL or join endpoint that is not well formed (`code` `JOIN_URL_MALFORMED`). A
 * malformed code inside a well-formed URL is a {@link JoinCodeError} instead.
 */
export class JoinUrlError extends StratumError {
  /** Which part is wrong: nothing given, the scheme, the host, the port, or the path (no code, or more than a code). */
  readonly reason: JoinUrlErrorReason;

  constructor(reason: JoinUrlErrorReason, message: string) {
    super("JOIN_URL_MALFORMED", message);
    this.name = "JoinUrlError";
    this.reason = reason;
  }
}

/** Why a pairing code was refused. */
export type PairingCodeErrorReason = "empty" | "length" | "character";

/** A pairing code that is not well formed (`code` `PAIRING_CODE_MALFORMED`). */
export class PairingCodeError extends StratumError {
  /** What is wrong: nothing given, not 6 symbols, or a character outside the alphabet. */
  readonly reason: PairingCodeErrorReason;
  /** With `character`: the 1-based position (in code points) of the offending character. */
  readonly position: number | undefined;
  /** With `character`: the offending character. */
  readonly character: string | undefined;

  constructor(reason: PairingCodeErrorReason, message: string, extra: { position?: number; character?: string } = {}) {
    super("PAIRING_CODE_MALFORMED", message);
    this.name = "PairingCodeError";
    this.reason = reason;
    this.position = extra.position;
    this.character = extra.character;
  }
}
