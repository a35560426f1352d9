/**
 * Stored rows as the API answers them (openapi.yaml's shapes). The admin's `NodeJoin` never
 * carries the delivery; the joiner's `Registration` carries it only while it is delivering or
 * installing; a `JoinCode` never carries the record.
 * @module
 */

import {
  RUNNING_JOIN_STATES,
  WAITING_JOIN_STATES,
  type JoinCodeInfo,
  type Member,
  type NodeJoin,
  type Registration,
} from "@stratum/join";
import type { AttemptSourceRow, JoinCodeRow, JoinRow, MemberRow, StoredAssignment } from "./rows.js";

/** An ISO 8601 time from epoch ms. */
export const iso = (ms: number): string => new Date(ms).toISOString();

/** A join code's state at `now`. */
export function codeState(code: JoinCodeRow, now: number): "live" | "expired" | "revoked" {
  if (code.revokedAt !== null) return "revoked";
  return code.expiresAt <= now ? "expired" : "live";
}

/** A join code as listed, with where its counted attempts came from. */
export function joinCodeView(
  code: JoinCodeRow,
  now: number,
  registrations: number,
  sources: readonly AttemptSourceRow[],
): JoinCodeInfo {
  return {
    id: code.id,
    selector: code.selector,
    attempts: code.attempts,
    ...(sources.length > 0
      ? {
          attemptSources: sources.map((s) => ({
            source: s.source,
            attempts: s.attempts,
            lastAttemptAt: iso(s.lastAt),
          })),
        }
      : {}),
    endpoint: code.endpoint,
    caFingerprint: code.caFingerprint,
    state: codeState(code, now),
    ...(code.revokedBy !== null ? { revokedBy: code.revokedBy } : {}),
    ...(code.revokedAt !== null ? { revokedAt: iso(code.revokedAt) } : {}),
    registrations,
    createdBy: code.createdBy,
    createdAt: iso(code.createdAt),
    expiresAt: iso(code.expiresAt),
  };
}

/** The assignment as answered: without the internal disk-name map. */
export function assignmentView(assignment: StoredAssignment): NonNullable<NodeJoin["assignment"]> {
  const { diskNames: _names, ...rest } = assignment;
  return rest;
}

/** When the founder last heard from a join's machine: its last call, else its delivery, else its last change. */
export function lastHeardAt(join: JoinRow): number {
  return join.lastSeenAt ?? join.deliveredAt ?? join.updatedAt;
}

/** A registration as the admin API answers it. */
export function nodeJoinView(
  join: JoinRow,
  options: { now: number; stallAfterMs: number; waitReason?: string | undefined; logTail?: string[] },
): NodeJoin {
  const stalled = RUNNING_JOIN_STATES.includes(join.state) && options.now - lastHeardAt(join) >= options.stallAfterMs;
  const opt = <K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } =>
    (value === null || value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
  return {
    id: join.id,
    codeId: join.codeId,
    state: join.state,
    pairingCode: join.pairingCode,
    ...opt("hostname", join.hostname),
    ...opt("systemSerial", join.systemSerial),
    release: join.release,
    ...opt("sourceAddr", join.sourceAddr),
    keyFingerprint: join.keyFingerprint,
    ...opt("inventory", join.inventory),
    ...(join.assignment ? { assignment: assignmentView(join.assignment) } : {}),
    ...opt("nodeId", join.nodeId),
    ...opt("waitReason", options.waitReason),
    ...opt("totalSteps", join.totalSteps),
    ...opt("upgrade", join.upgrade),
    stalled,
    ...opt("approvedBy", join.approvedBy),
    ...(join.approvedAt !== null ? { approvedAt: iso(join.approvedAt) } : {}),
    ...opt("rejectedBy", join.rejectedBy),
    ...(join.rejectedAt !== null ? { rejectedAt: iso(join.rejectedAt) } : {}),
    ...opt("reason", join.reason),
    ...(join.deliveredAt !== null ? { deliveredAt: iso(join.deliveredAt) } : {}),
    ...(join.lastSeenAt !== null ? { lastSeenAt: iso(join.lastSeenAt) } : {}),
    ...opt("currentStep", join.currentStep),
    ...opt("failedStep", join.failedStep),
    ...opt("failedStepTitle", join.failedStepTitle),
    ...opt("failedError", join.failedError),
    steps: join.steps,
    ...(options.logTail ? { logTail: options.logTail } : {}),
    createdAt: iso(join.createdAt),
    updatedAt: iso(join.updatedAt),
    ...(join.expiresAt !== null && WAITING_JOIN_STATES.includes(join.state) ? { expiresAt: iso(join.expiresAt) } : {}),
  };
}

/** A registration as the joiner sees it. */
export function registrationView(join: JoinRow, waitReason?: string): Registration {
  return {
    joinId: join.id,
    state: join.state,
    pairingCode: join.pairingCode,
    ...(waitReason ? { waitReason } : {}),
    ...(join.state === "rejected" && join.reason ? { reason: join.reason } : {}),
    ...(join.failedStep ? { failedStep: join.failedStep } : {}),
    ...(join.failedError ? { failedError: join.failedError } : {}),
    ...(join.upgrade && join.state === "needs-upgrade" ? { upgrade: join.upgrade } : {}),
    ...(join.delivery && RUNNING_JOIN_STATES.includes(join.state) ? { delivery: join.delivery } : {}),
  };
}

/** A member as listed. */
export function memberView(member: MemberRow): Member {
  return {
    nodeId: member.nodeId,
    name: member.name,
    role: member.role,
    state: member.state,
    ...(member.mgmtIp ? { mgmtIp: member.mgmtIp } : {}),
    appliedGeneration: member.appliedGeneration,
    ...(member.joinedAt !== null ? { joinedAt: iso(member.joinedAt) } : {}),
  };
}
