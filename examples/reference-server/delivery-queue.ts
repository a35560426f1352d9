/**
 * The delivery queue and the state moves the runner and the joiner's reports make: approved
 * joins wait their turn (one runs at a time, only on a green cluster), the next one is
 * delivered (member row, membership generation, node.yaml and bundle in one transaction), its
 * progress reports move it to `installing`, `joined` or `failed`, and waiting joins nobody
 * approved expire.
 *
 * A running join always ends: a machine that stops reporting would otherwise hold the queue
 * for ever (it can be neither rejected, having been handed secrets, nor retried, not having
 * failed). So the founder fails a join silent past the stall deadline itself, and an operator
 * can fail one at once; either way it is `failed` like a failed step, and `retry` queues it
 * again.
 * @module
 */

import {
  FINAL_JOIN_STATES,
  RUNNING_JOIN_STATES,
  WAITING_JOIN_STATES,
  joinAllows,
  type FounderStepName,
  type JoinState,
  type Step,
} from "@stratum/join";
import { issueNodeCertificate, type ClusterCa } from "@stratum/join/server";
import type { ClusterContext } from "./context.js";
import { buildBundle, buildDelivery, buildNodeYaml, networkBindings, nodeLabels } from "./delivery.js";
import { HttpProblem } from "./http.js";
import { randomHex } from "./ids.js";
import type { JoinRow } from "./rows.js";
import type { ProgressInput } from "./schemas.js";
import { lastHeardAt } from "./views.js";

/** Why a running join failed, in the join's failure fields. */
type Failure = Pick<JoinRow, "failedStep" | "failedStepTitle" | "failedError">;

