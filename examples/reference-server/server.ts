/**
 * Starts the reference server: the founder's admin API and its join listener, on real sockets,
 * with its state in a data directory. `main.ts` is the command; tests call
 * {@link startReferenceServer} directly (port 0 for both listeners).
 * @module
 */

import { existsSync, readFileSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { disableSessionTickets, issueNodeCertificate, writeFileDurably } from "@stratum/join/server";
import { adminRouter, type AdminDeps } from "./admin-api.js";
import { PERMISSIONS, createToken, putToken, type Permission } from "./auth.js";
import { Cluster, type UpgradeState } from "./cluster.js";
import {
  DEFAULT_LIMITS,
  DEFAULT_TIMING,
  isLoopbackHost,
  splitAddr,
  type Limits,
  type ReferenceServerConfig,
  type Timing,
} from "./config.js";
import { createRequestHandler, type CorsPolicy, type Logger } from "./http.js";
import { answerClientErrors } from "./http-client-errors.js";
import { ListenError } from "./listen-error.js";
import { newApiToken } from "./ids.js";
import { JoinListener } from "./join-listener.js";
import { releaseAvailability } from "./release-serving.js";
import { Runner } from "./runner.js";
import type { Store } from "./store.js";

/** A running reference server. */
export interface ReferenceServer {
  /** The admin API's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly adminUrl: string;
  /** The join listener as a mint names it by default, `host:port`, e.g. `127.0.0.1:9444`. */
  readonly joinEndpoint: string;
  /** The join listener's host (as bound). */
  readonly joinHost: string;
  /** The join listener's port (stable across its closing and reopening). */
  readonly joinPort: number;
  /** True while the join listener listens (a live code, or a registration not final). */
  readonly joinListenerOpen: boolean;
  /** The cluster root CA, PEM (changes on {@link ReferenceServer.rotateCa}). */
  readonly caPem: string;
  /** The cluster root CA's fingerprint, colon hex. */
  readonly caFingerprint: string;
  /** The bootstrap admin token (every permission). Secret. */
  readonly adminToken: string;
  /** True when this start generated the admin token (main.ts prints it, once). */
  readonly adminTokenCreated: boolean;
  /** Where the token file is, when the token is kept in the data directory. */
  readonly adminTokenFile: string | undefined;
  /** The data directory. */
  readonly dataDir: string;
  /** The founder's state (for tests: the store, the audit trail). */
  readonly cluster: Cluster;
  /** The database. */
  readonly store: Store;
  /** Makes a token with exactly these permissions; returns it (seen only here). */
  createToken(permissions: readonly Permission[], name?: string): string;
  /** Rotates the cluster CA (as `POST /v1/admin/cluster/ca-rotations`). */
  rotateCa(): Promise<{ caFingerprint: string; revokedCodes: number }>;
  /** Marks an upgrade in progress or over (as `PUT /v1/admin/cluster/upgrade`). */
  setUpgrade(inProgress: boolean, retryAfterSeconds?: number): UpgradeState;
  /** Runs a pass of the join runner now and waits for it (expiry, delivery, listener). */
  tick(): Promise<void>;
  /** Stops both listeners and the runner and closes the database. */
  close(): Promise<void>;
}

/** The admin API listens on loopback unless told otherwise: a token on the LAN is the operator's choice. */
const ADMIN_DEFAULT = "127.0.0.1:8080";
/** The join listener's port is the protocol's (a join URL without a port means 9444). */
const JOIN_DEFAULT = "127.0.0.1:9444";
/** The release a cluster runs when the configuration names none (the demo's and the tests'). */
export const DEFAULT_CLUSTER_RELEASE = "0.6.0";
/**
 * How long an idle admin connection stays open: longer than the pause of watchJoins's fallback
 * poll (2 s), so a console keeps one; its long polls keep it busy anyway.
 */
const ADMIN_KEEP_ALIVE_MS = 10_000;
/** Browser origins on this machine (any port) may call the admin API: a console in local development. */
const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/i;

const isWildcard = (host: string): boolean => host === "0.0.0.0" || host === "::" || host === "";

function machineAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a): a is NonNullable<typeof a> => a !== undefined && !a.internal)
    .map((a) => a.address);
}

