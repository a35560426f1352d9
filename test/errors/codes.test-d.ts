// Error codes a caller can branch on, held at the type level: a switch over `e.code` with a
// case for every listed code leaves only `HTTP_${number}`, one without a case does not, and
// every class's `code` is the table's codes for that class (src/errors/codes.ts).
import { expectTypeOf, test } from "vitest";
import type { components } from "../../generated/api.js";
import type { ErrorCodeOf } from "../../src/errors/codes.js";
import {
  type JoinCodeError,
  type JoinProtocolError,
  type JoinUrlError,
  type IdentityError,
  type NetworkError,
  type PairingCodeError,
  type RegistrationEndedError,
  type ReleaseArgumentError,
  type ReleaseDownloadError,
  type ReleaseVerificationError,
  type ResponseValidationError,
  type RuntimeUnsupportedError,
  type SecretDestinationError,
  type StratumApiError,
  StratumError,
  type TimeoutError,
  type TpmError,
  type STRATUM_ERROR_CODES,
  type HttpStatusErrorCode,
  type StratumApiErrorCode,
  type StratumErrorCode,
} from "../../src/errors/index.js";

/** A switch with a case for every listed code: what reaches `default` is `HTTP_${number}`. */
function exhaustive(e: StratumError): string {
  switch (e.code) {
    case "JOIN_CODE_INVALID":
    case "JOIN_BINDING_FAILED":
    case "JOIN_CODE_BUSY":
    case "JOIN_CODE_EXPIRED":
    case "JOIN_CODE_REVOKED":
    case "JOIN_CODE_STALE":
    case "JOIN_PAKE_RESTART":
    case "RELEASE_MISMATCH":
    case "REGISTRATION_REJECTED":
    case "RATE_LIMITED":
    case "UPGRADE_IN_PROGRESS":
    case "RELEASE_BUSY":
    case "INVALID_INPUT":
    case "JOIN_APPROVAL_REFUSED":
    case "JOIN_STATE_CONFLICT":
    case "RANGE_NOT_SATISFIABLE":
    case "UNAUTHORIZED":
    case "FORBIDDEN":
    case "NOT_FOUND":
    case "METHOD_NOT_ALLOWED":
    case "UNSUPPORTED_MEDIA_TYPE":
    case "STORAGE_UNAVAILABLE":
    case "INTERNAL":
    case "JOIN_CODE_MALFORMED":
    case "JOIN_URL_MALFORMED":
    case "PAIRING_CODE_MALFORMED":
    case "BASE64_MALFORMED":
    case "INVALID_ARGUMENT":
    case "LISTENER_NOT_PROVEN":
    case "LISTENER_CERTIFICATE":
    case "BINDING_MISMATCH":
    case "CONNECTION_INTERCEPTED":
    case "REFUSAL_UNPROVEN":
    case "PAIRING_MISMATCH":
    case "CONNECTION_CHANGED":
    case "TLS_FAILED":
    case "NETWORK":
    case "TIMEOUT":
    case "RESPONSE_INVALID":
    case "RESPONSE_TOO_LARGE":
    case "RUNTIME_UNSUPPORTED":
    case "REGISTRATION_ENDED":
    case "IDENTITY_INVALID":
    case "IDENTITY_MISMATCH":
    case "JOIN_SESSION_MISSING":
    case "JOIN_SESSION_INVALID":
    case "FILE_ERROR":
    case "DELIVERY_WRITE_FAILED":
    case "SECRET_DESTINATION_MISSING":
    case "SECRET_DESTINATION_INVALID":
    case "SECRET_DESTINATION_FAILED":
    case "TPM_UNAVAILABLE":
    case "TPM_FAILED":
    case "INVENTORY_UNSUPPORTED":
    case "INVENTORY_FAILED":
    case "RELEASE_UNVERIFIED":
    case "RELEASE_DOWNLOAD_FAILED":
    case "USAGE":
    case "NO_UPGRADE":
    case "STILL_WAITING":
      return e.code;
    default: {
      const rest: HttpStatusErrorCode = e.code;
      return rest;
    }
  }
}

