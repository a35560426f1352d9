/**
 * What each section of the approval check reads and where it reports: the machine (its NICs,
 * the links of the assignment), the addresses already held in the cluster, and the list of
 * field errors. approval.ts makes one per check and hands it to every section.
 * @module
 */

import { RUNNING_JOIN_STATES, type Inventory, type JoinState, type Link } from "@stratum/join";
import { bareIp } from "./addresses.js";
import type { ClusterSettings } from "./config.js";
import type { FieldError } from "./http.js";
import type { JoinRow, MemberRow, Mutable, StoredAssignment } from "./rows.js";

/** What the check needs to know besides the approval. */
export interface ApprovalContext {
  join: JoinRow;
  settings: ClusterSettings;
  members: MemberRow[];
  /** Every other registration (for the addresses they hold and the control-plane count). */
  otherJoins: JoinRow[];
}

/** One NIC of a machine's inventory. */
export type InventoryNic = NonNullable<Inventory["nics"]>[number];

/** The state one approval check shares between its sections. */
export interface ApprovalCheck extends ApprovalContext {
  /** Reports a problem at a field path (`links[0].interface`). */
  err(field: string, message: string): void;
  /** The machine's NICs by name. */
  nics: Map<string, InventoryNic>;
  /** The assignment's links, each with its kind filled in. */
  links: Mutable<Link>[];
  /** True for a NIC of the machine or a device a link makes (a bond, a VLAN). */
  deviceExists(name: string): boolean;
  /** Addresses a member, a VIP or another join holds; each address the check hands out is added. */
  held: Set<string>;
  /** The addresses this join's earlier assignment had (kept on a re-approval while still free). */
  previous: Set<string>;
}

/**
 * States whose assignment holds its addresses (spec: "approved, running or failed"): a failed
 * join keeps them for its retry.
 */
const HOLDING_STATES: ReadonlySet<JoinState> = new Set(["approved", ...RUNNING_JOIN_STATES, "failed"]);

/** The addresses of an assignment's links, without prefix. */
export function assignmentIps(assignment: StoredAssignment | null | undefined): string[] {
  const out: string[] = [];
  for (const link of assignment?.links ?? []) for (const a of link.addresses ?? []) out.push(bareIp(a));
  return out;
}

/** The check's shared state for assignment `a`; problems go to `errors`. */
export function newApprovalCheck(ctx: ApprovalContext, a: StoredAssignment, errors: FieldError[]): ApprovalCheck {
  const nics = new Map((ctx.join.inventory?.nics ?? []).map((n) => [n.name, n] as const));
  const links: Mutable<Link>[] = (a.links ?? []).map((l) => ({ ...l, kind: l.kind ?? "ethernet" }));
  const linkInterfaces = new Set(links.map((l) => l.interface));
  return {
    ...ctx,
    err: (field, message) => {
      errors.push({ field, message });
    },
    nics,
    links,
    deviceExists: (name) => nics.has(name) || linkInterfaces.has(name),
    held: heldAddresses(ctx),
    previous: new Set(assignmentIps(ctx.join.assignment)),
  };
}

/** Every address held by another member, a VIP, or another join that holds its assignment's. */
function heldAddresses(ctx: ApprovalContext): Set<string> {
  const held = new Set<string>();
  for (const m of ctx.members) {
    if (m.nodeId === ctx.join.nodeId) continue;
    if (m.mgmtIp) held.add(bareIp(m.mgmtIp));
    for (const n of Object.values(m.networks)) held.add(bareIp(n.ip));
    for (const ip of assignmentIps(m.assignment)) held.add(ip);
  }
  for (const vip of Object.values(ctx.settings.vips)) if (vip) held.add(bareIp(vip));
  for (const j of ctx.otherJoins)
    if (HOLDING_STATES.has(j.state)) for (const ip of assignmentIps(j.assignment)) held.add(ip);
  return held;
}
