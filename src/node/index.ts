/**
 * `@stratum/join/node`: the Node-only joiner, for the installer's stage 1 and for scripts.
 * Machine identity, the code check and the registration (OPAQUE over one pinned TLS 1.3
 * connection), the registration's view (once, watched or awaited), progress reports, the
 * delivery, the hardware inventory, and the self-upgrade download.
 *
 * Everything browser-safe (join codes, errors, the admin client) is `@stratum/join`;
 * publishing releases (keys, signing, verifying a directory) is `@stratum/join/release`.
 * @module
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
  type JoinTarget,
  type ProveOptions,
  type CheckJoinCodeOptions,
  type CodeCheckResult,
  type RegisterMachineOptions,
  type RegisterResult,
} from "./joiner.js";
export { serializeJoinSession, parseJoinSession, type JoinSession } from "./join-session.js";
export {
  getRegistration,
  watchRegistration,
  waitForRegistration,
  reportProgress,
  type GetRegistrationOptions,
  type WatchRegistrationOptions,
  type WaitForRegistrationOptions,
} from "./registration.js";
export { writeDelivery, type WrittenDelivery } from "./delivery.js";
export {
  collectInventory,
  type CollectInventoryOptions,
  type RunCommand,
  type DiskHolder,
  type DiskPartition,
  type InventoryCpu,
  type InventoryDisk,
  type InventoryNic,
  type OsDiskLayout,
  type StackDevice,
} from "./inventory/index.js";
export { spkiFingerprint, caFingerprint } from "./pki.js";
export { downloadRelease, type JoinerDownloadReleaseOptions as DownloadReleaseOptions } from "./self-upgrade.js";
export type {
  DownloadedRelease,
  DownloadedReleaseFile,
  ReleaseProgress,
  ReleaseRetryOptions,
  ReleaseMinSpeed,
} from "../release/download/index.js";
export type {
  MirrorSourceOptions,
  ReleaseFetchRequest,
  ReleaseFetchResponse,
  ReleaseResponseHeaders,
  ReleaseSource,
} from "../release/sources.js";
export type { ReleaseLimits } from "../release/verify.js";
export type { ReleasePublicKeyInput } from "../release/keys.js";
export type { ReleaseFile, ReleaseManifest } from "../release/manifest.js";
export {
  JoinProtocolError,
  IdentityError,
  RegistrationEndedError,
  ReleaseVerificationError,
  ReleaseDownloadError,
  ReleaseArgumentError,
  type JoinProtocolErrorCode,
  type ListenerCertificateCheck,
  type ReleaseVerificationRule,
  type ReleaseDownloadFailure,
} from "../errors/index.js";
