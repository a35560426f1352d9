/**
 * `@stratum/join/node`: the Node-only joiner, for the installer's stage 1 and for scripts.
 * Machine identity, the code check and the registration (OPAQUE over one pinned TLS 1.3
 * connection), watching and waiting for the registration, progress reports, the delivery,
 * the hardware inventory, and signed self-upgrade.
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
  watchRegistration,
  waitForRegistration,
  reportProgress,
  RegistrationEndedError,
  FINAL_STATES,
  type WatchRegistrationOptions,
  type WaitForRegistrationOptions,
} from "./registration.js";
export { writeDelivery, concealSecrets, type WrittenDelivery } from "./delivery.js";
export { collectInventory, type CollectInventoryOptions } from "./inventory/index.js";
export {
  JoinProtocolError,
  IdentityError,
  type JoinProtocolErrorCode,
  type ListenerCertificateCheck,
} from "./errors.js";
export { spkiFingerprint, caFingerprint } from "./pki.js";
export * from "../release/index.js";
// The joiner's downloadRelease also takes the join session and identity, for a served release.
export { downloadRelease, type JoinerDownloadReleaseOptions } from "./self-upgrade.js";
export { founderReleaseSource } from "./founder-source.js";
