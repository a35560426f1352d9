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
  /**
   * Addresses a member, a VIP or another join holds, each with what holds it ("member node-2
   * (n-…)", "the API VIP", "vm (nj-…, approved)"), so a refusal names the holder; each address
   * the check hands out is added (as "links[0]").
   */
  held: Map<string, string>;
  /** True for another join whose assignment holds its name and addresses. */
  holding(join: JoinRow): boolean;
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
    holding: (join) => HOLDING_STATES.has(join.state),
    previous: new Set(assignmentIps(ctx.join.assignment)),
  };
}

/** Every address held by another member, a VIP, or another join that holds its assignment's, with its holder. */
function heldAddresses(ctx: ApprovalContext): Map<string, string> {
  const held = new Map<string, string>();
  const hold = (ip: string, by: string): void => {
    const bare = bareIp(ip);
    if (!held.has(bare)) held.set(bare, by);
  };
  for (const m of ctx.members) {
    if (m.nodeId === ctx.join.nodeId) continue;
    const by = `member ${m.name} (${m.nodeId})`;
    if (m.mgmtIp) hold(m.mgmtIp, by);
    for (const n of Object.values(m.networks)) hold(n.ip, by);
    for (const ip of assignmentIps(m.assignment)) hold(ip, by);
  }
  for (const [name, vip] of Object.entries(ctx.settings.vips)) if (vip) hold(vip, `the ${VIP_NAMES[name] ?? name} VIP`);
  for (const j of ctx.otherJoins) {
    if (!HOLDING_STATES.has(j.state)) continue;
    const by = `${j.hostname ?? "the machine"} (${j.id}, ${j.state})`;
    if (j.assignment?.mgmt?.address) hold(j.assignment.mgmt.address, by);
    for (const ip of assignmentIps(j.assignment)) hold(ip, by);
  }
  return held;
}

/** The VIPs as a person names them. */
const VIP_NAMES: Record<string, string> = {
  api: "API",
  postgres: "Postgres",
  openbao: "OpenBao",
  ovnNb: "OVN northbound",
  ovnSb: "OVN southbound",
  vmselect: "vmselect",
  providerGw: "provider gateway",
};
