/**
 * Registrations: a machine whose code was just proven registers (or finds its key's
 * registration again), its release checked against the cluster's by the upgrade rules. A
 * machine on an older release that can upgrade itself is `needs-upgrade`; when it registers
 * again on the cluster's release it becomes `pending`, keeping its registration.
 * @module
 */

import { WAITING_JOIN_STATES, type CodeCheck } from "@stratum/join";
import type { ClusterContext } from "./context.js";
import { HttpProblem } from "./http.js";
import { newJoinId } from "./ids.js";
import { newJoinRow, type JoinRow } from "./rows.js";
import type { RegistrationInput } from "./schemas.js";
import { REFUSALS_KEY, type WaitingRefusals } from "./capacity.js";
import { applyUpgradeRules, mismatchDetail, type ReleaseVerdict } from "./upgrade-rules.js";
import { iso } from "./views.js";

/** A release the cluster takes: as it is, or after the machine upgrades itself. */
export type AcceptedRelease = Exclude<ReleaseVerdict, { kind: "mismatch" }>;

/** What the join listener proved about a registering machine. */
export interface RegistrationProof {
  codeId: string;
  keyFingerprint: string;
  sourceAddr: string;
  pairingCode: string;
  /** The per-address limit: undefined when a new registration may be made, else seconds to wait. */
  allowNew: () => number | undefined;
}

/** The registrations of a cluster. */
export class Registrations {
  readonly #context: ClusterContext;

  constructor(context: ClusterContext) {
    this.#context = context;
  }

  /** The upgrade rules' verdict on a joiner's release, or a 409 `RELEASE_MISMATCH` with the rule that failed. */
  checkRelease(release: string, selfUpgrade: boolean): AcceptedRelease {
    const { clusterRelease, availability, isoPath } = this.#context.options;
    const verdict = applyUpgradeRules(release, clusterRelease, selfUpgrade, availability);
    if (verdict.kind === "mismatch") {
      throw new HttpProblem(409, "RELEASE_MISMATCH", {
        detail: mismatchDetail(verdict.reason, release, clusterRelease),
        details: { clusterRelease, isoPath: isoPath.replace("{release}", clusterRelease), reason: verdict.reason },
      });
    }
    return verdict;
  }

  /** The answer of a passed code check. */
  codeCheck(codeId: string, release: string, selfUpgrade: boolean): CodeCheck {
    const verdict = this.checkRelease(release, selfUpgrade);
    const code = this.#context.store.getCode(codeId)!;
    return {
      clusterRelease: this.#context.options.clusterRelease,
      expiresAt: iso(code.expiresAt),
      ...(verdict.kind === "upgrade" ? { upgrade: verdict.upgrade } : {}),
    };
  }

  /**
   * Registers a machine whose code was just proven, or finds its key's registration: a new
   * one is 201, the key's existing one 200 (a `needs-upgrade` one that now runs the cluster's
   * release becomes `pending`). A rejected key is 409; more than `maxWaiting` waiting is 429.
   */
  register(input: RegistrationInput, proof: RegistrationProof): { status: 200 | 201; join: JoinRow } {
    const { store, options } = this.#context;
    const verdict = this.checkRelease(input.release, input.selfUpgrade === true);
    const now = Date.now();
    const code = store.getCode(proof.codeId)!;
    const expiresAt = code.expiresAt + options.timing.pendingGraceMs;
    try {
      return this.#registerIn(input, proof, verdict, expiresAt, now);
    } catch (error) {
      if (error instanceof HttpProblem && error.details?.maxWaiting !== undefined) this.#countRefusal(now);
      throw error;
    }
  }

