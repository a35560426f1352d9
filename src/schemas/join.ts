/**
 * The join listener's answers, read by the Node joiner.
 * @module
 */
import * as z from "zod/mini";
import { JOIN_STATES } from "../core/join-states.js";
import { bool, int, opt, str, strings } from "./builders.js";

/** `PakeChallenge`: the listener's KE2, the cluster CA it proves it holds, and the founder's time. */
export const PakeChallengeSchema = z.object({
  session: str,
  ke2: str,
  caCertificate: str,
  expiresAt: str,
  serverTime: str,
});

/** `Upgrade`: the release a joiner on an older release upgrades itself to. */
export const UpgradeSchema = z.object({ from: str, to: str, source: opt(str), served: opt(bool) });

/** `CodeCheck`: a join code that passed the checks. */
export const CodeCheckSchema = z.object({ clusterRelease: str, expiresAt: str, upgrade: opt(UpgradeSchema) });

/** `NodeRole`. */
export const NodeRoleSchema = z.enum(["control-plane", "hybrid", "hypervisor", "storage"]);

// The delivery and what it carries keep the fields they do not know (`z.looseObject`), as the
// spec says (`additionalProperties: true`): a newer founder's field reaches the installer instead
// of being dropped here, which is how `networks` and `labels` once went missing. Whether such a
// field may be written anywhere is src/node/delivery-plan.ts's to decide.

/** `NetworkBinding`: one traffic class's binding on a node. */
export const NetworkBindingSchema = z.looseObject({ ip: str, interface: opt(str) });

/** `ClusterNode`: one cluster member, as a joiner peers with it. */
export const ClusterNodeSchema = z.looseObject({
  nodeId: str,
  role: NodeRoleSchema,
  az: opt(str),
  mgmtIp: opt(str),
  networks: opt(z.record(str, NetworkBindingSchema)),
  labels: opt(z.record(str, str)),
  bootState: opt(z.enum(["ready", "starting", "unreachable"])),
  bootPhase: opt(str),
  bootElapseMs: opt(int),
  readyAfterMs: opt(int),
});

/** `Vips`: the cluster's keepalived service VIPs. */
export const VipsSchema = z.looseObject({
  api: opt(str),
  postgres: opt(str),
  openbao: opt(str),
  ovnNb: opt(str),
  ovnSb: opt(str),
  vmselect: opt(str),
  providerGw: opt(str),
});

/** `Bundle`: the cluster identity and secrets a joiner adopts. Holds sensitive fields; see `redact`. Unknown fields are kept. */
export const BundleSchema = z.looseObject({
  clusterId: opt(str),
  role: NodeRoleSchema,
  nodes: z.array(ClusterNodeSchema),
  parentDomain: opt(str),
  region: opt(str),
  dnsUpstreamServers: opt(strings),
  caBundle: opt(str),
  nodeCert: opt(str),
  nodeKey: opt(str),
  postgresPassword: opt(str),
  adminEmail: opt(str),
  adminPassword: opt(str),
  openBaoToken: opt(str),
  openBaoNodeToken: opt(str),
  dnsEncryptionKey: opt(str),
  openBaoUnsealKey: opt(str),
  membershipGeneration: opt(int),
  vips: opt(VipsSchema),
});

/** `Delivery`: the node.yaml and bundle an approved joiner receives. */
export const DeliverySchema = z.looseObject({ nodeId: str, nodeYaml: str, bundle: BundleSchema });

/** `JoinState`: where a join stands (the one list, src/core/join-states.ts). */
export const JoinStateSchema = z.enum(JOIN_STATES);

/** `Registration`: a joiner's view of its registration. */
export const RegistrationSchema = z.object({
  joinId: str,
  state: JoinStateSchema,
  pairingCode: str,
  waitReason: opt(str),
  reason: opt(str),
  failedStep: opt(str),
  failedError: opt(str),
  upgrade: opt(UpgradeSchema),
  delivery: opt(DeliverySchema),
});
