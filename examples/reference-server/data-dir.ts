/**
 * The founder's data directory: the database, the cluster CA (`ca/<stem>.key` 0600 and
 * `ca/<stem>.pem`), the OPAQUE server setup (0600), the cluster's secrets (0600), and on first
 * start the cluster itself: its id, settings and secrets, and the founder as its first member.
 * The secrets are files, not rows, so that the database holds no secret a joiner is given once
 * no join is running (a scan of its files finds none; store.ts scrubs a delivery's). Every
 * file is written durably (temp file, fsync, rename, directory fsync), so a crash during the
 * first start leaves no torn key behind.
 * @module
 */

import { X509Certificate as NodeX509Certificate } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createClusterCa, createServerSetup, writeFileDurably, type ClusterCa } from "@stratum/join/server";
import { bareIp, hostAt, inNetwork, parseCidr } from "./addresses.js";
import { DEFAULT_CLUSTER, type ClusterSettings } from "./config.js";
import {
  ClusterContext,
  DEFAULT_UPGRADE_RETRY_SECONDS,
  type ClusterOptions,
  type StoredCluster,
  type UpgradeState,
} from "./context.js";
import { networkBindings, nodeLabels, type ClusterSecrets } from "./delivery.js";
import { newClusterId, newNodeId, randomHex } from "./ids.js";
import type { MemberRow, StoredAssignment } from "./rows.js";
import { Store } from "./store.js";

/** Where the store keeps the CA's files: its fingerprint's first 16 hex digits name them. */
interface CaMeta {
  stem: string;
  fingerprint: string;
}

/**
 * Opens the data directory (made 0700), creating on first start the database, the cluster
 * CA, the OPAQUE server setup, the cluster's settings and secrets, and the founder as first
 * member.
 */
export async function openDataDir(options: ClusterOptions): Promise<ClusterContext> {
  // Made 0700 when it is made; an existing directory's mode is the owner's business (it may
  // be a directory that holds other things), while every secret file in it is 0600.
  if (!existsSync(options.dataDir)) mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  mkdirSync(join(options.dataDir, "ca"), { recursive: true, mode: 0o700 });
  const store = new Store(join(options.dataDir, "stratum.db"));
  try {
    const serverSetup = await readServerSetup(options.dataDir);
    const ca = await readCa(options.dataDir, store);
    const secrets = await readSecrets(options.dataDir, store);
    const stored = readCluster(store, options);
    return new ClusterContext(store, options, stored, secrets, ca, serverSetup);
  } catch (error) {
    store.close();
    throw error;
  }
}

async function readServerSetup(dataDir: string): Promise<string> {
  const path = join(dataDir, "opaque-server-setup");
  if (!existsSync(path)) await writeFileDurably(path, await createServerSetup(), { mode: 0o600 });
  return readFileSync(path, "utf8").trim();
}

async function readCa(dataDir: string, store: Store): Promise<ClusterCa> {
  let meta = store.getMeta<CaMeta>("ca");
  if (!meta) {
    const ca = await createClusterCa();
    const created: CaMeta = { stem: await writeCaFiles(dataDir, ca), fingerprint: ca.fingerprint };
    store.tx(() => {
      store.setMeta("ca", created);
      store.audit("system", "cluster.ca.created", "cluster", { caFingerprint: ca.fingerprint });
    });
    meta = created;
  }
  const certPem = readFileSync(join(dataDir, "ca", `${meta.stem}.pem`), "utf8");
  const keyPem = readFileSync(join(dataDir, "ca", `${meta.stem}.key`), "utf8");
  const certDer = new Uint8Array(new NodeX509Certificate(certPem).raw);
  return { certPem, keyPem, certDer, fingerprint: meta.fingerprint };
}

/** Writes a CA's key (0600) and certificate (0644) under `ca/`; returns the files' stem. */
async function writeCaFiles(dataDir: string, ca: ClusterCa): Promise<string> {
  const stem = ca.fingerprint.replace(/:/g, "").slice(0, 16).toLowerCase();
  await writeFileDurably(join(dataDir, "ca", `${stem}.key`), ca.keyPem, { mode: 0o600 });
  await writeFileDurably(join(dataDir, "ca", `${stem}.pem`), ca.certPem, { mode: 0o644 });
  return stem;
}

/**
 * The cluster's secrets a joiner adopts, from `cluster-secrets.json` (0600), made on first
 * start. A data directory of an older reference server kept them in the database: they are
 * moved to the file, and the row deleted and scrubbed from the database's files.
 */
