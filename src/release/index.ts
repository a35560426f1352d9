/**
 * Signed releases and the self-upgrade downloader (Node only; re-exported by the `./node`
 * entry): release keys, manifest tooling, verification, sources and the downloader.
 * @module
 */
export { ReleaseArgumentError, ReleaseDownloadError, ReleaseVerificationError } from "./errors.js";
export type { ReleaseDownloadFailure, ReleaseVerificationRule } from "./errors.js";
export { generateReleaseKeyPair, importReleasePrivateKey, importReleasePublicKey, releaseKeyId } from "./keys.js";
export type {
  ReleaseKeyPair,
  ReleasePrivateKeyInput,
  ReleasePublicKey,
  ReleasePublicKeyInput,
  ReleaseSigningKey,
} from "./keys.js";
export { preAuthEncoding, RELEASE_MANIFEST_PAYLOAD_TYPE } from "./dsse.js";
export type { DsseEnvelope, DsseSignature } from "./dsse.js";
export { buildReleaseManifest, signDsseEnvelope, signReleaseDirectory, signReleaseManifest } from "./manifest.js";
export type { ReleaseFile, ReleaseManifest, SignedReleaseDirectory } from "./manifest.js";
export {
  DEFAULT_RELEASE_LIMITS,
  RELEASE_MANIFEST_PATH,
  releasePathProblem,
  verifyReleaseDirectory,
  verifyReleaseManifest,
} from "./verify.js";
export type {
  ReleaseLimits,
  VerifiedReleaseManifest,
  VerifyReleaseDirectoryOptions,
  VerifyReleaseManifestOptions,
} from "./verify.js";
export { dispatcherSource, mirrorSource } from "./sources.js";
export type {
  DispatcherSourceOptions,
  MirrorSourceOptions,
  ReleaseFetchRequest,
  ReleaseFetchResponse,
  ReleaseResponseHeaders,
  ReleaseSource,
} from "./sources.js";
export { downloadRelease } from "./download.js";
export type {
  DownloadedRelease,
  DownloadedReleaseFile,
  DownloadReleaseOptions,
  ReleaseProgress,
  ReleaseRetryOptions,
  ReleaseUpgrade,
} from "./download.js";
