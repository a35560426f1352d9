/**
 * The operator's decisions on a registration: approve it with an assignment (or preview the
 * assignment an approval would apply), reject it, or retry it after a failed step. A preview
 * and an approval go through one check (`#decide`), so they cannot disagree: the preview
 * answers what the approval would store, or the same refusal.
 * @module
 */

import { joinAllows, type Assignment } from "@stratum/join";
import { checkApproval } from "./approval.js";
import type { ClusterContext } from "./context.js";
import { HttpProblem } from "./http.js";
import { newNodeId } from "./ids.js";
import type { JoinRow, StoredAssignment } from "./rows.js";
import type { ApprovalInput } from "./schemas.js";
import { assignmentView } from "./views.js";

/** The operator's decisions. */
export class Decisions {
  readonly #context: ClusterContext;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  /**
   * The join and its completed assignment, if the approval fits: 404 for an unknown join, 409
   * `JOIN_STATE_CONFLICT` unless it is pending or failed, 409 `JOIN_APPROVAL_REFUSED` with the
   * field errors when the assignment does not fit the machine or the cluster.
   */
  #decide(joinId: string, input: ApprovalInput): { join: JoinRow; assignment: StoredAssignment } {
    const { store, settings } = this.#context;
    const join = this.#context.joinOr404(joinId);
    if (join.state === "needs-upgrade") {
      throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
        detail:
          "The machine is upgrading itself to the cluster's release; it can be approved once it registers again as pending.",
      });
    }
    if (!joinAllows(join.state, "approve")) {
      throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
        detail: `The join is ${join.state}; only a pending or failed join can be approved.`,
      });
    }
    const outcome = checkApproval(input, {
      join,
      settings,
      members: store.listMembers(),
      otherJoins: store.listJoins().filter((j) => j.id !== joinId),
    });
    if (!outcome.ok)
      throw new HttpProblem(409, "JOIN_APPROVAL_REFUSED", {
        detail: "The assignment does not fit the machine or the cluster.",
        errors: outcome.errors,
      });
    return { join, assignment: outcome.assignment };
  }

  /** The assignment an approval with `input` would apply now, or the refusal it would get. Changes nothing. */
  preview(joinId: string, input: ApprovalInput): Assignment {
    return assignmentView(this.#decide(joinId, input).assignment);
  }

  /** Approves a pending (or failed) join with its completed assignment, queued for delivery. */
  approve(actor: string, joinId: string, input: ApprovalInput): void {
    const { store } = this.#context;
    store.tx(() => {
      const { join, assignment } = this.#decide(joinId, input);
      const nodeId = join.nodeId ?? newNodeId();
      store.patchJoin(joinId, queuedAgain(actor, { assignment, nodeId }));
      store.audit(actor, "cluster.join.approved", joinId, {
        nodeId,
        ...(assignment.copiedFrom ? { copiedFrom: assignment.copiedFrom } : {}),
      });
    });
  }

  /** Rejects a join that is not running or over (a failed one included); its key is refused from then on. */
  reject(actor: string, joinId: string, reason: string): void {
    const { store } = this.#context;
    store.tx(() => {
      const join = this.#context.joinOr404(joinId);
      if (!joinAllows(join.state, "reject")) {
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${join.state}; only a join that is not running or over can be rejected.`,
        });
      }
      const now = Date.now();
      store.patchJoin(joinId, { state: "rejected", rejectedBy: actor, rejectedAt: now, reason }, now);
      store.audit(actor, "cluster.join.rejected", joinId, {});
    });
  }

  /** Queues a failed join again with the assignment (and addresses) it had. */
  retry(actor: string, joinId: string): void {
    const { store } = this.#context;
    store.tx(() => {
      const join = this.#context.joinOr404(joinId);
      if (!joinAllows(join.state, "retry"))
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${join.state}; only a failed join can be retried.`,
        });
      store.patchJoin(joinId, queuedAgain(actor, {}));
      store.audit(actor, "cluster.join.retried", joinId, {});
    });
  }
}

/** The patch that (re)queues a join as approved: the last run's steps and failure cleared. */
function queuedAgain(actor: string, extra: Partial<JoinRow>): Partial<JoinRow> {
  return {
    ...extra,
    state: "approved",
    approvedBy: actor,
    approvedAt: Date.now(),
    failedStep: null,
    failedStepTitle: null,
    failedError: null,
    steps: [],
    totalSteps: null,
    currentStep: null,
    deliveredAt: null,
    delivery: null,
  };
}
