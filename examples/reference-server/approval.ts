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

import type { JoinState } from "@stratum/join";
import { copyAssignment } from "./approval-copy.js";
import { newApprovalCheck, type ApprovalCheck, type ApprovalContext } from "./approval-check.js";
import { checkDisks } from "./approval-disks.js";
import { checkLinks } from "./approval-links.js";
import { checkMgmt, checkProvider } from "./approval-uplinks.js";
import type { FieldError } from "./http.js";
import type { StoredAssignment } from "./rows.js";
import type { ApprovalInput, AssignmentInput } from "./schemas.js";

export type { ApprovalContext } from "./approval-check.js";

/**
 * The most control-plane nodes a cluster takes (every hybrid node is one): an odd number, so
 * a quorum survives two failures, and few enough that consensus stays fast.
 */
export const MAX_CONTROL_PLANE = 5;

/** States that will become a control-plane member without another approval. */
const QUEUED_STATES: ReadonlySet<JoinState> = new Set(["approved"]);

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

/** The name: the hostname by default, and no other member's. */
function checkName(a: StoredAssignment, check: ApprovalCheck): void {
  a.name = a.name ?? check.join.hostname ?? check.join.id;
  const taken = check.members.find((m) => m.name === a.name && m.nodeId !== check.join.nodeId);
  if (taken) check.err("name", `${a.name} is already the name of member ${taken.nodeId}`);
}

/** The role: hybrid only, and room for one more control-plane node. */
function checkRole(a: StoredAssignment, check: ApprovalCheck): void {
  const role = a.role ?? "hybrid";
  if (role !== "hybrid") {
    check.err("role", `${role} nodes are not supported yet (planned for a later release); every joiner is hybrid`);
  } else {
    const members = check.members.filter(
      (m) =>
        m.state !== "leaving" && (m.role === "hybrid" || m.role === "control-plane") && m.nodeId !== check.join.nodeId,
    ).length;
    const queued = check.otherJoins.filter((j) => QUEUED_STATES.has(j.state)).length;
    const controlPlane = members + queued;
    if (controlPlane + 1 > MAX_CONTROL_PLANE) {
      check.err(
        "role",
        `the cluster would have ${controlPlane + 1} control-plane nodes (members and approved joins); it takes at most ${MAX_CONTROL_PLANE}`,
      );
    }
  }
  a.role = "hybrid";
}