function hostPort(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

function corsPolicy(origins: ReferenceServerConfig["corsOrigins"]): CorsPolicy {
  return {
    allows: (origin) =>
      origins === "*" || LOOPBACK_ORIGIN.test(origin) || (Array.isArray(origins) && origins.includes(origin)),
  };
}

const stdoutLogger: Logger = (line) => process.stdout.write(`${line}\n`);

/** The cluster in the data directory, with the configuration's limits, durations and release (defaults filled in). */
async function openCluster(
  config: ReferenceServerConfig,
): Promise<{ cluster: Cluster; limits: Limits; timing: Timing; clusterRelease: string }> {
  const limits: Limits = { ...DEFAULT_LIMITS, ...(config.limits ?? {}) };
  const timing: Timing = { ...DEFAULT_TIMING, ...(config.timing ?? {}) };
  const clusterRelease = config.clusterRelease ?? DEFAULT_CLUSTER_RELEASE;
  const cluster = await Cluster.open({
    dataDir: config.dataDir,
    clusterRelease,
    isoPath: config.isoPath ?? "/releases/stratum-{release}.iso",
    limits,
    timing,
    cluster: config.cluster,
    openBaoMode: config.openBaoMode ?? "single-instance",
    availability: () =>
      releaseAvailability(clusterRelease, { releaseDir: config.releaseDir, releaseMirror: config.releaseMirror }),
    faultHook: config.faultHook,
  });
  return { cluster, limits, timing, clusterRelease };
}

/** The bootstrap admin token: the configured one, else the data directory's, else a new one written there (0600). */
async function bootstrapAdminToken(
  config: ReferenceServerConfig,
): Promise<{ adminToken: string; adminTokenCreated: boolean; adminTokenFile: string | undefined }> {
  if (config.adminToken) return { adminToken: config.adminToken, adminTokenCreated: false, adminTokenFile: undefined };
  const adminTokenFile = join(config.dataDir, "admin-token");
  if (existsSync(adminTokenFile)) {
    return { adminToken: readFileSync(adminTokenFile, "utf8").trim(), adminTokenCreated: false, adminTokenFile };
  }
  const adminToken = newApiToken();
  await writeFileDurably(adminTokenFile, `${adminToken}\n`, { mode: 0o600 });
  return { adminToken, adminTokenCreated: true, adminTokenFile };
}

/**
 * The API VIP, when the join listener answers on it: the mint's default endpoint (spec:
 * JoinCodeRequest.endpoint, "Default: the API VIP"). In a cluster every control-plane member
 * opens the listener and keepalived puts the VIP on one of them, so the VIP always reaches a
 * listener; the reference server is a one-member cluster, and a VIP this machine does not hold
 * reaches nothing, so a mint then names the listener's own address instead.
 */
function apiVipServed(cluster: Cluster, joinHost: string): string | undefined {
  const vip = cluster.settings.vips.api;
  if (!vip) return undefined;
  const bare = vip.replace(/^\[|\]$/g, "");
  if (bare === joinHost) return bare;
  if (isWildcard(joinHost) && (machineAddresses().includes(bare) || isLoopbackHost(bare))) return bare;
  return undefined;
}

/** The names the join listener's leaf carries: its bind address (every address on a wildcard), loopback names, the API VIP, the configured extras. */
function joinListenerHosts(config: ReferenceServerConfig, joinHost: string, cluster: Cluster): string[] {
  const hosts = new Set<string>();
  if (isWildcard(joinHost)) machineAddresses().forEach((a) => hosts.add(a));
  else hosts.add(joinHost);
  if (isLoopbackHost(joinHost) || isWildcard(joinHost)) ["localhost", "127.0.0.1", "::1"].forEach((h) => hosts.add(h));
  for (const h of config.joinHosts ?? []) hosts.add(h);
  if (cluster.settings.vips.api) hosts.add(cluster.settings.vips.api);
  if (config.joinEndpoint) hosts.add(splitAddr(config.joinEndpoint, 9444).host);
  return [...hosts];
}

/**
 * Opens or closes the listener after any committed change (coalesced, since changes come in
 * bursts). Returns the function that stops it.
 */
function reconcileOnChange(store: Store, listener: JoinListener, log: Logger): () => void {
  let pending = false;
  const onChange = (): void => {
    if (pending) return;
    pending = true;
    setImmediate(() => {
      pending = false;
      listener
        .reconcile()
        .catch((error: Error) => log(`${new Date().toISOString()} join listener error ${error.message}`));
    });
  };
  store.on("change", onChange);
  return () => store.off("change", onChange);
}

/** A listening admin API. */
interface AdminServer {
  server: HttpServer | HttpsServer;
  url: string;
  /** Gives the HTTPS server a leaf of the current CA (after a rotation); nothing on plain HTTP. */
  reissueLeaf(): Promise<void>;
}

/** Starts the admin API on `admin`: plain HTTP on loopback, else HTTPS with a cluster-CA leaf for its address. */
async function startAdminServer(options: {
  cluster: Cluster;
  admin: { host: string; port: number };
  config: ReferenceServerConfig;
  log: Logger;
  deps: Omit<AdminDeps, "cluster" | "afterCaRotation"> & { afterCaRotation: () => Promise<void> };
}): Promise<AdminServer> {
  const { cluster, admin } = options;
  const tls = !isLoopbackHost(admin.host);
  // TLS 1.3 only and no session tickets, as the join listener: every suite is AEAD with forward
  // secrecy, and no ticket key in memory can decrypt a recorded session (a bearer token in it).
  const leaf = async (): Promise<{ cert: string; key: string; minVersion: "TLSv1.3" }> => {
    const founder = cluster.store.listMembers()[0]!;
    const hosts = isWildcard(admin.host) ? machineAddresses() : [admin.host];
    const issued = await issueNodeCertificate(cluster.ca, { nodeId: founder.nodeId, hosts });
    return { cert: `${issued.certPem}${cluster.ca.certPem}`, key: issued.keyPem!, minVersion: "TLSv1.3" };
  };
  const handler = createRequestHandler({
    name: "admin",
    log: options.log,
    cors: corsPolicy(options.config.corsOrigins),
    router: adminRouter({ cluster, ...options.deps }),
  });
  const server = tls ? createHttpsServer(await leaf(), handler) : createHttpServer(handler);
  if (tls) disableSessionTickets(server as HttpsServer);
  server.keepAliveTimeout = ADMIN_KEEP_ALIVE_MS;
  answerClientErrors(server, { name: "admin", log: options.log });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error): void => {
      server.off("listening", listening);
      reject(new ListenError("admin API", hostPort(admin.host, admin.port), "STRATUM_ADMIN_ADDR", error));
    };
    const listening = (): void => void (server.off("error", failed), resolve());
    server.once("error", failed).once("listening", listening).listen(admin.port, admin.host);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    url: `${tls ? "https" : "http"}://${hostPort(isWildcard(admin.host) ? "127.0.0.1" : admin.host, port)}`,
    reissueLeaf: async () => {
      if (tls) (server as HttpsServer).setSecureContext(await leaf());
    },
  };
}

