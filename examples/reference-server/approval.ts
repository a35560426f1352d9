/**
 * The approval's assignment: filled in with the defaults the spec gives, copied from a member
 * when asked, and checked against the machine's inventory and the cluster. Every problem is
 * reported at its field path (`role`, `disks[1].confirm`, `links[0].interface`,
 * `provider.vlan`), all at once, so an operator fixes the assignment in one round trip.
 *
 * One small check per section of the assignment, in the order its fields depend on each
 * other: name, role, links (approval-links.ts), mgmt and provider (approval-uplinks.ts), disks
 * (approval-disks.ts), NTP. Pure: it reads the join, the members, the other joins and the
 * cluster settings, and returns the completed assignment or the field errors. The caller
 * stores it in one transaction.
 * @module
 */

import { copyAssignment } from "./approval-copy.js";
import { newApprovalCheck, type ApprovalCheck, type ApprovalContext } from "./approval-check.js";
import { checkDisks } from "./approval-disks.js";
import { checkLinks } from "./approval-links.js";
import { checkMgmt, checkProvider } from "./approval-uplinks.js";
import { ACCEPTED_ROLES, countControlPlane } from "./capacity.js";
import type { FieldError } from "./http.js";
import type { StoredAssignment } from "./rows.js";
import type { ApprovalInput, AssignmentInput } from "./schemas.js";

export type { ApprovalContext } from "./approval-check.js";
export { MAX_CONTROL_PLANE } from "./capacity.js";

/** The outcome: the completed assignment, or the field errors. */
export type ApprovalOutcome = { ok: true; assignment: StoredAssignment } | { ok: false; errors: FieldError[] };

/**
 * Completes and checks an approval's assignment. Defaults: the name is the hostname; the role
 * hybrid; the mgmt link the NIC holding the address the machine registered from (on a
 * loopback registration, a joiner on the server's own machine, the first NIC with an IPv4
 * address); a link's MTU the largest of the cluster networks it carries; the provider uplink
 * the cluster's. Links carrying storage or overlay without addresses get the next free host
 * address of those networks (`addressesAllocated`), keeping the address a re-approval had
 * while it is still free.
 */
export function checkApproval(input: ApprovalInput, ctx: ApprovalContext): ApprovalOutcome {
  const errors: FieldError[] = [];
  const a = mergedAssignment(input, ctx, errors);
  const check = newApprovalCheck(ctx, a, errors);
  checkName(a, check);
  checkRole(a, check);
  const carriedBy = checkLinks(check);
  if (check.links.length > 0) a.links = check.links;
  const mgmt = checkMgmt(a, carriedBy, check);
  a.mgmt = mgmt.mgmt;
  checkDisks(a, check);
  checkProvider(a, carriedBy, mgmt, check);
  (a.ntpServers ?? []).forEach((s, i) => {
    if (s.trim() === "") check.err(`ntpServers[${i}]`, "is empty");
  });
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, assignment: a };
}

/** The member's assignment `copyFrom` names (if any), with the request's fields over it. */
function mergedAssignment(input: ApprovalInput, ctx: ApprovalContext, errors: FieldError[]): StoredAssignment {
  let base: StoredAssignment = {};
  if (input.copyFrom !== undefined) {
    const member = ctx.members.find((m) => m.nodeId === input.copyFrom);
    if (!member) errors.push({ field: "copyFrom", message: `no member has the node id ${input.copyFrom}` });
    else base = copyAssignment(member, ctx.join.inventory);
  }
  const given: AssignmentInput = input.assignment ?? {};
  // What the founder reports back is not the operator's to set.
  const { copiedFrom: _cf, copyNotes: _cn, ...overrides } = given;
  const a: StoredAssignment = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    if (value !== undefined) (a as Record<string, unknown>)[key] = value;
  }
  // Disks given in the request are keyed by this machine's keys; the copy's name map no longer applies.
  if (given.disks !== undefined) delete a.diskNames;
  return a;
}

/**
 * The name: the hostname by default, or, when a member or another approved, running or failed
 * join has that name, the hostname with the first free number (`vm-2`): identical machines
 * registering under one host name get distinct names without an edit. A name given that is
 * taken is refused, naming what has it.
 */
function checkName(a: StoredAssignment, check: ApprovalCheck): void {
  const taken = takenNames(check);
  if (a.name === undefined) {
    const base = check.join.hostname ?? check.join.id;
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}-${n}`;
    a.name = name;
    return;
  }
  const holder = taken.get(a.name);
  if (holder) check.err("name", `${a.name} is already the name of ${holder}`);
}

/** Every name a member or another join holding its assignment has, with what has it ("member n-…"). */
function takenNames(check: ApprovalCheck): Map<string, string> {
  const taken = new Map<string, string>();
  for (const m of check.members) if (m.nodeId !== check.join.nodeId) taken.set(m.name, `member ${m.nodeId}`);
  for (const j of check.otherJoins) {
    const name = j.assignment?.name;
    if (name !== undefined && check.holding(j) && !taken.has(name))
      taken.set(name, `${j.hostname ?? "the machine"} (${j.id}, ${j.state})`);
  }
  return taken;
}

/** The role: one the cluster takes (hybrid only, for now), and room for one more control-plane node. */
function checkRole(a: StoredAssignment, check: ApprovalCheck): void {
  const role = a.role ?? "hybrid";
  if (!(ACCEPTED_ROLES as readonly string[]).includes(role)) {
    check.err("role", `${role} nodes are not supported yet (planned for a later release); every joiner is hybrid`);
  } else {
    const count = countControlPlane(check.members, check.otherJoins, check.join);
    if (count.remaining === 0) {
      check.err(
        "role",
        `the cluster is full: it would have ${count.members + count.approved + 1} control-plane nodes (members and approved joins); it takes at most ${count.max}`,
      );
    }
  }
  a.role = "hybrid";
}
