/**
 * `@stratum/join/release`: for whoever publishes releases. Release keys (Ed25519; the key id
 * is the hex SHA-256 of the raw public key), signing a release directory (its manifest as a
 * DSSE envelope), and verifying a manifest or a whole directory exactly as a joiner does.
 * Node only. Joiners download with `downloadRelease` of `@stratum/join/node`.
 * @module @stratum/join/release
 */
export {
  generateReleaseKeyPair,
  importReleasePublicKey,
  releaseKeyId,
  type ReleaseKeyPair,
  type ReleasePublicKey,
  type ReleasePublicKeyInput,
  type ReleasePrivateKeyInput,
} from "./keys.js";
export { RELEASE_MANIFEST_PAYLOAD_TYPE, type DsseEnvelope, type DsseSignature } from "./dsse.js";
export {
  signReleaseDirectory,
  signReleaseManifest,
  type ReleaseFile,
  type ReleaseManifest,
  type SignedReleaseDirectory,
} from "./manifest.js";
export {
  verifyReleaseManifest,
  verifyReleaseDirectory,
  type ReleaseLimits,
  type VerifiedReleaseManifest,
  type VerifyReleaseDirectoryOptions,
  type VerifyReleaseManifestOptions,
} from "./verify.js";
export {
  StratumError,
  STRATUM_ERROR_CODES,
  type StratumErrorCode,
  type ListedStratumErrorCode,
  type HttpStatusErrorCode,
  ReleaseVerificationError,
  ReleaseArgumentError,
  type ReleaseVerificationRule,
} from "../errors/index.js";
