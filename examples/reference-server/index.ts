/**
 * The reference server: the founder's admin API and join listener, for tests, demos and a
 * console team's local development. See README.md.
 * @module
 */

export { startReferenceServer, type ReferenceServer } from "./server.js";
export {
  DEFAULT_CLUSTER,
  DEFAULT_LIMITS,
  DEFAULT_TIMING,
  type ClusterSettings,
  type Limits,
  type ReferenceServerConfig,
  type Timing,
} from "./config.js";
export { PERMISSIONS, type Permission } from "./auth.js";
export { ListenError } from "./listen-error.js";
