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
export { JoinProtocolError, IdentityError, type JoinProtocolErrorCode, type ListenerCertificateCheck } from "./errors.js";
export { spkiFingerprint, caFingerprint } from "./pki.js";
export * from "../release/index.js";
