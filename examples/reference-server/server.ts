/**
 * Starts the reference server: the founder's admin API and its join listener, on real sockets,
 * with its state in a data directory. `main.ts` is the command; tests call
 * {@link startReferenceServer} directly (port 0 for both listeners).
 * @module
 */

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { issueNodeCertificate } from "@stratum/join/server";
import { adminRouter } from "./admin-api.js";
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

const ADMIN_DEFAULT = "127.0.0.1:8080";
const JOIN_DEFAULT = "127.0.0.1:9444";
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

/**
 * Starts a reference server.
 *
 * On first start in an empty data directory it makes the cluster CA, the OPAQUE server setup,
 * the cluster (a founder member, storage and overlay networks, secrets) and the bootstrap
 * admin token; later starts find them all again.
 */
export async function startReferenceServer(config: ReferenceServerConfig): Promise<ReferenceServer> {
  const log = config.log ?? stdoutLogger;
  const limits: Limits = { ...DEFAULT_LIMITS, ...(config.limits ?? {}) };
  const timing: Timing = { ...DEFAULT_TIMING, ...(config.timing ?? {}) };
  const clusterRelease = config.clusterRelease ?? "0.6.0";
  const admin = splitAddr(config.adminAddr ?? ADMIN_DEFAULT, 8080);
  const joinAddr = splitAddr(config.joinAddr ?? JOIN_DEFAULT, 9444);

  const cluster = await Cluster.open({
    dataDir: config.dataDir,
    clusterRelease,
    isoPath: config.isoPath ?? "/releases/stratum-{release}.iso",
    limits,
    timing,
    cluster: config.cluster,
    availability: () =>
      releaseAvailability(clusterRelease, { releaseDir: config.releaseDir, releaseMirror: config.releaseMirror }),
    faultHook: config.faultHook,
  });
  const { store } = cluster;

  // ---- the bootstrap admin token ----
  let adminToken: string;
  let adminTokenCreated = false;
  let adminTokenFile: string | undefined;
  if (config.adminToken) {
    adminToken = config.adminToken;
  } else {
    adminTokenFile = join(config.dataDir, "admin-token");
    if (existsSync(adminTokenFile)) {
      adminToken = readFileSync(adminTokenFile, "utf8").trim();
    } else {
      adminToken = newApiToken();
      writeFileSync(adminTokenFile, `${adminToken}\n`, { mode: 0o600 });
      adminTokenCreated = true;
    }
  }
  putToken(store, { id: "bootstrap-admin", name: "bootstrap-admin", token: adminToken, permissions: PERMISSIONS });

  // ---- the join listener ----
  const joinHosts = new Set<string>();
  if (isWildcard(joinAddr.host)) machineAddresses().forEach((a) => joinHosts.add(a));
  else joinHosts.add(joinAddr.host);
  if (isLoopbackHost(joinAddr.host) || isWildcard(joinAddr.host))
    ["localhost", "127.0.0.1", "::1"].forEach((h) => joinHosts.add(h));
  for (const h of config.joinHosts ?? []) joinHosts.add(h);
  if (cluster.settings.vips.api) joinHosts.add(cluster.settings.vips.api);
  if (config.joinEndpoint) joinHosts.add(splitAddr(config.joinEndpoint, 9444).host);

  let runner: Runner | undefined;
  const kickRunner = (): void => runner?.kick();
  const listener = new JoinListener({
    cluster,
    limits,
    timing,
    log,
    host: joinAddr.host,
    port: joinAddr.port,
    hosts: [...joinHosts],
    releaseDir: config.releaseDir,
    clusterRelease,
    kickRunner,
  });
  await listener.start();
  const advertisedHost = isWildcard(joinAddr.host)
    ? (machineAddresses().find((a) => isIP(a) === 4) ?? "127.0.0.1")
    : joinAddr.host;
  const defaultEndpoint = (): string => config.joinEndpoint ?? hostPort(advertisedHost, listener.port);

  // Any committed change may open or close the listener; coalesced, since changes come in bursts.
  let reconcilePending = false;
  const onChange = (): void => {
    if (reconcilePending) return;
    reconcilePending = true;
    setImmediate(() => {
      reconcilePending = false;
      listener
        .reconcile()
        .catch((error: Error) => log(`${new Date().toISOString()} join listener error ${error.message}`));
    });
  };
  store.on("change", onChange);

  // ---- the admin API ----
  const tls = !isLoopbackHost(admin.host);
  const adminLeaf = async (): Promise<{ cert: string; key: string }> => {
    const founder = store.listMembers()[0]!;
    const hosts = isWildcard(admin.host) ? machineAddresses() : [admin.host];
    const leaf = await issueNodeCertificate(cluster.ca, { nodeId: founder.nodeId, hosts });
    return { cert: `${leaf.certPem}${cluster.ca.certPem}`, key: leaf.keyPem! };
  };
  const handler = createRequestHandler({
    name: "admin",
    log,
    cors: corsPolicy(config.corsOrigins),
    router: adminRouter({
      cluster,
      bodyBytes: limits.bodyBytes,
      defaultEndpoint,
      ensureListener: () => listener.reconcile(),
      afterCaRotation: async () => {
        await listener.issueLeaf();
        if (adminServer && tls)
          (adminServer as HttpsServer).setSecureContext({ ...(await adminLeaf()), minVersion: "TLSv1.2" });
      },
      kickRunner,
    }),
  });
  let adminServer: HttpServer | HttpsServer | undefined;
  adminServer = tls
    ? createHttpsServer({ ...(await adminLeaf()), minVersion: "TLSv1.2" }, handler)
    : createHttpServer(handler);
  adminServer.keepAliveTimeout = 10_000;
  const server = adminServer;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(admin.port, admin.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    await listener.shutdown();
    store.off("change", onChange);
    cluster.close();
    throw error;
  }
  const adminPort = (server.address() as AddressInfo).port;
  const adminUrl = `${tls ? "https" : "http"}://${hostPort(isWildcard(admin.host) ? "127.0.0.1" : admin.host, adminPort)}`;

  // ---- the runner ----
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

  let closed: Promise<void> | undefined;
  return {
    adminUrl,
    get joinEndpoint() {
      return defaultEndpoint();
    },
    joinHost: joinAddr.host,
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
    adminToken,
    adminTokenCreated,
    adminTokenFile,
    dataDir: config.dataDir,
    cluster,
    store,
    createToken: (permissions, name) => createToken(store, permissions, name),
    rotateCa: async () => {
      const rotation = await cluster.rotateCa("bootstrap-admin");
      await listener.issueLeaf();
      if (tls) (server as HttpsServer).setSecureContext({ ...(await adminLeaf()), minVersion: "TLSv1.2" });
      return rotation;
    },
    setUpgrade: (inProgress, retryAfterSeconds) => {
      const state = cluster.setUpgrade("bootstrap-admin", { inProgress, retryAfterSeconds });
      runner?.kick();
      return state;
    },
    tick: async () => {
      await runner?.idle();
      runner?.kick();
      await runner?.idle();
    },
    close: () => {
      closed ??= (async () => {
        await runner?.stop();
        store.off("change", onChange);
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
