/**
 * Every error `code` the SDK and its command throw, declared once: the table below, code →
 * the classes that carry it. {@link StratumErrorCode} and {@link STRATUM_ERROR_CODES} are made
 * from it, every error class's `code` is one of them, and `StratumError`'s constructor takes
 * nothing else, so a code written at a throw site that is not in the table does not compile.
 * `test/errors/codes.test.ts` holds the table to every code thrown in `src/`, to
 * docs/protocol.md#local-codes and to docs/errors.md; the API's codes to `openapi.yaml`.
 * @module
 */
import type { components } from "../../generated/api.js";

/** The classes a code is thrown as (`StratumError` itself for a code without a class of its own). */
type ErrorClassName =
  | "StratumError"
  | "JoinCodeError"
  | "JoinUrlError"
  | "PairingCodeError"
  | "StratumApiError"
  | "ResponseValidationError"
  | "NetworkError"
  | "TimeoutError"
  | "RuntimeUnsupportedError"
  | "JoinProtocolError"
  | "IdentityError"
  | "RegistrationEndedError"
  | "ReleaseVerificationError"
  | "ReleaseDownloadError"
  | "ReleaseArgumentError"
  | "SecretDestinationError"
  | "TpmError"
  | "CliError"
  | "StillWaitingError";

// Their meanings, and what a caller does about each: docs/errors.md; the rules behind them:
// docs/protocol.md#errors.
const ERROR_CODE_TABLE = {
  // The API's problem codes (openapi.yaml `ProblemCode`), answered by the founder.
  JOIN_CODE_INVALID: ["StratumApiError"],
  JOIN_BINDING_FAILED: ["StratumApiError"],
  JOIN_CODE_BUSY: ["StratumApiError"],
  JOIN_CODE_EXPIRED: ["StratumApiError"],
  JOIN_CODE_REVOKED: ["StratumApiError"],
  JOIN_CODE_STALE: ["StratumApiError"],
  JOIN_PAKE_RESTART: ["StratumApiError"],
  RELEASE_MISMATCH: ["StratumApiError"],
  REGISTRATION_REJECTED: ["StratumApiError"],
  RATE_LIMITED: ["StratumApiError"],
  UPGRADE_IN_PROGRESS: ["StratumApiError"],
  RELEASE_BUSY: ["StratumApiError"],
  INVALID_INPUT: ["StratumApiError"],
  JOIN_APPROVAL_REFUSED: ["StratumApiError"],
  JOIN_STATE_CONFLICT: ["StratumApiError"],
  RANGE_NOT_SATISFIABLE: ["StratumApiError"],
  UNAUTHORIZED: ["StratumApiError"],
  FORBIDDEN: ["StratumApiError"],
  NOT_FOUND: ["StratumApiError"],
  UNSUPPORTED_MEDIA_TYPE: ["StratumApiError"],
  STORAGE_UNAVAILABLE: ["StratumApiError"],
  INTERNAL: ["StratumApiError"],
  // Input refused locally, before anything is sent.
  JOIN_CODE_MALFORMED: ["JoinCodeError"],
  JOIN_URL_MALFORMED: ["JoinUrlError"],
  PAIRING_CODE_MALFORMED: ["PairingCodeError"],
  BASE64_MALFORMED: ["StratumError"],
  INVALID_ARGUMENT: ["StratumError", "ReleaseArgumentError"],
  // The join protocol could not go on safely.
  LISTENER_NOT_PROVEN: ["JoinProtocolError"],
  LISTENER_CERTIFICATE: ["JoinProtocolError"],
  BINDING_MISMATCH: ["JoinProtocolError"],
  CONNECTION_INTERCEPTED: ["JoinProtocolError"],
  PAIRING_MISMATCH: ["JoinProtocolError"],
  CONNECTION_CHANGED: ["JoinProtocolError"],
  TLS_FAILED: ["JoinProtocolError"],
  // No answer, or not one the SDK takes.
  NETWORK: ["NetworkError"],
  TIMEOUT: ["TimeoutError"],
  RESPONSE_INVALID: ["ResponseValidationError", "StratumError"],
  RESPONSE_TOO_LARGE: ["StratumError"],
  RUNTIME_UNSUPPORTED: ["RuntimeUnsupportedError"],
  // The machine's registration and its state on disk.
  REGISTRATION_ENDED: ["RegistrationEndedError", "StratumError"],
  IDENTITY_INVALID: ["IdentityError"],
  IDENTITY_MISMATCH: ["StratumError"],
  JOIN_SESSION_MISSING: ["StratumError"],
  JOIN_SESSION_INVALID: ["StratumError"],
  FILE_ERROR: ["StratumError", "CliError"],
  DELIVERY_WRITE_FAILED: ["StratumError"],
  SECRET_DESTINATION_MISSING: ["SecretDestinationError"],
  SECRET_DESTINATION_INVALID: ["SecretDestinationError"],
  SECRET_DESTINATION_FAILED: ["SecretDestinationError"],
  TPM_UNAVAILABLE: ["TpmError"],
  TPM_FAILED: ["TpmError"],
  INVENTORY_UNSUPPORTED: ["StratumError"],
  INVENTORY_FAILED: ["StratumError"],
  // Releases.
  RELEASE_UNVERIFIED: ["ReleaseVerificationError"],
  RELEASE_DOWNLOAD_FAILED: ["ReleaseDownloadError"],
  // The `stratum-join` command's own (its `--json` error documents carry them too).
  USAGE: ["CliError"],
  NO_UPGRADE: ["CliError"],
  STILL_WAITING: ["StillWaitingError"],
} as const satisfies Record<string, readonly ErrorClassName[]>;

