/**
 * The approval an operator confirms: a draft the dialog edits (name, role, management
 * interface and address, what each data disk becomes and its wipe confirmation), the
 * `Approval` it sends, and the assignment the founder will apply, shown before anything is
 * sent. Pure apart from {@link previewAssignment}, the one place that asks the API.
 * @module
 */

import type {
  AdminClient,
  ApiSchemas,
  Approval,
  Assignment,
  ClusterNetworks,
  DiskAssignment,
  NodeJoin,
} from "@stratum/join";
import { diskData, isRealNic } from "./format.js";

/** Every node role the API names; the founder refuses all but `hybrid` at `role` for now (spec: Assignment.role). */
export type NodeRole = ApiSchemas["NodeRole"];

/** What one data disk becomes: left alone (not listed), a compute pool disk, or a Ceph OSD. */
export type DiskChoice = "untouched" | "compute" | "ceph-osd";

/** One disk row of the draft. */
export interface DiskDraft {
  /** The kernel name (`nvme1n1`): how the operator knows it; never sent (names change between boots). */
  name: string;
  /** The WWN or first by-id path: what the founder keys the disk by. Undefined: it cannot be assigned. */
  key: string | undefined;
  choice: DiskChoice;
  /** The typed wipe confirmation (the key again), for a disk that holds data. */
  confirm: string;
  /** What holds data on it, in words; undefined for a blank disk. */
  data: string | undefined;
  /** The system disk: fixed by the installer, shown but never assignable. */
  system: boolean;
}

/** What the dialog edits. Empty strings are "the founder's default". */
export interface ApprovalDraft {
  name: string;
  role: NodeRole;
  mgmtInterface: string;
  mgmtAddress: string;
  mgmtGateway: string;
  disks: DiskDraft[];
}

/** What the founder will apply, and anything it could not decide. */
export interface AssignmentPreview {
  assignment: Assignment;
  /** What the operator should know about the assignment shown (e.g. how it was worked out). */
  notes: string[];
}

/** The draft a join starts from: the founder's defaults as far as the join's inventory tells them. */
export function draftFromJoin(join: NodeJoin): ApprovalDraft {
  const mgmt = defaultMgmt(join);
  return {
    name: join.hostname || join.id,
    role: "hybrid",
    mgmtInterface: mgmt?.interface ?? "",
    mgmtAddress: mgmt?.address ?? "",
    mgmtGateway: "",
    disks: (join.inventory?.disks ?? []).map((disk) => ({
      name: disk.name,
      key: disk.wwn || disk.byId?.[0] || undefined,
      choice: "untouched",
      confirm: "",
      data: diskData(disk),
      system: (disk.mountpoints ?? []).length > 0,
    })),
  };
}

/** The NICs a management link can be put on: the machine's real cards, wired first. */
export function mgmtCandidates(join: NodeJoin): { name: string; address: string | undefined }[] {
  return (join.inventory?.nics ?? [])
    .filter(isRealNic)
    .sort((a, b) => Number(Boolean(a.wireless)) - Number(Boolean(b.wireless)))
    .map((nic) => ({ name: nic.name, address: firstIpv4(nic.addresses) }));
}

/** The address a NIC holds, for filling in the management address when the interface changes. */
export function addressOf(join: NodeJoin, nicName: string): string | undefined {
  return firstIpv4(join.inventory?.nics?.find((n) => n.name === nicName)?.addresses);
}

/** A disk holding data is wiped when it gets a role: the founder wants its key typed as confirmation. */
export function needsConfirm(disk: DiskDraft): boolean {
  return disk.choice !== "untouched" && disk.data !== undefined;
}

/**
 * The approval the draft stands for. Only disks given a role are listed (an unlisted disk is
 * left alone); their order is the order of `disks[i]` in the founder's field errors, which is
 * why {@link sentDiskNames} returns it.
 */
