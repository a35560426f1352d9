/**
 * `@stratum/join`: the browser-safe core of the Stratum join SDK. Join codes and join URLs,
 * the pairing code, the errors every function throws, the typed admin client the console
 * uses, and opt-in response validation. Runs unchanged in a browser and in Node.
 *
 * The Node-only joiner (identity, pinned TLS, OPAQUE, registration, releases) is
 * `@stratum/join/node`.
 * @module
 */

export {
  parseJoinCode,
  isJoinCode,
  formatJoinCode,
  generateJoinCode,
  JOIN_CODE_LENGTH,
  type JoinCode,
} from "./core/join-code.js";
export {
  parseJoinUrl,
  formatJoinUrl,
  parseEndpoint,
  formatEndpoint,
  DEFAULT_JOIN_PORT,
  JoinUrlError,
  type JoinUrl,
  type JoinUrlParts,
  type JoinEndpoint,
  type JoinUrlErrorReason,
} from "./core/join-url.js";
export {
  derivePairingCode,
  formatPairingCode,
  parsePairingCode,
  PairingCodeError,
  type PairingCodeErrorReason,
} from "./core/pairing.js";
export {
  StratumError,
  JoinCodeError,
  StratumApiError,
  ResponseValidationError,
  NetworkError,
  TimeoutError,
  isAbortError,
  type JoinCodeErrorReason,
  type FieldProblem,
  type ProblemBody,
  type ValidationIssue,
} from "./errors/index.js";
export { redact, REDACTED } from "./core/redact.js";
export { parseRetryAfter } from "./core/retry.js";
export {
  createAdminClient,
  watchJoins,
  diffJoins,
  type AdminClient,
  type AdminClientOptions,
  type CallOptions,
  type TokenProvider,
  type JoinChange,
  type WatchJoinsOptions,
} from "./admin/index.js";
export { validateResponses, type ResponseValidator, type ValidationResult } from "./schemas/index.js";
export type * from "./types.js";