  /** {@link register}'s one transaction. */
  #registerIn(
    input: RegistrationInput,
    proof: RegistrationProof,
    verdict: AcceptedRelease,
    expiresAt: number,
    now: number,
  ): { status: 200 | 201; join: JoinRow } {
    const { store } = this.#context;
    return store.tx(() => {
      const existing = store.joinByKey(proof.keyFingerprint);
      if (existing?.state === "rejected") {
        throw new HttpProblem(409, "REGISTRATION_REJECTED", {
          detail: "This machine's registration was rejected.",
          details: { reason: existing.reason ?? "" },
        });
      }
      if (existing && existing.state !== "expired") {
        if (existing.state === "needs-upgrade") this.#registerAgain(existing, input.release, verdict, expiresAt, now);
        return { status: 200, join: store.getJoin(existing.id)! };
      }
      this.#assertRoomForNew(proof);
      const row = newJoinRow({
        id: newJoinId(),
        codeId: proof.codeId,
        state: verdict.kind === "upgrade" ? "needs-upgrade" : "pending",
        pairingCode: proof.pairingCode,
        keyFingerprint: proof.keyFingerprint,
        sourceAddr: proof.sourceAddr,
        hostname: input.hostname ?? null,
        systemSerial: input.systemSerial ?? null,
        release: input.release,
        inventory: input.inventory ?? null,
        upgrade: verdict.kind === "upgrade" ? verdict.upgrade : null,
        createdAt: now,
        expiresAt,
      });
      store.insertJoin(row);
      store.audit("joiner", "cluster.join.registered", row.id, {
        codeId: row.codeId,
        keyFingerprint: row.keyFingerprint,
        state: row.state,
        sourceAddr: row.sourceAddr,
      });
      return { status: 201, join: row };
    });
  }

  /**
   * A `needs-upgrade` machine registers again: on the cluster's release it becomes `pending`
   * (its upgrade failures cleared, its deadline the later of the two codes'); on another
   * release it is told the upgrade that release now needs.
   */
  #registerAgain(existing: JoinRow, release: string, verdict: AcceptedRelease, expiresAt: number, now: number): void {
    const { store } = this.#context;
    if (verdict.kind === "same") {
      store.patchJoin(
        existing.id,
        {
          state: "pending",
          release,
          upgrade: null,
          failedStep: null,
          failedStepTitle: null,
          failedError: null,
          expiresAt: Math.max(existing.expiresAt ?? 0, expiresAt),
        },
        now,
      );
      store.audit("joiner", "cluster.join.upgraded", existing.id, { release });
    } else if (JSON.stringify(verdict.upgrade) !== JSON.stringify(existing.upgrade)) {
      store.patchJoin(existing.id, { release, upgrade: verdict.upgrade }, now);
    }
  }

  /**
   * A registration turned away for want of a waiting slot is counted (in its own transaction:
   * the refused one rolled back), so the console can say machines were turned away. Best
   * effort: a founder that cannot write then still answers the 429.
   */
  #countRefusal(now: number): void {
    const { store } = this.#context;
    try {
      store.tx(() => {
        const before = store.getMeta<WaitingRefusals>(REFUSALS_KEY);
        store.setMeta(REFUSALS_KEY, { count: (before?.count ?? 0) + 1, lastAt: now } satisfies WaitingRefusals);
      });
    } catch {
      // The refusal is answered all the same; only the count misses one.
    }
  }

  /**
   * 429 when too many registrations wait for a decision, or this address made too many. The
   * first says why in words a person at the machine can act on (how many wait, what frees a
   * slot, the setting) and in `details` for a program.
   */
  #assertRoomForNew(proof: RegistrationProof): void {
    const waiting = this.#context.store.joinsInState(...WAITING_JOIN_STATES).length;
    const maxWaiting = this.#context.options.limits.maxWaiting;
    const retry = this.#context.options.timing.waitingFullRetrySeconds;
    if (waiting >= maxWaiting) {
      throw new HttpProblem(429, "RATE_LIMITED", {
        detail: `${waiting} registrations are already waiting for an operator's decision, the most this cluster keeps (${maxWaiting}, STRATUM_MAX_WAITING on the reference server); approving, rejecting or expiring one frees a slot. Try again in ${retry} s.`,
        details: { waiting, maxWaiting },
        headers: { "Retry-After": String(retry) },
      });
    }
    const retryAfter = proof.allowNew();
    if (retryAfter !== undefined) {
      throw new HttpProblem(429, "RATE_LIMITED", {
        detail: "Too many registrations from this address.",
        headers: { "Retry-After": String(retryAfter) },
      });
    }
  }

  /** A registration if `keyFingerprint` owns it; else 404 (another key learns nothing). */
  owned(joinId: string, keyFingerprint: string | undefined): JoinRow {
    const join = this.#context.store.getJoin(joinId);
    if (!join || keyFingerprint === undefined || join.keyFingerprint !== keyFingerprint) {
      throw new HttpProblem(404, "NOT_FOUND", { detail: "No such registration for this key." });
    }
    return join;
  }
}
