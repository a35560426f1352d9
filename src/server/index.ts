/**
 * `@stratum/join/server`: the founder's half of the join protocol, for anyone building a
 * founder (or a test double of one) in TypeScript. The reference server in
 * `examples/reference-server` is built on exactly this entry.
 *
 * - OPAQUE: the cluster's server setup, the registration record made at mint (the only thing
 *   stored of a code), and the listener's two login steps, with the protocol's parameters.
 * - The cluster PKI: the root CA, the join listener's leaf (with the listener role) and node
 *   transport leaves.
 * - The listener's TLS: TLS 1.3 only, client certificates, no session tickets; the client
 *   key's fingerprint and the TLS exporter of a socket.
 * - Channel binding and the pairing code, the same functions the joiner uses.
 * - Durable writes, for the founder's secrets and state files.
 *
 * Node only. docs/protocol.md says what each step must do and why.
 * @module @stratum/join/server
 */
export {
  createServerSetup,
  createJoinCodeRecord,
  startServerLogin,
  finishServerLogin,
  type ServerLoginStart,
} from "./opaque.js";
export {
  createClusterCa,
  issueListenerCertificate,
  issueNodeCertificate,
  type ClusterCa,
  type IssuedCertificate,
  type IssuedCertificateForKey,
  type NodeCertificateOptions,
} from "./ca.js";
export { tlsServerOptions, disableSessionTickets, peerKeyFingerprint } from "./tls.js";
export { tlsExporter } from "../protocol/tls-exporter.js";
export { caFingerprint, spkiFingerprint, LISTENER_ROLE_URI, NODE_ROLE_URI_PREFIX } from "../protocol/pki.js";
export { opaqueIdentifiers } from "../protocol/opaque.js";
export {
  deriveBindingKeys,
  bindingTranscript,
  serverBinding,
  verifyBinding,
  derivePairingCode,
  formatPairingCode,
  type BindingKeys,
  type BindingTranscriptInput,
} from "../core/pairing.js";
export { randomCrockford } from "../core/base32.js";
export { writeFileDurably, type DurableWriteOptions } from "../fs/durable.js";
