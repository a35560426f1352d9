/**
 * Input refused locally, before anything reaches the network: a join code, a join URL or
 * endpoint, a pairing code. A typo never costs a PAKE attempt. Messages name the position and
 * the character that is wrong, never a code.
 * @module
 */
import { StratumError } from "./stratum-error.js";

/** Why a join code was refused locally, before any network call. */
export type JoinCodeErrorReason = "empty" | "length" | "character" | "check";

// The suggestion is a join code, a secret: it is kept off the error object itself, so
// `JSON.stringify`, `util.inspect`, `console.log` and structured logging never see it, and is
// read through the class's getter by code that shows it to the person who typed the code.
const suggestions = new WeakMap<JoinCodeError, string>();
// What the inspector is shown instead of a JoinCodeError: a class named the same (the property
// name gives the class expression its name), without the suggestion getter.
const ShownJoinCodeError = { JoinCodeError: class extends StratumError {} }.JoinCodeError;

/**
 * A join code that is not well formed. Thrown by `parseJoinCode` before anything reaches the
 * network, so a typo never costs a PAKE attempt. The message never carries a join code; with a
 * swap of two adjacent symbols, the corrected code is {@link JoinCodeError.suggestion}, which
 * no serialisation of the error shows.
 */
export class JoinCodeError extends StratumError {
  /** Always `JOIN_CODE_MALFORMED`. */
  declare readonly code: "JOIN_CODE_MALFORMED";
  /** What is wrong: nothing typed, the wrong number of symbols, a symbol outside the alphabet, or a failed check symbol. */
  readonly reason: JoinCodeErrorReason;
  /** With `character`: the 1-based position in the input of the offending character. */
  readonly position: number | undefined;
  /** With `character`: the offending character. */
  readonly character: string | undefined;

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
    if (extra.suggestion !== undefined) suggestions.set(this, extra.suggestion);
  }

  /**
   * With `check`: the display form of the one code that a single adjacent swap makes valid,
   * if there is exactly one. It is a join code, a secret: show it only to the person typing
   * (a terminal, a form), never log it. It is not an own property of the error, so
   * `JSON.stringify(error)`, `util.inspect(error)` and `console.log(error)` do not show it.
   */
  get suggestion(): string | undefined {
    return suggestions.get(this);
  }

  /**
   * What `util.inspect` and `console.log` show: the error as it is, without the suggestion,
   * which Node's inspector would otherwise list (as a getter of the class) with `showHidden`.
   */
  [Symbol.for("nodejs.util.inspect.custom")](
    _depth: number,
    options: unknown,
    inspect: (value: unknown, options: unknown) => string,
  ): string {
    // The same own properties (stack, message, code, reason, …) on an object of a class of
    // the same name that has no suggestion getter.
    const shown = Object.create(ShownJoinCodeError.prototype) as Record<string, unknown>;
    for (const key of Reflect.ownKeys(this)) {
      Object.defineProperty(shown, key, Object.getOwnPropertyDescriptor(this, key)!);
    }
    return inspect(shown, options);
  }
}

/** What is wrong with a join URL or endpoint. */
export type JoinUrlErrorReason = "empty" | "scheme" | "host" | "port" | "path";

/**
 * A join URL or join endpoint that is not well formed (`code` `JOIN_URL_MALFORMED`). A
 * malformed code inside a well-formed URL is a {@link JoinCodeError} instead.
 */
export class JoinUrlError extends StratumError {
  /** Always `JOIN_URL_MALFORMED`. */
  declare readonly code: "JOIN_URL_MALFORMED";
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
  /** Always `PAIRING_CODE_MALFORMED`. */
  declare readonly code: "PAIRING_CODE_MALFORMED";
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
