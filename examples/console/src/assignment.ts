/**
 * The approval an operator confirms: a draft the dialog edits (name, role, management
 * interface and address, what each data disk becomes and its wipe confirmation), the
 * `Approval` it sends, and the founder's preview in lines a person checks. Pure.
 *
 * The founder's default rules (the name, the management link, the VM uplink) live in the
 * founder alone: the draft holds only what the operator chose, and the dialog shows what the
 * founder answers to `previewApproval` for it, so the page cannot disagree with the cluster.
 * @module
 */

import type { ApiSchemas, Approval, ApprovalAssignment, Assignment, DiskAssignment, NodeJoin } from "@stratum/join";
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
  /** Why a wipe needs its key typed, in words (what holds data, or that it was not probed); undefined for a disk probed blank. */
  data: string | undefined;
  /** The system disk: fixed by the installer, shown but never assignable. */
  system: boolean;
}

/** The single-valued fields of the dialog, as the founder's field paths name them. */
export type DraftField = "name" | "role" | "mgmtInterface" | "mgmtAddress" | "mgmtGateway";

/**
 * What the dialog edits: the operator's own values. A field left out (or emptied) is the
 * founder's default, which the dialog shows from the preview and never sends.
 */
export interface ApprovalDraft {
  fields: Partial<Record<DraftField, string>>;
  disks: DiskDraft[];
}

/** The draft a join starts from: nothing chosen yet, and its disks as the inventory lists them. */
export function draftFromJoin(join: NodeJoin): ApprovalDraft {
  return {
    fields: {},
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

/** What the founder's assignment puts in each single-valued field, for the fields the operator did not edit. */
export function fieldsOf(a: Assignment): Record<DraftField, string> {
  return {
    name: a.name ?? "",
    role: a.role ?? "hybrid",
    mgmtInterface: a.mgmt?.interface ?? "",
    mgmtAddress: a.mgmt?.address ?? "",
    mgmtGateway: a.mgmt?.gateway ?? "",
  };
}

/** The NICs a management link can be put on: the machine's real cards, wired first. */
export function mgmtCandidates(join: NodeJoin): { name: string; address: string | undefined }[] {
  return (join.inventory?.nics ?? [])
    .filter(isRealNic)
    .sort((a, b) => Number(Boolean(a.wireless)) - Number(Boolean(b.wireless)))
    .map((nic) => ({ name: nic.name, address: firstIpv4(nic.addresses) }));
}

/** A disk holding data is wiped when it gets a role: the founder wants its key typed as confirmation. */
export function needsConfirm(disk: DiskDraft): boolean {
  return disk.choice !== "untouched" && disk.data !== undefined;
}

/**
 * The approval the draft stands for: the operator's values only. Only disks given a role are
 * listed (an unlisted disk is left alone); their order is the order of `disks[i]` in the
 * founder's field errors, which is why {@link sentDiskNames} returns it.
 */
export function approvalFromDraft(draft: ApprovalDraft): Approval {
  const value = (field: DraftField): string | undefined => draft.fields[field]?.trim() || undefined;
  const mgmt: NonNullable<Assignment["mgmt"]> = {};
  const [iface, address, gateway] = [value("mgmtInterface"), value("mgmtAddress"), value("mgmtGateway")];
  if (iface) mgmt.interface = iface;
  if (address) mgmt.address = address;
  if (gateway) mgmt.gateway = gateway;
  const disks: DiskAssignment[] = assignedDisks(draft).map((d) => ({
    key: d.key!,
    role: d.choice as DiskAssignment["role"],
    ...(needsConfirm(d) && d.confirm.trim() ? { confirm: d.confirm.trim() } : {}),
  }));
  const name = value("name");
  const role = value("role");
  const assignment: ApprovalAssignment = {
    ...(name ? { name } : {}),
    // An approval may ask for any node role (spec: ApprovalAssignment); another than hybrid is
    // sent as chosen so that the founder's refusal at `role` tells the operator why.
    ...(role ? { role: role as NodeRole } : {}),
    ...(Object.keys(mgmt).length ? { mgmt } : {}),
    ...(disks.length ? { disks } : {}),
  };
  return Object.keys(assignment).length ? { assignment } : {};
}

/** The kernel names of the disks the approval lists, in its order (`disks[i]` of a field error). */
export function sentDiskNames(draft: ApprovalDraft): string[] {
  return assignedDisks(draft).map((d) => d.name);
}

function assignedDisks(draft: ApprovalDraft): DiskDraft[] {
  return draft.disks.filter((d) => !d.system && d.key !== undefined && d.choice !== "untouched");
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

/** A card's first IPv4 address (not loopback), to label it in the interface list. */
function firstIpv4(addresses: readonly string[] | undefined): string | undefined {
  return (addresses ?? [])
    .map((a) => a.split("/")[0]!)
    .find((ip) => /^\d{1,3}(\.\d{1,3}){3}$/.test(ip) && !ip.startsWith("127."));
}
