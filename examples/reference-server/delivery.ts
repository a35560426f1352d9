/**
 * What an approved joiner receives when its turn comes: its node.yaml, built from the
 * assignment, and the join bundle with the cluster's identity and secrets and its transport
 * leaf. Built once per delivery, stored with the join (the database is 0600) and answered only
 * over the channel pinned to the joiner's key.
 * @module
 */

import { stringify } from "yaml";
import { osDiskLayoutOf, type Bundle, type ClusterNode, type Delivery, type Inventory } from "@stratum/join";
import { bareIp, inNetwork, parseCidr } from "./addresses.js";
import type { ClusterSettings } from "./config.js";
import type { MemberRow, StoredAssignment } from "./rows.js";

/** The cluster's secrets a joiner adopts, generated once per cluster. */
export interface ClusterSecrets {
  postgresPassword: string;
  adminPassword: string;
  openBaoToken: string;
  dnsEncryptionKey: string;
  openBaoUnsealKey: string;
}

/** The storage and overlay bindings of an assignment: which address on which interface. */
export function networkBindings(
  assignment: StoredAssignment,
  settings: ClusterSettings,
): Record<string, { ip: string; interface?: string }> {
  const out: Record<string, { ip: string; interface?: string }> = {};
  for (const purpose of ["storage", "overlay"] as const) {
    const cidr = parseCidr(settings.networks[purpose].cidr);
    for (const link of assignment.links ?? []) {
      if (!(link.purposes ?? []).includes(purpose)) continue;
      const address = (link.addresses ?? []).map(bareIp).find((ip) => cidr && inNetwork(cidr, ip));
      if (address) out[purpose] = { ip: address, interface: link.interface };
    }
  }
  return out;
}

/** The labels a node declares: `topology.rack` from the assignment (the AZ rides `az`). */
export function nodeLabels(assignment: StoredAssignment): Record<string, string> {
  return assignment.rack ? { "topology.rack": assignment.rack } : {};
}

/** A member as a joiner peers with it. */
export function clusterNode(member: MemberRow): ClusterNode {
  return {
    nodeId: member.nodeId,
    role: member.role,
    ...(member.az ? { az: member.az } : {}),
    ...(member.mgmtIp ? { mgmtIp: member.mgmtIp } : {}),
    networks: member.networks,
    labels: member.labels,
  };
}

/**
 * node.yaml for the joiner: its identity, network connections, disks and the cluster it joins.
 *
 * - `ntp.servers`: the assignment's own, else the cluster's (the founder's): spec
 *   Assignment.ntpServers, "Only when this node's NTP servers differ from the cluster's (the
 *   founder's), which it gets otherwise". The bundle has no field for them, so node.yaml is
 *   where a joiner gets them.
 * - `storage.os_disk_layout`: how stage 1 laid out the OS disks, from the joiner's install
 *   record or, without one, read off its OS disks' partitions (spec: Inventory.osDiskLayout);
 *   left out when neither tells.
 */
export function buildNodeYaml(options: {
  nodeId: string;
  clusterId: string;
  assignment: StoredAssignment;
  settings: ClusterSettings;
  inventory: Inventory | undefined;
}): string {
  const { assignment: a, settings } = options;
  const ntpServers = a.ntpServers ?? settings.ntpServers;
  const osDiskLayout = osDiskLayoutOf(options.inventory);
  const doc = {
    node: {
      id: options.nodeId,
      name: a.name,
      role: a.role ?? "hybrid",
      ...(a.az ? { az: a.az } : {}),
      labels: nodeLabels(a),
    },
    cluster: { id: options.clusterId, join: true },
    network: {
      mgmt: {
        interface: a.mgmt?.interface,
        address: a.mgmt?.address,
        ...(a.mgmt?.gateway ? { gateway: a.mgmt.gateway } : {}),
        ...(a.mgmt?.dns ? { dns: a.mgmt.dns } : {}),
      },
      connections: (a.links ?? []).map((l) => ({
        name: l.name,
        kind: l.kind ?? "ethernet",
        interface: l.interface,
        ...(l.parent ? { parent: l.parent } : {}),
        ...(l.vlanId ? { vlan_id: l.vlanId } : {}),
        ...(l.controller ? { controller: l.controller } : {}),
        ...(l.bond
          ? {
              bond: {
                mode: l.bond.mode,
                ...(l.bond.xmitHashPolicy ? { xmit_hash_policy: l.bond.xmitHashPolicy } : {}),
                ...(l.bond.miimonMs !== undefined ? { miimon_ms: l.bond.miimonMs } : {}),
                ...(l.bond.lacpRate ? { lacp_rate: l.bond.lacpRate } : {}),
              },
            }
          : {}),
        ...(l.addresses ? { addresses: l.addresses } : {}),
        ...(l.mtu ? { mtu: l.mtu } : {}),
        purposes: l.purposes ?? [],
      })),
      provider: {
        topology: a.provider?.topology ?? settings.networks.providerTopology,
        ...(a.provider?.upstreamInterface ? { upstream_interface: a.provider.upstreamInterface } : {}),
        ...(a.provider?.vlan !== undefined ? { vlan: a.provider.vlan } : {}),
      },
    },
    storage: {
      ...(osDiskLayout ? { os_disk_layout: osDiskLayout } : {}),
      disks: (a.disks ?? []).map((d) => ({
        key: d.key,
        role: d.role,
        ...(d.pool ? { pool: d.pool } : {}),
        ...(d.storageClass ? { storage_class: d.storageClass } : {}),
        // The operator typed the wipe confirmation at approval; the node may wipe this disk.
        wipe: d.confirm !== undefined && d.confirm === d.key,
      })),
    },
    ...(ntpServers.length > 0 ? { ntp: { servers: ntpServers } } : {}),
  };
  return `# node.yaml of ${options.nodeId}, built by the founder from the approved assignment.\n${stringify(doc)}`;
}

