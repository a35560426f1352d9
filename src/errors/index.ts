/**
 * Every error the SDK throws is a {@link StratumError}: a caller branches on the class or on
 * its `code`, never on the message. Messages never carry a join code, a token, a key or any
 * field the API marks sensitive. One file per family; this index names them all.
 * @module
 */
export { StratumError, isAbortError } from "./stratum-error.js";
export {
  STRATUM_ERROR_CODES,
  type StratumErrorCode,
  type ListedStratumErrorCode,
  type StratumApiErrorCode,
  type HttpStatusErrorCode,
} from "./codes.js";
export {
  JoinCodeError,
  JoinUrlError,
  PairingCodeError,
  type JoinCodeErrorReason,
  type JoinUrlErrorReason,
  type PairingCodeErrorReason,
} from "./input.js";
export {
  StratumApiError,
  ResponseValidationError,
  type FieldProblem,
  type ProblemBody,
  type ValidationIssue,
} from "./api.js";
export { NetworkError, TimeoutError } from "./transport.js";
export { RuntimeUnsupportedError, runtimeName, type RuntimeFeature } from "./runtime.js";
export {
  JoinProtocolError,
  IdentityError,
  RegistrationEndedError,
  UnprovenRefusalError,
  type JoinProtocolErrorCode,
  type UnprovenRefusalStep,
  type ListenerCertificateCheck,
} from "./join.js";
export {
  ReleaseVerificationError,
  ReleaseDownloadError,
  ReleaseArgumentError,
  type ReleaseVerificationRule,
  type ReleaseDownloadFailure,
} from "./release.js";
export { SecretDestinationError, TpmError, type SecretDestinationErrorCode, type TpmErrorReason } from "./secrets.js";
