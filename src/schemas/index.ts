/**
 * zod schemas of every response body the SDK reads, written by hand from `openapi.yaml` and
 * held to `generated/api.d.ts` by the type-level tests in `test/schemas/schemas.test-d.ts`:
 * a field added, dropped, made optional or given another enum value on either side fails
 * `npx vitest run`.
 *
 * Built on `zod/mini` (functional API) because it tree-shakes to a fraction of classic zod,
 * which matters to the console apps that opt into validation (`validateResponses`).
 *
 * What is enforced: the shape, every required field, every enum and integer. What is not:
 * unknown fields (an object drops fields it does not know instead of failing, so a newer
 * server can add fields), string formats and patterns (a date or a pattern the SDK does not
 * compute with is not worth refusing an answer over).
 * @module
 */

import * as z from "zod/mini";
import { JOIN_STATES } from "../core/join-states.js";
import { ResponseValidationError, type ValidationIssue } from "../errors/index.js";

// Small builders keep the schemas below as close to the spec's text as possible.
const str = z.string();
const int = z.int();
const bool = z.boolean();
const opt = z.optional;
const strings = z.array(str);

// ---------------------------------------------------------------------------------------
// Problem (every 4xx/5xx)

/** `ProblemCode`: what went wrong, for a caller to branch on. */
export const ProblemCodeSchema = z.enum([
  "JOIN_CODE_INVALID",
  "JOIN_BINDING_FAILED",
  "JOIN_CODE_BUSY",
  "JOIN_CODE_EXPIRED",
  "JOIN_CODE_REVOKED",
  "JOIN_CODE_STALE",
  "JOIN_PAKE_RESTART",
  "RELEASE_MISMATCH",
  "REGISTRATION_REJECTED",
  "RATE_LIMITED",
  "UPGRADE_IN_PROGRESS",
  "RELEASE_BUSY",
  "INVALID_INPUT",
  "JOIN_APPROVAL_REFUSED",
  "JOIN_STATE_CONFLICT",
  "RANGE_NOT_SATISFIABLE",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "NOT_FOUND",
  "UNSUPPORTED_MEDIA_TYPE",
  "STORAGE_UNAVAILABLE",
  "INTERNAL",
]);

/** `PolicyIssue`: one finding of a rejected IAM policy document. */
export const PolicyIssueSchema = z.object({ code: str, statement: int, detail: str, action: opt(str) });

/** `FieldError`: one field's problem, at its path. */
export const FieldErrorSchema = z.object({ field: str, message: str });

/**
 * `Problem`: the RFC 9457 document of every refusal. Strict on `code`: the SDK's own error
 * parsing (`problemFromResponse`) is lenient instead, so an unknown code still surfaces.
 */
export const ProblemSchema = z.object({
  type: str,
  title: str,
  status: int,
  detail: opt(str),
  instance: opt(str),
  requestId: str,
  code: ProblemCodeSchema,
  issues: opt(z.array(PolicyIssueSchema)),
  errors: opt(z.array(FieldErrorSchema)),
  details: opt(z.record(str, z.unknown())),
});

// ---------------------------------------------------------------------------------------
// The join listener's answers (read by the Node joiner)

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

/** `NetworkBinding`: one traffic class's binding on a node. */
export const NetworkBindingSchema = z.object({ ip: str, interface: opt(str) });