/** The same switch without `TIMEOUT`: `default` is no longer only `HTTP_${number}`. */
function missingOne(e: StratumError): string {
  switch (e.code) {
    case "JOIN_CODE_INVALID":
    case "JOIN_BINDING_FAILED":
    case "JOIN_CODE_BUSY":
    case "JOIN_CODE_EXPIRED":
    case "JOIN_CODE_REVOKED":
    case "JOIN_CODE_STALE":
    case "JOIN_PAKE_RESTART":
    case "RELEASE_MISMATCH":
    case "REGISTRATION_REJECTED":
    case "RATE_LIMITED":
    case "UPGRADE_IN_PROGRESS":
    case "RELEASE_BUSY":
    case "INVALID_INPUT":
    case "JOIN_APPROVAL_REFUSED":
    case "JOIN_STATE_CONFLICT":
    case "RANGE_NOT_SATISFIABLE":
    case "UNAUTHORIZED":
    case "FORBIDDEN":
    case "NOT_FOUND":
    case "METHOD_NOT_ALLOWED":
    case "UNSUPPORTED_MEDIA_TYPE":
    case "STORAGE_UNAVAILABLE":
    case "INTERNAL":
    case "JOIN_CODE_MALFORMED":
    case "JOIN_URL_MALFORMED":
    case "PAIRING_CODE_MALFORMED":
    case "BASE64_MALFORMED":
    case "INVALID_ARGUMENT":
    case "LISTENER_NOT_PROVEN":
    case "LISTENER_CERTIFICATE":
    case "BINDING_MISMATCH":
    case "CONNECTION_INTERCEPTED":
    case "REFUSAL_UNPROVEN":
    case "PAIRING_MISMATCH":
    case "CONNECTION_CHANGED":
    case "TLS_FAILED":
    case "NETWORK":
    case "RESPONSE_INVALID":
    case "RESPONSE_TOO_LARGE":
    case "RUNTIME_UNSUPPORTED":
    case "REGISTRATION_ENDED":
    case "IDENTITY_INVALID":
    case "IDENTITY_MISMATCH":
    case "JOIN_SESSION_MISSING":
    case "JOIN_SESSION_INVALID":
    case "FILE_ERROR":
    case "DELIVERY_WRITE_FAILED":
    case "SECRET_DESTINATION_MISSING":
    case "SECRET_DESTINATION_INVALID":
    case "SECRET_DESTINATION_FAILED":
    case "TPM_UNAVAILABLE":
    case "TPM_FAILED":
    case "INVENTORY_UNSUPPORTED":
    case "INVENTORY_FAILED":
    case "RELEASE_UNVERIFIED":
    case "RELEASE_DOWNLOAD_FAILED":
    case "USAGE":
    case "NO_UPGRADE":
    case "STILL_WAITING":
      return e.code;
    default: {
      // @ts-expect-error: TIMEOUT has no case, so it reaches here
      const rest: HttpStatusErrorCode = e.code;
      return rest;
    }
  }
}

test("a switch over StratumErrorCode is checked for every code", () => {
  expectTypeOf(exhaustive).returns.toEqualTypeOf<string>();
  expectTypeOf(missingOne).returns.toEqualTypeOf<string>();
  expectTypeOf<Exclude<StratumErrorCode, (typeof STRATUM_ERROR_CODES)[number]>>().toEqualTypeOf<HttpStatusErrorCode>();
  expectTypeOf<StratumError["code"]>().toEqualTypeOf<StratumErrorCode>();
});

test("StratumError takes only a listed code", () => {
  new StratumError("INVALID_ARGUMENT", "fine");
  new StratumError("HTTP_502", "fine");
  // @ts-expect-error: not a code of the SDK
  new StratumError("NOT_A_CODE", "refused");
  // @ts-expect-error: a plain string is not a code
  new StratumError("INVALID_ARGUMENT" as string, "refused");
});

test("each class's code is the table's codes for it", () => {
  expectTypeOf<JoinCodeError["code"]>().toEqualTypeOf<ErrorCodeOf<"JoinCodeError">>();
  expectTypeOf<JoinUrlError["code"]>().toEqualTypeOf<ErrorCodeOf<"JoinUrlError">>();
  expectTypeOf<PairingCodeError["code"]>().toEqualTypeOf<ErrorCodeOf<"PairingCodeError">>();
  expectTypeOf<ResponseValidationError["code"]>().toEqualTypeOf<ErrorCodeOf<"ResponseValidationError">>();
  expectTypeOf<NetworkError["code"]>().toEqualTypeOf<ErrorCodeOf<"NetworkError">>();
  expectTypeOf<TimeoutError["code"]>().toEqualTypeOf<ErrorCodeOf<"TimeoutError">>();
  expectTypeOf<RuntimeUnsupportedError["code"]>().toEqualTypeOf<ErrorCodeOf<"RuntimeUnsupportedError">>();
  expectTypeOf<JoinProtocolError["code"]>().toEqualTypeOf<ErrorCodeOf<"JoinProtocolError">>();
  expectTypeOf<IdentityError["code"]>().toEqualTypeOf<ErrorCodeOf<"IdentityError">>();
  expectTypeOf<RegistrationEndedError["code"]>().toEqualTypeOf<ErrorCodeOf<"RegistrationEndedError">>();
  expectTypeOf<ReleaseVerificationError["code"]>().toEqualTypeOf<ErrorCodeOf<"ReleaseVerificationError">>();
  expectTypeOf<ReleaseDownloadError["code"]>().toEqualTypeOf<ErrorCodeOf<"ReleaseDownloadError">>();
  expectTypeOf<ReleaseArgumentError["code"]>().toEqualTypeOf<ErrorCodeOf<"ReleaseArgumentError">>();
  expectTypeOf<SecretDestinationError["code"]>().toEqualTypeOf<ErrorCodeOf<"SecretDestinationError">>();
  expectTypeOf<TpmError["code"]>().toEqualTypeOf<ErrorCodeOf<"TpmError">>();
  expectTypeOf<StratumApiError["code"]>().toEqualTypeOf<StratumApiErrorCode>();
});

test("the API's codes are exactly openapi.yaml's ProblemCode, in both directions", () => {
  expectTypeOf<ErrorCodeOf<"StratumApiError">>().toEqualTypeOf<components["schemas"]["ProblemCode"]>();
  expectTypeOf<StratumApiErrorCode>().toEqualTypeOf<
    components["schemas"]["ProblemCode"] | "REFUSAL_UNPROVEN" | HttpStatusErrorCode
  >();
});