/**
 * How the cluster's OpenBao runs: `single-instance` (increment 1: one OpenBao behind its VIP,
 * which every control plane uses with the shared token) or `raft` (a 3-node integrated-storage
 * raft, every member a voter unsealed with the founder's one unseal key).
 */
export type OpenBaoMode = "single-instance" | "raft";

/** What the node a bundle is for runs: a control plane, or only a Postgres replica. */
export interface BundleRecipient {
  /** False for a Postgres-only replica, which runs no control plane (and no OpenBao). */
  controlPlane: boolean;
}

/**
 * The cluster secrets a node's bundle carries, and only those (spec: Bundle): the Postgres
 * password always; the admin password and the OpenBao token only to a node that runs a
 * control plane ("Empty on a Postgres-only replica"); the unseal key only to a control plane
 * of a raft cluster ("Empty on increment-1 single-instance clusters … and on a Postgres-only
 * replica"): a joiner that runs no local OpenBao voter has nothing to unseal, and a secret it
 * never needs is one it cannot leak.
 */
export function bundleSecrets(
  secrets: ClusterSecrets,
  openBaoMode: OpenBaoMode,
  recipient: BundleRecipient,
): Pick<Bundle, "postgresPassword" | "adminPassword" | "openBaoToken" | "dnsEncryptionKey" | "openBaoUnsealKey"> {
  return {
    postgresPassword: secrets.postgresPassword,
    ...(recipient.controlPlane ? { adminPassword: secrets.adminPassword, openBaoToken: secrets.openBaoToken } : {}),
    dnsEncryptionKey: secrets.dnsEncryptionKey,
    ...(recipient.controlPlane && openBaoMode === "raft" ? { openBaoUnsealKey: secrets.openBaoUnsealKey } : {}),
  };
}

/** The join bundle. */
export function buildBundle(options: {
  clusterId: string;
  settings: ClusterSettings;
  secrets: ClusterSecrets;
  openBaoMode: OpenBaoMode;
  recipient: BundleRecipient;
  openBaoNodeToken: string;
  caPem: string;
  nodeCert: string;
  nodeKey: string;
  members: MemberRow[];
  membershipGeneration: number;
}): Bundle {
  const { settings, secrets } = options;
  return {
    clusterId: options.clusterId,
    role: "hybrid",
    nodes: options.members.filter((m) => m.state === "joining" || m.state === "active").map(clusterNode),
    parentDomain: settings.parentDomain,
    region: settings.region,
    dnsUpstreamServers: [...settings.dnsUpstreamServers],
    caBundle: options.caPem,
    nodeCert: options.nodeCert,
    nodeKey: options.nodeKey,
    adminEmail: settings.adminEmail,
    ...bundleSecrets(secrets, options.openBaoMode, options.recipient),
    openBaoNodeToken: options.openBaoNodeToken,
    membershipGeneration: options.membershipGeneration,
    vips: { ...settings.vips },
  };
}

/** The delivery of a join. */
export function buildDelivery(nodeId: string, nodeYaml: string, bundle: Bundle): Delivery {
  return { nodeId, nodeYaml, bundle };
}