export function approvalFromDraft(draft: ApprovalDraft): Approval {
  const mgmt: NonNullable<Assignment["mgmt"]> = {};
  if (draft.mgmtInterface) mgmt.interface = draft.mgmtInterface;
  if (draft.mgmtAddress.trim()) mgmt.address = draft.mgmtAddress.trim();
  if (draft.mgmtGateway.trim()) mgmt.gateway = draft.mgmtGateway.trim();
  const disks: DiskAssignment[] = assignedDisks(draft).map((d) => ({
    key: d.key!,
    role: d.choice as DiskAssignment["role"],
    ...(needsConfirm(d) && d.confirm.trim() ? { confirm: d.confirm.trim() } : {}),
  }));
  const assignment: Assignment = {
    ...(draft.name.trim() ? { name: draft.name.trim() } : {}),
    // The spec's Assignment.role lists only hybrid; another role is sent as chosen so that the
    // founder's refusal at `role` tells the operator why, rather than the page guessing.
    role: draft.role as Assignment["role"],
    ...(Object.keys(mgmt).length ? { mgmt } : {}),
    ...(disks.length ? { disks } : {}),
  };
  return { assignment };
}

/** The kernel names of the disks the approval lists, in its order (`disks[i]` of a field error). */
export function sentDiskNames(draft: ApprovalDraft): string[] {
  return assignedDisks(draft).map((d) => d.name);
}

function assignedDisks(draft: ApprovalDraft): DiskDraft[] {
  return draft.disks.filter((d) => !d.system && d.key !== undefined && d.choice !== "untouched");
}

/**
 * The assignment the founder will apply for `approval`: THE place the founder's preview goes.
 *
 * `POST /v1/admin/cluster/joins/{joinId}/approval-preview` (admin client
 * `previewApproval(joinId, approval)`) answers the founder's own defaults and checks without
 * approving. Until the SDK has it, this works the assignment out here, from the join's
 * inventory and the cluster's networks, with the founder's default rules (spec: approveNodeJoin,
 * MgmtLink, ProviderUplink); the founder's checks (addresses held by other machines, the
 * control-plane count, disks holding data) are then only told when approving. With the
 * preview, replace the body with:
 *
 * ```ts
 * return { assignment: await client.previewApproval(join.id, approval, { signal }), notes: [] };
 * ```
 *
 * A refusal of the preview (`StratumApiError` with field errors) is thrown as it is: the
 * dialog shows it on the fields exactly as an approval's.
 */
export async function previewAssignment(
  client: Pick<AdminClient, "getClusterNetworks">,
  join: NodeJoin,
  approval: Approval,
  signal: AbortSignal,
): Promise<AssignmentPreview> {
  const networks = await clusterNetworks(client, signal);
  return localPreview(join, approval, networks);
}

const networksByClient = new WeakMap<object, Promise<ClusterNetworks | undefined>>();

/** The cluster's networks, asked once per client; a failure leaves the uplink out of the preview rather than blocking it. */
function clusterNetworks(
  client: Pick<AdminClient, "getClusterNetworks">,
  signal: AbortSignal,
): Promise<ClusterNetworks | undefined> {
  let pending = networksByClient.get(client);
  if (!pending) {
    pending = client.getClusterNetworks({ signal, timeoutMs: 10_000 }).catch(() => undefined);
    networksByClient.set(client, pending);
  }
  return pending;
}

/** The founder's defaults applied to `approval`, from the join alone (see {@link previewAssignment}). */
export function localPreview(
  join: NodeJoin,
  approval: Approval,
  networks: ClusterNetworks | undefined,
): AssignmentPreview {
  const given = approval.assignment ?? {};
  const notes: string[] = [];
  const mgmt = { ...(given.mgmt ?? {}) };
  const fallback = defaultMgmt(join);
  if (mgmt.interface === undefined && fallback) {
    mgmt.interface = fallback.interface;
    mgmt.address ??= fallback.address;
    if (fallback.guessed)
      notes.push(
        `It registered from this computer (${join.sourceAddr}), so its management link is its first wired card with an address.`,
      );
  }
  if (mgmt.interface !== undefined && mgmt.address === undefined) {
    const own = addressOf(join, mgmt.interface);
    if (own) mgmt.address = own;
  }
  const provider: NonNullable<Assignment["provider"]> = { ...(given.provider ?? {}) };
  if (networks) {
    provider.topology = networks.providerTopology;
    if (networks.providerVlan !== undefined) provider.vlan = networks.providerVlan;
    if (provider.upstreamInterface === undefined) {
      const nics = new Set((join.inventory?.nics ?? []).map((n) => n.name));
      if (networks.providerUpstreamPurpose === "mgmt" && mgmt.interface) provider.upstreamInterface = mgmt.interface;
      else if (networks.providerUpstreamInterface && nics.has(networks.providerUpstreamInterface))
        provider.upstreamInterface = networks.providerUpstreamInterface;
    }
  }
  const assignment: Assignment = {
    ...given,
    name: given.name ?? (join.hostname || join.id),
    role: given.role ?? "hybrid",
    mgmt,
    ...(Object.keys(provider).length ? { provider } : {}),
  };
  return { assignment, notes };
}