/** `ClusterNode`: one cluster member, as a joiner peers with it. */
export const ClusterNodeSchema = z.object({
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
export const VipsSchema = z.object({
  api: opt(str),
  postgres: opt(str),
  openbao: opt(str),
  ovnNb: opt(str),
  ovnSb: opt(str),
  vmselect: opt(str),
  providerGw: opt(str),
});

/** `Bundle`: the cluster identity and secrets a joiner adopts. Holds sensitive fields; see `redact`. */
export const BundleSchema = z.object({
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
export const DeliverySchema = z.object({ nodeId: str, nodeYaml: str, bundle: BundleSchema });

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

// ---------------------------------------------------------------------------------------
// Inventory (part of NodeJoin)

/** `DiskHolder`. */
export const DiskHolderSchema = z.object({ kind: str, device: str, detail: opt(str) });

/** `Partition`. */
export const PartitionSchema = z.object({
  number: int,
  name: str,
  path: str,
  sizeBytes: int,
  fsType: opt(str),
  label: opt(str),
  partLabel: opt(str),
});

/** `StackedDevice`. */
export const StackedDeviceSchema = z.object({ name: str, path: str, type: str });

/** `Disk`: one whole disk of a joining machine. */
export const DiskSchema = z.object({
  name: str,
  path: str,
  byId: opt(strings),
  model: opt(str),
  serial: opt(str),
  wwn: opt(str),
  transport: opt(str),
  sizeBytes: opt(int),
  rotational: opt(bool),
  removable: opt(bool),
  readOnly: opt(bool),
  mountpoints: opt(strings),
  holders: opt(z.array(DiskHolderSchema)),
  partitions: opt(z.array(PartitionSchema)),
  stack: opt(z.array(StackedDeviceSchema)),
});

/** `Nic`: one network interface of a joining machine. */
export const NicSchema = z.object({
  name: str,
  mac: opt(str),
  permanentMac: opt(str),
  operState: opt(str),
  link: opt(str),
  speedMbps: opt(int),
  mtu: opt(int),
  driver: opt(str),
  addresses: opt(strings),
  wireless: opt(bool),
  routes: opt(strings),
});

/** `Cpu`. */
export const CpuSchema = z.object({
  model: opt(str),
  sockets: opt(int),
  cores: opt(int),
  threads: opt(int),
  virtualization: opt(str),
});

/** `ClockReport`: the joining machine's clock at registration. */
export const ClockReportSchema = z.object({ offsetSeconds: opt(int), ntpSynchronized: opt(bool) });

/** `Inventory`: a joining machine's hardware, as it reported it. */
export const InventorySchema = z.object({
  uefi: opt(bool),
  disks: opt(z.array(DiskSchema)),
  nics: opt(z.array(NicSchema)),
  cpu: opt(CpuSchema),
  memoryBytes: opt(int),
  osDiskLayout: opt(z.enum(["compute-tail", "whole-disk"])),
  clock: opt(ClockReportSchema),
});

// ---------------------------------------------------------------------------------------
// Assignment (part of NodeJoin)

/** `MgmtLink`. */
export const MgmtLinkSchema = z.object({
  interface: opt(str),
  address: opt(str),
  gateway: opt(str),
  dns: opt(strings),
});

/** `Bond`. */
export const BondSchema = z.object({
  mode: z.enum(["active-backup", "802.3ad"]),
  xmitHashPolicy: opt(str),
  miimonMs: opt(int),
  lacpRate: opt(str),
});

/** `Link`. `kind` defaults to `ethernet` as the spec says, which is why the generated type has it required. */
export const LinkSchema = z.object({
  name: str,
  kind: z._default(z.enum(["ethernet", "bond", "vlan"]), "ethernet"),
  interface: str,
  parent: opt(str),
  vlanId: opt(int),
  controller: opt(str),
  bond: opt(BondSchema),
  addresses: opt(strings),
  addressesAllocated: opt(bool),
  mtu: opt(int),
  purposes: opt(z.array(z.enum(["oob", "mgmt", "storage", "overlay", "provider"]))),
});

/** `DiskAssignment`. */
export const DiskAssignmentSchema = z.object({
  key: str,
  role: z.enum(["compute", "ceph-osd", "unused"]),
  pool: opt(str),
  storageClass: opt(str),
  confirm: opt(str),
});

/** `ProviderUplink`. */
export const ProviderUplinkSchema = z.object({
  topology: opt(z.enum(["bridged", "routed-host"])),
  upstreamInterface: opt(str),
  vlan: opt(int),
});

/** `Assignment`: everything about a joiner, chosen on the founder. */
export const AssignmentSchema = z.object({
  name: opt(str),
  role: opt(z.enum(["hybrid"])),
  rack: opt(str),
  az: opt(str),
  mgmt: opt(MgmtLinkSchema),
  links: opt(z.array(LinkSchema)),
  disks: opt(z.array(DiskAssignmentSchema)),
  ntpServers: opt(strings),
  provider: opt(ProviderUplinkSchema),
  copiedFrom: opt(str),
  copyNotes: opt(strings),
});

// ---------------------------------------------------------------------------------------
// The admin API's answers

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

/** `NodeJoinList`: registrations, newest first. */
export const NodeJoinListSchema = z.object({ items: z.array(NodeJoinSchema) });

/** `ApprovalPreview`: what an approval with the same body would apply now (`previewApproval`). */
export const ApprovalPreviewSchema = z.object({ assignment: AssignmentSchema });

/** `JoinCodeState`. */
export const JoinCodeStateSchema = z.enum(["live", "expired", "revoked"]);

/** `JoinCode`: a join code's record; never the code itself. */
export const JoinCodeSchema = z.object({
  id: str,
  selector: str,
  attempts: opt(int),
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

// ---------------------------------------------------------------------------------------
// Parsing

/**
 * The issues of a failed parse, as the SDK reports them: a dotted path and a message made
 * here from the issue's kind. Never the offending value: it may be a secret (a bundle field).
 */
export function toValidationIssues(issues: readonly z.core.$ZodIssue[]): ValidationIssue[] {
  return issues.map((issue) => ({ path: issue.path.map(String).join("."), message: describeIssue(issue) }));
}

// zod/mini ships no messages unless a locale is loaded globally (a side effect a library
// must not have), so the SDK words the few kinds a response body can fail with.
function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return `expected ${issue.expected}`;
    case "invalid_value":
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "too_small":
    case "too_big":
      return "out of range";
    case "invalid_format":
      return `expected the format ${issue.format}`;
    default:
      return issue.code.replace(/_/g, " ");
  }
}

/**
 * `body` parsed by `schema`, or a {@link ResponseValidationError} naming `operation` (e.g.
 * `POST /v1/join/registrations`) and every issue. The result drops fields the schema does not
 * know and fills the spec's defaults.
 */
export function parseResponse<S extends z.ZodMiniType>(schema: S, operation: string, body: unknown): z.output<S> {
  const result = z.safeParse(schema, body);
  if (!result.success) throw new ResponseValidationError(operation, toValidationIssues(result.error.issues));
  return result.data;
}

// ---------------------------------------------------------------------------------------
// The admin client's validator

/** The operations of the admin API, by their `operationId` in `openapi.yaml`. */
export type AdminOperationId =
  | "mintJoinCode"
  | "listJoinCodes"
  | "revokeJoinCode"
  | "listNodeJoins"
  | "getNodeJoin"
  | "approveNodeJoin"
  | "previewApproval"
  | "rejectNodeJoin"
  | "retryNodeJoin"
  | "failNodeJoin"
  | "listClusterMembers"
  | "getClusterNetworks"
  | "rotateClusterCa"
  | "setClusterUpgrade";

/** What a {@link ResponseValidator} found: the body as parsed, or what is wrong with it. */
export type ValidationResult =
  | {
      /** The body matched its schema. */
      success: true;
      /** The body, as parsed by the schema. */
      data: unknown;
    }
  | {
      /** The body did not match its schema. */
      success: false;
      /** Where and how it did not. */
      issues: ValidationIssue[];
    };

/**
 * Checks the success body of one admin operation. The admin client takes one as its
 * `validate` option and throws `ResponseValidationError` when it reports issues. A plain
 * function type, so that the client itself never imports zod.
 */
export type ResponseValidator = (operationId: AdminOperationId, body: unknown) => ValidationResult;

// One schema per operation's success answer (201 for mintJoinCode, 200 for the rest).
const adminResponseSchemas: Record<AdminOperationId, z.ZodMiniType> = {
  mintJoinCode: MintedJoinCodeSchema,
  listJoinCodes: JoinCodeListSchema,
  revokeJoinCode: JoinCodeSchema,
  listNodeJoins: NodeJoinListSchema,
  getNodeJoin: NodeJoinSchema,
  approveNodeJoin: NodeJoinSchema,
  previewApproval: ApprovalPreviewSchema,
  rejectNodeJoin: NodeJoinSchema,
  retryNodeJoin: NodeJoinSchema,
  failNodeJoin: NodeJoinSchema,
  listClusterMembers: MemberListSchema,
  getClusterNetworks: ClusterNetworksSchema,
  rotateClusterCa: CaRotationSchema,
  setClusterUpgrade: ClusterUpgradeSchema,
};

/**
 * The admin client's validator: pass it as `createAdminClient({ validate: validateResponses })`
 * to check every answer against the spec's schema. Only an app that imports it bundles zod.
 */
export const validateResponses: ResponseValidator = (operationId, body) => {
  const result = z.safeParse(adminResponseSchemas[operationId], body);
  return result.success
    ? { success: true, data: result.data }
    : { success: false, issues: toValidationIssues(result.error.issues) };
};
