/**
 * `@stratum/join`: the browser-safe core of the Stratum join SDK. Join codes and join URLs,
 * the pairing code, the join states, the errors every function throws, and the typed admin
 * client the console uses. Runs unchanged in a browser and in Node.
 *
 * Response validation (zod) is `@stratum/join/validate`, so a console that does not ask for
 * it bundles no zod. The Node-only joiner is `@stratum/join/node`; release publishing is
 * `@stratum/join/release`; the founder's half of the protocol is `@stratum/join/server`.
 * @module @stratum/join
 */

export { parseJoinCode, isJoinCode, formatJoinCode, generateJoinCode, type JoinCode } from "./core/join-code.js";
export {
  parseJoinUrl,
  formatJoinUrl,
  parseEndpoint,
  formatEndpoint,
  DEFAULT_JOIN_PORT,
  type JoinUrl,
  type JoinUrlParts,
  type JoinEndpoint,
} from "./core/join-url.js";
export { formatPairingCode, parsePairingCode } from "./core/pairing.js";
export {
  JOIN_STATES,
  FINAL_JOIN_STATES,
  WAITING_JOIN_STATES,
  RUNNING_JOIN_STATES,
  JOIN_ACTION_STATES,
  FOUNDER_STEP_NAMES,
  isFinalState,
  isFounderStepName,
  isJoinState,
  joinAllows,
  type JoinAction,
  type FounderStepName,
} from "./core/join-states.js";
export {
  StratumError,
  JoinCodeError,
  JoinUrlError,
  PairingCodeError,
  StratumApiError,
  ResponseValidationError,
  NetworkError,
  TimeoutError,
  RuntimeUnsupportedError,
  isAbortError,
  STRATUM_ERROR_CODES,
  type StratumErrorCode,
  type ListedStratumErrorCode,
  type StratumApiErrorCode,
  type HttpStatusErrorCode,
  type RuntimeFeature,
  type JoinCodeErrorReason,
  type JoinUrlErrorReason,
  type PairingCodeErrorReason,
  type FieldProblem,
  type ProblemBody,
  type ValidationIssue,
} from "./errors/index.js";
export { diskContents, osDiskLayoutOf, type DiskContents } from "./core/disks.js";
export { redact, REDACTED } from "./core/redact.js";
export { CLOCK_TOLERANCE_SECONDS, clockIsOff, clockWarning, describeClockOffset } from "./core/clock.js";
export {
  createAdminClient,
  watchJoins,
  type AdminClient,
  type AdminClientOptions,
  type CallOptions,
  type TokenProvider,
  type JoinChange,
  type WatchJoinsOptions,
  type ApiSchemas,
} from "./admin/index.js";
export type { JoinLister, JoinListPoll, PollNodeJoinsOptions } from "./admin/watch.js";
export type { BackoffOptions } from "./core/retry.js";
// Types only: the validator itself is in `@stratum/join/validate`.
export type { ResponseValidator, ValidationResult, AdminOperationId } from "./schemas/index.js";
export type {
  JoinCodeInfo,
  MintedJoinCode,
  JoinCodeState,
  NodeJoin,
  JoinState,
  Registration,
  Upgrade,
  Delivery,
  Bundle,
  ClusterNode,
  Inventory,
  ClockReport,
  Disk,
  Nic,
  Assignment,
  Link,
  DiskAssignment,
  ApprovalAssignment,
  Approval,
  Step,
  ProgressReport,
  CodeCheck,
  Member,
  MemberList,
  ClusterNetworks,
  Problem,
  FieldError,
  ProblemCode,
  JoinCapacity,
  NodeRole,
  components,
  operations,
  paths,
  Input,
} from "./types.js";