/**
 * The founder's default management link: the NIC holding the address the machine registered
 * from, with that address; for a machine that registered over loopback (on the founder's own
 * computer) its first wired NIC with an IPv4 address (spec: MgmtLink; reference server).
 */
function defaultMgmt(join: NodeJoin): { interface: string; address: string; guessed: boolean } | undefined {
  const nics = join.inventory?.nics ?? [];
  const source = join.sourceAddr ?? "";
  const holder = nics.find((n) => (n.addresses ?? []).some((a) => bareIp(a) === source));
  if (holder) return { interface: holder.name, address: source, guessed: false };
  if (!isLoopback(source)) return undefined;
  for (const nic of nics) {
    if (nic.wireless) continue;
    const address = firstIpv4(nic.addresses);
    if (address) return { interface: nic.name, address, guessed: true };
  }
  return undefined;
}

function firstIpv4(addresses: readonly string[] | undefined): string | undefined {
  return (addresses ?? []).map(bareIp).find((ip) => /^\d{1,3}(\.\d{1,3}){3}$/.test(ip) && !isLoopback(ip));
}

function bareIp(address: string): string {
  return address.split("/")[0]!;
}

function isLoopback(host: string): boolean {
  return /^127\./.test(host) || host === "::1" || host === "localhost";
}

/**
 * The assignment in a few lines a person checks before approving: name, role, management
 * link, what each disk becomes (by its kernel name, from `disks`), the VM uplink.
 */
export function describeAssignment(a: Assignment, disks: readonly DiskDraft[]): [string, string][] {
  const nameOf = (key: string): string => disks.find((d) => d.key === key)?.name ?? key;
  const becomes = { "ceph-osd": "a Ceph OSD", compute: "compute storage", unused: "unused" } as const;
  const mgmt = a.mgmt ?? {};
  const list = (...parts: unknown[]): string => parts.filter(Boolean).join(", ");
  const rows: [string, string][] = [
    ["Name", a.name ?? "(the hostname)"],
    ["Role", a.role ?? "hybrid"],
    ["Management", list(mgmt.interface ?? "not chosen", mgmt.address, mgmt.gateway && `gateway ${mgmt.gateway}`)],
    [
      "Disks",
      a.disks?.length
        ? a.disks.map((d) => `${nameOf(d.key)} becomes ${becomes[d.role]}${d.confirm ? " (wiped)" : ""}`).join("; ")
        : "all left as they are",
    ],
  ];
  const p = a.provider;
  if (p?.upstreamInterface || p?.topology)
    rows.push([
      "VM uplink",
      list(p.upstreamInterface ?? "the founder's choice", p.topology, p.vlan !== undefined && `VLAN ${p.vlan}`),
    ]);
  return rows;
}

/** Where a field error belongs in the dialog. */
export type FieldTarget =
  | { kind: "name" | "role" | "mgmtInterface" | "mgmtAddress" | "mgmtGateway" }
  | { kind: "disk"; disk: string; part: "choice" | "confirm" }
  | { kind: "general" };

/**
 * Maps a founder's field path to the control that fixes it: `mgmt.address` → the address
 * input, `disks[1].confirm` → the confirmation of the second disk sent, `role` → the role.
 * An `assignment.` prefix (a schema refusal's) is dropped. What the dialog does not edit
 * (links, the uplink) is `general`: listed at the top with its label.
 */
export function fieldTarget(path: string, sentDisks: readonly string[]): FieldTarget {
  const field = path.replace(/^assignment\./, "");
  switch (field) {
    case "name":
      return { kind: "name" };
    case "role":
      return { kind: "role" };
    case "mgmt.interface":
      return { kind: "mgmtInterface" };
    case "mgmt.address":
      return { kind: "mgmtAddress" };
    case "mgmt.gateway":
      return { kind: "mgmtGateway" };
  }
  const disk = /^disks\[(\d+)\](?:\.(\w+))?/.exec(field);
  const name = disk ? sentDisks[Number(disk[1])] : undefined;
  if (disk && name !== undefined)
    return { kind: "disk", disk: name, part: disk[2] === "confirm" ? "confirm" : "choice" };
  return { kind: "general" };
}
