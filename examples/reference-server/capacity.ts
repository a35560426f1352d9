/**
 * How many more machines the cluster can take: the one count the approval check refuses by
 * (`role`), the console and `admin joins` show (`JoinCapacity` on the join list), and a waiting
 * machine is told in its `waitReason` when the cluster is full. Kept in one place so the three
 * never disagree: a console that says "1 more can be approved" is right when the approval runs.
 * @module
 */

import type { JoinCapacity, NodeRole } from "@stratum/join";
import type { JoinState } from "@stratum/join";
import type { JoinRow, MemberRow } from "./rows.js";
import { iso } from "./views.js";

/**
 * The roles an approval may name (spec: Assignment.role). Every joiner is hybrid for now;
 * the others are planned for a later release and refused at `role`.
 */
export const ACCEPTED_ROLES: readonly NodeRole[] = ["hybrid"];

/**
 * The most control-plane nodes a cluster takes (every hybrid node is one): an odd number, so
 * a quorum survives two failures, and few enough that consensus stays fast.
 */
export const MAX_CONTROL_PLANE = 5;

/** States that will become a control-plane member without another approval (a running join is a member already). */
const QUEUED_STATES: ReadonlySet<JoinState> = new Set(["approved"]);

/** Control-plane nodes now and queued, and how many more joins can be approved. */
export type ControlPlaneCount = JoinCapacity["controlPlane"];

/**
 * The control-plane count, leaving out `join` itself (its own member row, when a failed
 * join is approved again, and its own queued approval): what approving one more would add to.
 */
export function countControlPlane(
  members: readonly MemberRow[],
  joins: readonly JoinRow[],
  join?: JoinRow,
): ControlPlaneCount {
  const memberCount = members.filter(
    (m) =>
      m.state !== "leaving" &&
      (m.role === "hybrid" || m.role === "control-plane") &&
      (join?.nodeId === undefined || join.nodeId === null || m.nodeId !== join.nodeId),
  ).length;
  const approved = joins.filter((j) => QUEUED_STATES.has(j.state) && j.id !== join?.id).length;
  return {
    members: memberCount,
    approved,
    max: MAX_CONTROL_PLANE,
    remaining: Math.max(0, MAX_CONTROL_PLANE - memberCount - approved),
  };
}

/**
 * What a waiting join waits for while the cluster is full, as words that follow "waiting
 * for" (the spec's `waitReason`); undefined while there is room.
 */
export function fullReason(count: ControlPlaneCount): string | undefined {
  if (count.remaining > 0) return undefined;
  const approved = count.approved ? ` and ${count.approved} approved ${count.approved === 1 ? "join" : "joins"}` : "";
  return `a free place: the cluster is full, with ${count.members} control-plane ${count.members === 1 ? "member" : "members"}${approved}, the most it takes (${count.max}); an operator can reject or expire this machine, or approve it once a place is free`;
}

/** Registrations turned away because the waiting slots were full (kept in the store's meta). */
export interface WaitingRefusals {
  count: number;
  lastAt: number;
}

/** The meta key the refusals are kept under. */
export const REFUSALS_KEY = "waitingRefusals";

/** The capacity as the join list answers it. */
export function joinCapacity(o: {
  members: readonly MemberRow[];
  joins: readonly JoinRow[];
  waiting: number;
  maxWaiting: number;
  refusals: WaitingRefusals | undefined;
}): JoinCapacity {
  return {
    roles: [...ACCEPTED_ROLES],
    controlPlane: countControlPlane(o.members, o.joins),
    waiting: {
      count: o.waiting,
      max: o.maxWaiting,
      refused: o.refusals?.count ?? 0,
      ...(o.refusals ? { lastRefusedAt: iso(o.refusals.lastAt) } : {}),
    },
  };
}