/**
 * Starts a reference server.
 *
 * On first start in an empty data directory it makes the cluster CA, the OPAQUE server setup,
 * the cluster (a founder member, storage and overlay networks, secrets) and the bootstrap
 * admin token; later starts find them all again.
 */
export async function startReferenceServer(config: ReferenceServerConfig): Promise<ReferenceServer> {
  const log = config.log ?? stdoutLogger;
  const { cluster, limits, timing, clusterRelease } = await openCluster(config);
  const admin = splitAddr(config.adminAddr ?? ADMIN_DEFAULT, 8080);
  const joinAddr = splitAddr(config.joinAddr ?? JOIN_DEFAULT, 9444);
  const { store } = cluster;
  const token = await bootstrapAdminToken(config);
  putToken(store, {
    id: "bootstrap-admin",
    name: "bootstrap-admin",
    token: token.adminToken,
    permissions: PERMISSIONS,
  });

  let runner: Runner | undefined;
  const kickRunner = (): void => runner?.kick();
  const listener = new JoinListener({
    cluster,
    limits,
    timing,
    log,
    host: joinAddr.host,
    port: joinAddr.port,
    hosts: joinListenerHosts(config, joinAddr.host, cluster),
    releaseDir: config.releaseDir,
    clusterRelease,
    kickRunner,
  });
  try {
    await listener.start();
  } catch (error) {
    await listener.shutdown();
    cluster.close();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" || code === "EADDRNOTAVAIL" || code === "EACCES")
      throw new ListenError("join listener", hostPort(joinAddr.host, joinAddr.port), "STRATUM_JOIN_ADDR", error);
    throw error;
  }
  const advertisedHost = isWildcard(joinAddr.host)
    ? (machineAddresses().find((a) => isIP(a) === 4) ?? "127.0.0.1")
    : joinAddr.host;
  const defaultEndpoint = (): string =>
    config.joinEndpoint ?? hostPort(apiVipServed(cluster, joinAddr.host) ?? advertisedHost, listener.port);
  const stopReconciling = reconcileOnChange(store, listener, log);

  // Both TLS leaves chain to the CA: a rotation re-issues them.
  let adminServer: AdminServer | undefined;
  const reissueLeaves = async (): Promise<void> => {
    await listener.issueLeaf();
    await adminServer?.reissueLeaf();
  };
  try {
    adminServer = await startAdminServer({
      cluster,
      admin,
      config,
      log,
      deps: {
        bodyBytes: limits.bodyBytes,
        defaultEndpoint,
        ensureListener: () => listener.reconcile(),
        afterCaRotation: reissueLeaves,
        kickRunner,
      },
    });
  } catch (error) {
    await listener.shutdown();
    stopReconciling();
    cluster.close();
    throw error;
  }

  runner = new Runner({
    cluster,
    tickMs: timing.tickMs,
    log,
    afterTick: async () => {
      listener.prune();
      await listener.reconcile();
    },
  });
  runner.start();

  return serverHandle({
    config,
    cluster,
    listener,
    runner,
    adminServer,
    token,
    joinHost: joinAddr.host,
    defaultEndpoint,
    reissueLeaves,
    stopReconciling,
  });
}