/** A code of the table: every code but `HTTP_<status>`. */
type ListedErrorCode = keyof typeof ERROR_CODE_TABLE;

/**
 * The code of a refusal that came without a problem document: `HTTP_` and the status
 * (`HTTP_502`). The one code that is not in {@link STRATUM_ERROR_CODES}.
 */
export type HttpStatusErrorCode = `HTTP_${number}`;

/**
 * Every `code` a {@link StratumError} can carry: the API's problem codes (openapi.yaml
 * `ProblemCode`), the SDK's own (docs/protocol.md#local-codes), those of the `stratum-join`
 * command (`USAGE`, `NO_UPGRADE`, `STILL_WAITING`), and {@link HttpStatusErrorCode}. A
 * `switch` over it is checked by the compiler: with a `case` for each listed code, what is left
 * in `default` is `HTTP_${number}`, so a code added in a later version fails the caller's
 * build where it assigns that to an `HttpStatusErrorCode` (or `never` after its own test for
 * `HTTP_`). At run time a newer founder may answer a problem code this version does not know;
 * it reaches the same `default`. docs/errors.md says what each code means and what to do.
 */
export type StratumErrorCode = ListedErrorCode | HttpStatusErrorCode;

/** The codes of a {@link StratumApiError}: the API's problem codes and {@link HttpStatusErrorCode}. */
export type StratumApiErrorCode = components["schemas"]["ProblemCode"] | HttpStatusErrorCode;

/** Every listed code, in the order docs/errors.md groups them: all of {@link StratumErrorCode} but `HTTP_<status>`. */
export const STRATUM_ERROR_CODES: readonly ListedErrorCode[] = Object.freeze(
  Object.keys(ERROR_CODE_TABLE) as ListedErrorCode[],
);

/**
 * The codes the table gives `className`.
 * @internal
 */
export type ErrorCodeOf<C extends ErrorClassName> = {
  [K in ListedErrorCode]: C extends (typeof ERROR_CODE_TABLE)[K][number] ? K : never;
}[ListedErrorCode];

/**
 * The classes each code is thrown as, for the test that holds the table to the throw sites.
 * @internal
 */
export const errorCodeClasses: Readonly<Record<ListedErrorCode, readonly ErrorClassName[]>> = ERROR_CODE_TABLE;
