/**
 * Every error `code` the SDK and its command throw, declared once: {@link STRATUM_ERROR_CODES}
 * below. {@link StratumErrorCode} is made from it, every error class's `code` is one of them,
 * and `StratumError`'s constructor takes nothing else, so a code written at a throw site that is
 * not listed does not compile. `test/errors/codes.test.ts` holds the list to every code thrown
 * in `src/` (and the classes it is thrown as), to docs/protocol.md#local-codes and to
 * docs/errors.md; `test/errors/codes.test-d.ts` the API's codes to `openapi.yaml`.
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
  | "UnprovenRefusalError"
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

/**
 * The API's problem codes (openapi.yaml `ProblemCode`), answered by the founder: the first part
 * of {@link STRATUM_ERROR_CODES}, and what the problem schema (`src/schemas/problem.ts`) accepts.
 * @internal
 */
export const PROBLEM_CODES = [
  "JOIN_CODE_INVALID",
  "JOIN_BINDING_FAILED",
  "JOIN_CODE_BUSY",
  "JOIN_CODE_EXPIRED",
  "JOIN_CODE_REVOKED",
  "JOIN_CODE_STALE",
  "JOIN_PAKE_RESTART",
  "RELEASE_MISMATCH",
  "REGISTRATION_REJECTED",
  "RATE_LIMITED",
  "UPGRADE_IN_PROGRESS",
  "RELEASE_BUSY",
  "INVALID_INPUT",
  "JOIN_APPROVAL_REFUSED",
  "JOIN_STATE_CONFLICT",
  "RANGE_NOT_SATISFIABLE",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "UNSUPPORTED_MEDIA_TYPE",
  "STORAGE_UNAVAILABLE",
  "INTERNAL",
] as const;

/**
 * Every listed code: all of {@link StratumErrorCode} but `HTTP_<status>`, grouped as
 * docs/errors.md groups them. What each means and what a caller does about it: docs/errors.md;
 * the rules behind them: docs/protocol.md#errors.
 */
export const STRATUM_ERROR_CODES = [
  ...PROBLEM_CODES,
  // Input refused locally, before anything is sent.
  "JOIN_CODE_MALFORMED",
  "JOIN_URL_MALFORMED",
  "PAIRING_CODE_MALFORMED",
  "BASE64_MALFORMED",
  "INVALID_ARGUMENT",
  // The join protocol could not go on safely.
  "LISTENER_NOT_PROVEN",
  "LISTENER_CERTIFICATE",
  "BINDING_MISMATCH",
  "CONNECTION_INTERCEPTED",
  "REFUSAL_UNPROVEN",
  "PAIRING_MISMATCH",
  "CONNECTION_CHANGED",
  "TLS_FAILED",
  // No answer, or not one the SDK takes.
  "NETWORK",
  "TIMEOUT",
  "RESPONSE_INVALID",
  "RESPONSE_TOO_LARGE",
  "RUNTIME_UNSUPPORTED",
  // The machine's registration and its state on disk.
  "REGISTRATION_ENDED",
  "IDENTITY_INVALID",
  "IDENTITY_MISMATCH",
  "JOIN_SESSION_MISSING",
  "JOIN_SESSION_INVALID",
  "FILE_ERROR",
  "DELIVERY_WRITE_FAILED",
  "SECRET_DESTINATION_MISSING",
  "SECRET_DESTINATION_INVALID",
  "SECRET_DESTINATION_FAILED",
  "TPM_UNAVAILABLE",
  "TPM_FAILED",
  "INVENTORY_UNSUPPORTED",
  "INVENTORY_FAILED",
  // Releases.
  "RELEASE_UNVERIFIED",
  "RELEASE_DOWNLOAD_FAILED",
  // The `stratum-join` command's own (its `--json` error documents carry them too).
  "USAGE",
  "NO_UPGRADE",
  "STILL_WAITING",
] as const;

/** A listed code: every {@link StratumErrorCode} but `HTTP_<status>`, one of {@link STRATUM_ERROR_CODES}. */
export type ListedStratumErrorCode = (typeof STRATUM_ERROR_CODES)[number];

/**
 * The classes each code is thrown as: a key for every listed code and no other (the compiler
 * holds it to the list), for the class types below and the test that reads the throw sites.
 * @internal
 */
export const errorCodeClasses = {
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
  METHOD_NOT_ALLOWED: ["StratumApiError"],
  UNSUPPORTED_MEDIA_TYPE: ["StratumApiError"],
  STORAGE_UNAVAILABLE: ["StratumApiError"],
  INTERNAL: ["StratumApiError"],
  JOIN_CODE_MALFORMED: ["JoinCodeError"],
  JOIN_URL_MALFORMED: ["JoinUrlError"],
  PAIRING_CODE_MALFORMED: ["PairingCodeError"],
  BASE64_MALFORMED: ["StratumError"],
  INVALID_ARGUMENT: ["StratumError", "ReleaseArgumentError"],
  LISTENER_NOT_PROVEN: ["JoinProtocolError"],
  LISTENER_CERTIFICATE: ["JoinProtocolError"],
  BINDING_MISMATCH: ["JoinProtocolError"],
  CONNECTION_INTERCEPTED: ["JoinProtocolError"],
  REFUSAL_UNPROVEN: ["UnprovenRefusalError"],
  PAIRING_MISMATCH: ["JoinProtocolError"],
  CONNECTION_CHANGED: ["JoinProtocolError"],
  TLS_FAILED: ["JoinProtocolError"],
  NETWORK: ["NetworkError"],
  TIMEOUT: ["TimeoutError"],
  RESPONSE_INVALID: ["ResponseValidationError", "StratumError"],
  RESPONSE_TOO_LARGE: ["StratumError"],
  RUNTIME_UNSUPPORTED: ["RuntimeUnsupportedError"],
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
  RELEASE_UNVERIFIED: ["ReleaseVerificationError"],
  RELEASE_DOWNLOAD_FAILED: ["ReleaseDownloadError"],
  USAGE: ["CliError"],
  NO_UPGRADE: ["CliError"],
  STILL_WAITING: ["StillWaitingError"],
} as const satisfies Record<ListedStratumErrorCode, readonly ErrorClassName[]>;

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
export type StratumErrorCode = ListedStratumErrorCode | HttpStatusErrorCode;

/**
 * The codes of a {@link StratumApiError}: the API's problem codes, {@link HttpStatusErrorCode},
 * and `REFUSAL_UNPROVEN`, which only an `UnprovenRefusalError` carries (a refusal from a join
 * listener not proven yet, that a founder never sends there: docs/protocol.md#unproven).
 */
export type StratumApiErrorCode = components["schemas"]["ProblemCode"] | "REFUSAL_UNPROVEN" | HttpStatusErrorCode;

/**
 * The codes thrown as the class `C`.
 * @internal
 */
export type ErrorCodeOf<C extends ErrorClassName> = {
  [K in ListedStratumErrorCode]: C extends (typeof errorCodeClasses)[K][number] ? K : never;
}[ListedStratumErrorCode];
