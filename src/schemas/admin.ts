/**
 * The admin API's answers.
 * @module
 */
import * as z from "zod/mini";
import { bool, int, opt, str, strings } from "./builders.js";
import { JoinStateSchema, NodeRoleSchema, UpgradeSchema } from "./join.js";
import { InventorySchema } from "./inventory.js";
import { AssignmentSchema } from "./assignment.js";
import { ProblemSchema } from "./problem.js";

/** `Step`: one step of a join, as the joiner reported it. */
export const StepSchema = z.object({
  name: str,
  title: str,
  status: z.enum(["running", "done", "failed"]),
  message: opt(str),
  at: opt(str),
});

/** `NodeJoin`: a machine that registered to join, on the founder. */
export const NodeJoinSchema = z.object({
  id: str,
  codeId: str,
  state: JoinStateSchema,
  pairingCode: str,
  hostname: opt(str),
  systemSerial: opt(str),
  release: opt(str),
  sourceAddr: opt(str),
  keyFingerprint: opt(str),
  inventory: opt(InventorySchema),
  assignment: opt(AssignmentSchema),
  nodeId: opt(str),
  waitReason: opt(str),
  totalSteps: opt(int),
  upgrade: opt(UpgradeSchema),
  stalled: bool,
  approvedBy: opt(str),
  approvedAt: opt(str),
  rejectedBy: opt(str),
  rejectedAt: opt(str),
  reason: opt(str),
  deliveredAt: opt(str),
  lastSeenAt: opt(str),
  currentStep: opt(str),
  failedStep: opt(str),
  failedStepTitle: opt(str),
  failedError: opt(str),
  steps: z.array(StepSchema),
  logTail: opt(strings),
  createdAt: str,
  updatedAt: str,
  expiresAt: opt(str),
});

/** `JoinCapacity`: how many more machines the cluster can take. */
export const JoinCapacitySchema = z.object({
  roles: z.array(NodeRoleSchema),
  controlPlane: z.object({ members: int, approved: int, max: int, remaining: int }),
  waiting: z.object({ count: int, max: int, refused: int, lastRefusedAt: opt(str) }),
});

/** `NodeJoinList`: registrations, newest first, and the cluster's capacity. */
export const NodeJoinListSchema = z.object({ items: z.array(NodeJoinSchema), capacity: opt(JoinCapacitySchema) });

/** `ApprovalPreview`: what an approval with the same body would do now: apply `assignment`, or be refused (`refusal`). */
export const ApprovalPreviewSchema = z.object({ assignment: opt(AssignmentSchema), refusal: opt(ProblemSchema) });

/** `JoinCodeState`. */
export const JoinCodeStateSchema = z.enum(["live", "expired", "revoked"]);

/** `AttemptSource`: where some of a code's counted attempts came from. */
export const AttemptSourceSchema = z.object({ source: str, attempts: int, lastAttemptAt: str });

/** `JoinCode`: a join code's record; never the code itself. */
export const JoinCodeSchema = z.object({
  id: str,
  selector: str,
  attempts: opt(int),
  attemptSources: opt(z.array(AttemptSourceSchema)),
  endpoint: str,
  caFingerprint: str,
  state: JoinCodeStateSchema,
  revokedBy: opt(str),
  revokedAt: opt(str),
  registrations: opt(int),
  createdBy: opt(str),
  createdAt: str,
  expiresAt: str,
});

/** `MintedJoinCode`: a freshly minted code; `code` and `url` are sensitive (see `redact`). */
export const MintedJoinCodeSchema = z.object({ joinCode: JoinCodeSchema, endpoint: str, code: str, url: str });

/** `JoinCodeList`: join codes, newest first. */
export const JoinCodeListSchema = z.object({ items: z.array(JoinCodeSchema) });

/** `MemberState`. */
export const MemberStateSchema = z.enum(["joining", "active", "leaving"]);

/** `Member`: a cluster member. */
export const MemberSchema = z.object({
  nodeId: str,
  name: str,
  role: NodeRoleSchema,
  state: MemberStateSchema,
  mgmtIp: opt(str),
  appliedGeneration: int,
  joinedAt: opt(str),
});

/** `MemberList`: the members and the membership generation. */
export const MemberListSchema = z.object({ membershipGeneration: int, items: z.array(MemberSchema) });

/** `ClusterNetwork`: one network that links take addresses from. */
export const ClusterNetworkSchema = z.object({
  cidr: str,
  secondaryCidr: opt(str),
  gateway: opt(str),
  mtu: opt(int),
  vlan: opt(int),
});

/** `ClusterNetworks`: the cluster's networks and its provider uplink. */
export const ClusterNetworksSchema = z.object({
  storage: ClusterNetworkSchema,
  overlay: ClusterNetworkSchema,
  providerTopology: z.enum(["bridged", "routed-host"]),
  providerVlan: opt(int),
  providerUpstreamInterface: opt(str),
  providerUpstreamPurpose: opt(z.enum(["mgmt", "provider"])),
});

/** `CaRotation`: the cluster CA after a rotation. */
export const CaRotationSchema = z.object({ caFingerprint: str, revokedCodes: int });

/** `ClusterUpgrade`: whether a cluster upgrade is in progress. */
export const ClusterUpgradeSchema = z.object({ inProgress: bool, retryAfterSeconds: opt(int) });