/** The delivery queue. */
export class DeliveryQueue {
  readonly #context: ClusterContext;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  /** Approved joins in the order they run: first approved first. */
  #queue(): JoinRow[] {
    return this.#context.store
      .joinsInState("approved")
      .sort((a, b) => (a.approvedAt ?? 0) - (b.approvedAt ?? 0) || a.createdAt - b.createdAt);
  }

  #running(): JoinRow[] {
    return this.#context.store.joinsInState(...RUNNING_JOIN_STATES);
  }

  /**
   * What an approved join waits for, naming the join that runs by its host name (an operator
   * finds the machine by it, not by its id) and saying when that one has gone silent, since
   * then it holds the queue until someone fails it.
   */
  waitReason(join: JoinRow, now = Date.now()): string {
    if (this.#context.upgradeState().inProgress)
      return "the cluster upgrade to finish: joins run only on a green cluster";
    const running = this.#running()[0];
    if (running && running.id !== join.id) {
      const who = `${running.hostname ?? "a machine"} (${running.id}, ${running.state})`;
      const silentMs = now - lastHeardAt(running);
      return silentMs >= this.#context.options.timing.stallAfterMs
        ? `${who} to finish, one join at a time; it has been silent for ${duration(silentMs)}: fail it if it will not report again`
        : `${who} to finish: one join runs at a time`;
    }
    const ahead = this.#queue().findIndex((j) => j.id === join.id);
    return ahead > 0
      ? `its turn: ${ahead} approved ${ahead === 1 ? "join is" : "joins are"} ahead of it`
      : "its turn: delivery starts shortly";
  }

  /** True while the join listener must be open: a live code, or a registration not final. */
  listenerNeeded(now = Date.now()): boolean {
    const { store } = this.#context;
    return store.countLiveCodes(now) > 0 || store.countJoinsNotIn(FINAL_JOIN_STATES) > 0;
  }

  /**
   * Expires waiting joins nobody approved within the grace after their code's expiry.
   * Returns how many expired.
   */
  expireWaiting(now = Date.now()): number {
    const { store } = this.#context;
    const due = store.joinsInState(...WAITING_JOIN_STATES).filter((j) => j.expiresAt !== null && j.expiresAt <= now);
    if (due.length === 0) return 0;
    store.tx(() => {
      for (const j of due) {
        store.patchJoin(j.id, { state: "expired" }, now);
        store.audit("system", "cluster.join.expired", j.id, {});
      }
    });
    return due.length;
  }

  /**
   * Fails every running join whose machine has been silent past the stall deadline
   * (`failedStep` `stalled`), so the next approved join can run. Returns the joins failed.
   */
  failStalled(now = Date.now()): string[] {
    const { store, options } = this.#context;
    const deadline = options.timing.failStalledAfterMs;
    const silent = (j: JoinRow): boolean => now - lastHeardAt(j) >= deadline;
    if (!this.#running().some(silent)) return [];
    return store.tx(() => {
      // Read again inside the transaction: a report may have arrived since.
      const due = this.#running().filter(silent);
      const failure: Failure = {
        failedStep: "stalled" satisfies FounderStepName,
        failedStepTitle: "No progress report",
        failedError: `no progress report for ${duration(deadline)}; the founder failed the join (retry it once the machine is back)`,
      };
      for (const join of due) this.#fail(join, failure, "system:stall-deadline");
      return due.map((j) => j.id);
    });
  }

  /** An operator expires a waiting join at once (frees its waiting slot; its key may register again); 409 otherwise. */
  expireByOperator(actor: string, joinId: string): void {
    const { store } = this.#context;
    store.tx(() => {
      const join = this.#context.joinOr404(joinId);
      if (!joinAllows(join.state, "expire")) {
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${join.state}; only a waiting join (pending, needs-upgrade) can be expired.`,
        });
      }
      store.patchJoin(join.id, { state: "expired" });
      store.audit(actor, "cluster.join.expired", join.id, {});
    });
  }

  /** An operator fails a running join at once (`failedStep` `operator`); 409 for any other state. */
  failByOperator(actor: string, joinId: string, reason: string): void {
    const { store } = this.#context;
    store.tx(() => {
      const join = this.#context.joinOr404(joinId);
      if (!joinAllows(join.state, "fail")) {
        throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
          detail: `The join is ${join.state}; only a running join (delivering, installing) can be failed.`,
        });
      }
      const failedStep: FounderStepName = "operator";
      this.#fail(join, { failedStep, failedStepTitle: `Failed by ${actor}`, failedError: reason }, actor);
    });
  }

  /** Inside a transaction: a running join becomes `failed` (its member row removed, its delivery withdrawn). */
  #fail(join: JoinRow, failure: Failure, actor: string): void {
    const { store } = this.#context;
    if (join.nodeId) store.deleteMember(join.nodeId);
    store.patchJoin(join.id, { state: "failed", ...failure, delivery: null });
    store.audit(actor, "cluster.join.failed", join.id, { failedStep: failure.failedStep });
  }

  /**
   * Starts the next approved join when none runs and the cluster is green: issues its
   * transport leaf, then in one transaction writes its member row (joining), raises the
   * membership generation and stores its node.yaml and bundle (`delivering`). Returns the
   * join started, if any.
   */
  async deliverNext(): Promise<string | undefined> {
    if (this.#context.upgradeState().inProgress) return undefined;
    if (this.#running().length > 0) return undefined;
    const next = this.#queue()[0];
    if (!next || !next.nodeId || !next.assignment) return undefined;
    const mgmtIp = next.assignment.mgmt?.address ? next.assignment.mgmt.address.split("/")[0]! : undefined;
    const ca = this.#context.ca;
    const leaf = await issueNodeCertificate(ca, { nodeId: next.nodeId, ...(mgmtIp ? { hosts: [mgmtIp] } : {}) });
    return this.#context.store.tx(() => {
      const join = this.#context.store.getJoin(next.id);
      // Rejected, or another join started, while the leaf was being issued; or the CA rotated.
      if (!join || join.state !== "approved" || ca !== this.#context.ca || this.#running().length > 0) return undefined;
      this.#deliver(join, ca, { certPem: leaf.certPem, keyPem: leaf.keyPem! }, mgmtIp);
      return join.id;
    });
  }

  /** The delivery's writes, inside {@link DeliveryQueue.deliverNext}'s transaction. */
  #deliver(join: JoinRow, ca: ClusterCa, leaf: { certPem: string; keyPem: string }, mgmtIp: string | undefined): void {
    const { store, settings, clusterId } = this.#context;
    const assignment = join.assignment!;
    const nodeId = join.nodeId!;
    const generation = this.#context.generation() + 1;
    store.setMeta("generation", generation);
    store.putMember({
      nodeId,
      name: assignment.name ?? join.hostname ?? nodeId,
      role: "hybrid",
      state: "joining",
      mgmtIp: mgmtIp ?? null,
      appliedGeneration: 0,
      joinedAt: null,
      joinId: join.id,
      az: assignment.az ?? null,
      labels: nodeLabels(assignment),
      networks: networkBindings(assignment, settings),
      assignment,
    });
    store.applyGenerationToActive(generation);
    this.#context.fault("delivery");
    const bundle = buildBundle({
      clusterId,
      settings,
      secrets: this.#context.secrets,
      openBaoMode: this.#context.options.openBaoMode,
      // Every node the reference server admits is hybrid, so it runs a control plane.
      recipient: { controlPlane: true },
      openBaoNodeToken: `hvs.${randomHex(24)}`,
      caPem: ca.certPem,
      nodeCert: leaf.certPem,
      nodeKey: leaf.keyPem,
      members: store.listMembers(),
      membershipGeneration: generation,
    });
    const nodeYaml = buildNodeYaml({ nodeId, clusterId, assignment, settings, inventory: join.inventory ?? undefined });
    const now = Date.now();
    store.patchJoin(
      join.id,
      { state: "delivering", deliveredAt: now, lastSeenAt: null, delivery: buildDelivery(nodeId, nodeYaml, bundle) },
      now,
    );
    store.audit("system", "cluster.join.delivering", join.id, { nodeId, membershipGeneration: generation });
  }

  /**
   * Records a progress report: steps (merged by name), new log lines (the last 2,000 kept),
   * and the state changes they mean. Only while `needs-upgrade`, `delivering` or `installing`.
   */
  progress(join: JoinRow, report: ProgressInput): void {
    const conflict = (state: JoinState): HttpProblem =>
      new HttpProblem(409, "JOIN_STATE_CONFLICT", { detail: `The join is ${state}; it takes no progress reports.` });
    if (join.state !== "needs-upgrade" && !RUNNING_JOIN_STATES.includes(join.state)) throw conflict(join.state);
    const { store } = this.#context;
    const now = Date.now();
    store.tx(() => {
      const current = store.getJoin(join.id)!;
      if (current.state !== join.state) throw conflict(current.state);
      const steps: Step[] = [...current.steps];
      for (const step of report.steps ?? []) {
        const i = steps.findIndex((s) => s.name === step.name);
        if (i >= 0) steps[i] = step;
        else steps.push(step);
      }
      store.appendLog(join.id, report.log ?? [], this.#context.options.limits.logLines);
      const running = [...steps].reverse().find((s) => s.status === "running");
      const patch: Partial<JoinRow> = {
        steps,
        ...(report.totalSteps !== undefined ? { totalSteps: report.totalSteps } : {}),
        lastSeenAt: now,
        currentStep: running?.name ?? steps[steps.length - 1]?.name ?? null,
      };
      if (current.state === "needs-upgrade") Object.assign(patch, upgradeFailure(report));
      else Object.assign(patch, this.#runningMove(current, report, now));
      store.patchJoin(join.id, patch, now);
    });
  }

  /**
   * The state move a report of a running join means: `delivering` → `installing` on the first
   * report; → `failed` on a failed step (its member row removed); → `joined` when step `join`
   * is done (its member row active, at the current generation).
   */
  #runningMove(current: JoinRow, report: ProgressInput, now: number): Partial<JoinRow> {
    const { store } = this.#context;
    const steps = report.steps ?? [];
    const state: JoinState = current.state === "delivering" ? "installing" : current.state;
    if (state !== current.state) store.audit("joiner", "cluster.join.installing", current.id, {});
    const failed = steps.find((s) => s.status === "failed");
    if (failed) {
      if (current.nodeId) store.deleteMember(current.nodeId);
      store.audit("joiner", "cluster.join.failed", current.id, { failedStep: failed.name });
      return { state: "failed", ...failure(failed), delivery: null };
    }
    if (steps.some((s) => s.name === "join" && s.status === "done")) {
      const member = current.nodeId ? store.getMember(current.nodeId) : undefined;
      if (member)
        store.putMember({ ...member, state: "active", appliedGeneration: this.#context.generation(), joinedAt: now });
      store.audit("joiner", "cluster.join.joined", current.id, { nodeId: current.nodeId });
      return { state: "joined", delivery: null };
    }
    return { state };
  }
}

/** A deadline as a person reads it: `30 min`, `2 h`, `45 s`. */
function duration(ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 3_600_000) return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
  if (ms >= 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.max(1, Math.round(ms / 1000))} s`;
}

/** The failure fields of a failed step. */
function failure(step: Step): Failure {
  return { failedStep: step.name, failedStepTitle: step.title, failedError: step.message ?? "failed" };
}

/** While `needs-upgrade`: the last failed `upgrade/...` step is recorded, and the state stays. */
function upgradeFailure(report: ProgressInput): Partial<JoinRow> {
  const failed = (report.steps ?? [])
    .filter((s) => s.status === "failed" && (s.name === "upgrade" || s.name.startsWith("upgrade/")))
    .pop();
  return failed ? failure(failed) : {};
}
