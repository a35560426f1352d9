/**
 * `@stratum/join/node`: the Node-only joiner, for the installer's stage 1 and for scripts.
 * Machine identity and the machine directory that keeps it on disk, the code check and the
 * registration (OPAQUE over one pinned TLS 1.3 connection), the registration's view (once,
 * watched or awaited), progress reports, the delivery and where its secrets go (the OpenBao
 * unseal key sealed to the TPM), the hardware inventory, and the self-upgrade download.
 *
 * Everything browser-safe (join codes, errors, the admin client) is `@stratum/join`;
 * publishing releases (keys, signing, verifying a directory) is `@stratum/join/release`.
 * @module @stratum/join/node
 */

export {
  createMachineIdentity,
  loadMachineIdentity,
  createThrowawayIdentity,
  type MachineIdentity,
  type IdentityAlgorithm,
} from "./identity.js";
export {
  checkJoinCode,
  registerMachine,
  DEFAULT_JOIN_TIMEOUT_MS,
  type JoinTarget,
  type ProveOptions,
  type CheckJoinCodeOptions,
  type CodeCheckResult,
  type RegisterMachineOptions,
  type RegisterResult,
} from "./join-calls.js";
export { serializeJoinSession, parseJoinSession, type JoinSession } from "./join-session.js";
export { CLOCK_TOLERANCE_SECONDS } from "../protocol/founder-time.js";
export { openMachineDirectory, type MachineDirectory, type OpenMachineDirectoryOptions } from "./machine-dir.js";
export {
  getRegistration,
  watchRegistration,
  waitForRegistration,
  reportProgress,
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_POLL_MARGIN_MS,
  type GetRegistrationOptions,
  type ReportProgressOptions,
  type WatchRegistrationOptions,
  type WaitForRegistrationOptions,
} from "./registration.js";
export { writeDelivery, type WriteDeliveryOptions, type WrittenDelivery } from "./delivery.js";
export type {
  SecretDestinations,
  SecretDestination,
  SecretFileDestination,
  SecretEnvDestination,
  SecretCommandDestination,
  SecretTpmDestination,
  SecretCallback,
  SecretCallbackContext,
  PlacedSecret,
} from "./secret-destinations.js";
export { unsealSecret, type TpmOptions, type UnsealedSecret } from "./tpm.js";
export {
  collectInventory,
  type CollectInventoryOptions,
  type RunCommand,
  type Inventory as CollectedInventory,
  type DiskHolder,
  type DiskPartition,
  type InventoryClock,
  type InventoryCpu,
  type InventoryDisk,
  type InventoryNic,
  type OsDiskLayout,
  type StackDevice,
} from "./inventory/index.js";
export { spkiFingerprint, caFingerprint } from "../protocol/pki.js";
export { downloadRelease, type JoinerDownloadReleaseOptions as DownloadReleaseOptions } from "./self-upgrade.js";
export type {
  DownloadReleaseOptions as ReleaseDownloaderOptions,
  DownloadedRelease,
  DownloadedReleaseFile,
  ReleaseProgress,
  ReleaseRetryOptions,
  ReleaseMinSpeed,
} from "../transport/download/index.js";
export type {
  DispatcherSourceOptions,
  MirrorSourceOptions,
  ReleaseFetchRequest,
  ReleaseFetchResponse,
  ReleaseResponseHeaders,
  ReleaseSource,
} from "../transport/sources.js";
export type { ReleaseLimits } from "../release/verify.js";
export type { ReleasePublicKeyInput } from "../release/keys.js";
export type { ReleaseFile, ReleaseManifest } from "../release/manifest.js";
export type { BackoffOptions } from "../core/retry.js";
export type {
  CodeCheck,
  Registration,
  JoinState,
  ProgressReport,
  Delivery,
  Inventory,
  Upgrade,
  components,
  Input,
} from "../types.js";
// The errors the joiner throws, including those it shares with the root entry (the same
// classes: `instanceof` works whichever entry a caller imports them from).
export {
  StratumError,
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
  JoinProtocolError,
  IdentityError,
  RegistrationEndedError,
  UnprovenRefusalError,
  ReleaseVerificationError,
  ReleaseDownloadError,
  ReleaseArgumentError,
  SecretDestinationError,
  TpmError,
  type SecretDestinationErrorCode,
  type TpmErrorReason,
  type JoinProtocolErrorCode,
  type ListenerCertificateCheck,
  type UnprovenRefusalStep,
  type RuntimeFeature,
  type ReleaseVerificationRule,
  type ReleaseDownloadFailure,
  type FieldProblem,
  type ProblemBody,
  type ValidationIssue,
} from "../errors/index.js";