async function readSecrets(dataDir: string, store: Store): Promise<ClusterSecrets> {
  const path = join(dataDir, "cluster-secrets.json");
  const inDatabase = store.getMeta<ClusterSecrets>("secrets");
  if (!existsSync(path)) {
    const secrets: ClusterSecrets = inDatabase ?? {
      postgresPassword: randomHex(24),
      adminPassword: randomHex(16),
      openBaoToken: `hvs.${randomHex(24)}`,
      dnsEncryptionKey: randomHex(32),
      openBaoUnsealKey: Buffer.from(randomHex(32), "hex").toString("base64"),
    };
    await writeFileDurably(path, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  }
  if (inDatabase) {
    store.tx(() => store.deleteMeta("secrets"));
    store.checkpoint();
  }
  return JSON.parse(readFileSync(path, "utf8")) as ClusterSecrets;
}

/** The cluster's id and settings; on first start, made with the founder as first member. */
function readCluster(store: Store, options: ClusterOptions): StoredCluster {
  const stored = store.getMeta<StoredCluster>("cluster");
  if (stored) return stored;
  const settings: ClusterSettings = { ...DEFAULT_CLUSTER, ...(options.cluster ?? {}) };
  const fresh: StoredCluster = { clusterId: newClusterId(), settings };
  const upgrade: UpgradeState = { inProgress: false, retryAfterSeconds: DEFAULT_UPGRADE_RETRY_SECONDS };
  store.tx(() => {
    store.setMeta("cluster", fresh);
    store.setMeta("generation", 1);
    store.setMeta("upgrade", upgrade);
    const member = founderMember(settings);
    store.putMember(member);
    store.audit("system", "cluster.created", fresh.clusterId, { founder: member.nodeId });
  });
  return fresh;
}

/**
 * The host number a founder takes in a network its configured address is not in (`.11`, `::b`):
 * the default cluster's founder is 192.0.2.11, 10.90.0.11 and 10.91.0.11, and a cluster
 * configured with other networks keeps the same shape.
 */
const FOUNDER_HOST = 11;

/** The founder's address in `cidr`: the configured one when it lies there, else host {@link FOUNDER_HOST}. */
function founderAddress(configured: string, cidr: string | undefined): string {
  const network = cidr === undefined ? undefined : parseCidr(cidr);
  if (!network || inNetwork(network, configured)) return bareIp(configured);
  return hostAt(network, FOUNDER_HOST);
}

/** The founder's data-link addresses, `ip/prefix`: one per CIDR of the storage and overlay networks. */
function founderDataAddresses(settings: ClusterSettings): string[] {
  const f = settings.founder;
  const out: string[] = [];
  for (const [net, configured] of [
    [settings.networks.storage, f.storageIp],
    [settings.networks.overlay, f.overlayIp],
  ] as const) {
    for (const cidr of [net.cidr, net.secondaryCidr]) {
      const network = cidr === undefined ? undefined : parseCidr(cidr);
      if (network) out.push(`${founderAddress(configured, cidr)}/${network.prefix}`);
    }
  }
  return out;
}

/** The founder as the first member: hybrid, one data link for storage and overlay, one disk. */
function founderMember(settings: ClusterSettings): MemberRow {
  const f = settings.founder;
  const nets = settings.networks;
  const mgmtIp = founderAddress(f.mgmtIp, settings.mgmtCidr);
  const assignment: StoredAssignment = {
    name: f.name,
    role: "hybrid",
    ...(f.rack ? { rack: f.rack } : {}),
    ...(f.az ? { az: f.az } : {}),
    mgmt: { interface: f.mgmtInterface, address: mgmtIp },
    links: [
      {
        name: "data",
        kind: "ethernet",
        interface: f.dataInterface,
        purposes: ["storage", "overlay"],
        addresses: founderDataAddresses(settings),
        mtu: Math.max(nets.storage.mtu ?? 1500, nets.overlay.mtu ?? 1500),
      },
    ],
    disks: [{ key: f.disk.key, role: f.disk.role }],
    diskNames: { [f.disk.key]: f.disk.name },
    provider: {
      topology: nets.providerTopology,
      ...(nets.providerUpstreamInterface ? { upstreamInterface: nets.providerUpstreamInterface } : {}),
      ...(nets.providerVlan !== undefined ? { vlan: nets.providerVlan } : {}),
    },
  };
  return {
    nodeId: newNodeId(),
    name: f.name,
    role: "hybrid",
    state: "active",
    mgmtIp,
    appliedGeneration: 1,
    joinedAt: Date.now(),
    joinId: null,
    az: f.az ?? null,
    labels: nodeLabels(assignment),
    networks: networkBindings(assignment, settings),
    assignment,
  };
}

/**
 * Rotates the cluster CA: a new CA (its files written before the switch is committed), every
 * live code ended (revoked by `system:ca-rotation`; a joiner is told `JOIN_CODE_STALE`).
 */
export async function rotateCa(
  context: ClusterContext,
  actor: string,
): Promise<{ caFingerprint: string; revokedCodes: number }> {
  const { store } = context;
  const ca = await createClusterCa();
  const stem = await writeCaFiles(context.options.dataDir, ca);
  const now = Date.now();
  const revoked = store.tx(() => {
    const live = store.liveCodes(now);
    for (const code of live) store.revokeCode(code.id, "system:ca-rotation", now);
    store.setMeta("ca", { stem, fingerprint: ca.fingerprint } satisfies CaMeta);
    store.audit(actor, "cluster.ca.rotated", "cluster", { caFingerprint: ca.fingerprint, revokedCodes: live.length });
    return live.length;
  });
  context.replaceCa(ca);
  return { caFingerprint: ca.fingerprint, revokedCodes: revoked };
}