/** The running server's handle, over its parts. */
function serverHandle(parts: {
  config: ReferenceServerConfig;
  cluster: Cluster;
  listener: JoinListener;
  runner: Runner;
  adminServer: AdminServer;
  token: Awaited<ReturnType<typeof bootstrapAdminToken>>;
  joinHost: string;
  defaultEndpoint: () => string;
  reissueLeaves: () => Promise<void>;
  stopReconciling: () => void;
}): ReferenceServer {
  const { cluster, listener, runner } = parts;
  const { server } = parts.adminServer;
  const { store } = cluster;
  let closed: Promise<void> | undefined;
  return {
    adminUrl: parts.adminServer.url,
    get joinEndpoint() {
      return parts.defaultEndpoint();
    },
    joinHost: parts.joinHost,
    get joinPort() {
      return listener.port;
    },
    get joinListenerOpen() {
      return listener.isOpen;
    },
    get caPem() {
      return cluster.ca.certPem;
    },
    get caFingerprint() {
      return cluster.ca.fingerprint;
    },
    ...parts.token,
    dataDir: parts.config.dataDir,
    cluster,
    store,
    createToken: (permissions, name) => createToken(store, permissions, name),
    rotateCa: async () => {
      const rotation = await cluster.rotateCa("bootstrap-admin");
      await parts.reissueLeaves();
      return rotation;
    },
    setUpgrade: (inProgress, retryAfterSeconds) => {
      const state = cluster.setUpgrade("bootstrap-admin", { inProgress, retryAfterSeconds });
      runner.kick();
      return state;
    },
    tick: async () => {
      await runner.idle();
      runner.kick();
      await runner.idle();
    },
    close: () => {
      closed ??= (async () => {
        await runner.stop();
        parts.stopReconciling();
        await listener.shutdown();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        cluster.close();
      })();
      return closed;
    },
  };
}
