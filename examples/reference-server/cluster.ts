/**
 * The founder's state and every change to it, behind one facade: join codes (join-codes.ts),
 * registrations (registrations.ts), the operator's decisions (decisions.ts), the delivery
 * queue and the runner's state moves (delivery-queue.ts), and the data directory with its CA
 * (data-dir.ts). The HTTP layers (admin-api.ts, join-listener.ts) only parse, authorise and
 * answer; the rules live in those modules, and each change is one transaction with its audit
 * entry. This facade answers in the API's shapes (views.ts).
 *
 * State machine of a join:
 *   needs-upgrade ─(registers again on the cluster's release)→ pending
 *   pending ─approve→ approved ─(runner: its turn, green cluster)→ delivering
 *   delivering ─(first progress report)→ installing ─(step `join` done)→ joined
 *   delivering|installing ─(a failed step; silent past the stall deadline; an operator's fail)→ failed
 *   failed ─retry|approve→ approved
 *   needs-upgrade|pending|approved ─reject→ rejected
 *   needs-upgrade|pending ─(24 h after its code's expiry)→ expired
 * Why: a machine on an older release must upgrade before anyone approves what it will run;
 * one join runs at a time and only on a green cluster, so membership changes one member at a
 * time; a failed join keeps its assignment and addresses so a retry needs no new decision;
 * a join can be rejected until its delivery (the node key and cluster secrets) is handed out,
 * never after, so a running join that will never finish is failed instead (by the founder
 * after the stall deadline, or by an operator), which frees the queue; and a waiting join
 * nobody decides on does not hold the listener open forever.
 * @module
 */

import {
  WAITING_JOIN_STATES,
  type Assignment,
  type CodeCheck,
  type JoinCapacity,
  type JoinCodeInfo,
  type MintedJoinCode,
  type NodeJoin,
  type Registration,
} from "@stratum/join";
import type { ClusterCa } from "@stratum/join/server";
import { countControlPlane, fullReason, joinCapacity, REFUSALS_KEY, type WaitingRefusals } from "./capacity.js";
import type { ClusterSettings } from "./config.js";
import {
  DEFAULT_UPGRADE_RETRY_SECONDS,
  type ClusterContext,
  type ClusterOptions,
  type UpgradeState,
} from "./context.js";
import { openDataDir, rotateCa } from "./data-dir.js";
import { Decisions } from "./decisions.js";
import type { ClusterSecrets } from "./delivery.js";
import { DeliveryQueue } from "./delivery-queue.js";
import { HttpProblem } from "./http.js";
import { JoinCodes, type BurnedCode } from "./join-codes.js";
import type { UnprovenEnds } from "./pake-sessions.js";
import { Registrations, type AcceptedRelease, type RegistrationProof } from "./registrations.js";
import type { JoinCodeRow, JoinRow } from "./rows.js";
import type { ApprovalInput, ProgressInput, RegistrationInput } from "./schemas.js";
import type { Store } from "./store.js";
import { memberView, nodeJoinView, registrationView } from "./views.js";

export type { ClusterOptions, UpgradeState } from "./context.js";

/** The founder. Open it with {@link Cluster.open}. */
export class Cluster {
  readonly #context: ClusterContext;
  readonly #codes: JoinCodes;
  readonly #registrations: Registrations;
  readonly #decisions: Decisions;
  readonly #queue: DeliveryQueue;

  private constructor(context: ClusterContext) {
    this.#context = context;
    this.#codes = new JoinCodes(context);
    this.#registrations = new Registrations(context);
    this.#decisions = new Decisions(context);
    this.#queue = new DeliveryQueue(context);
  }

  /**
   * Opens the data directory (made 0700), creating on first start the database, the cluster
   * CA (its key a 0600 file), the OPAQUE server setup (0600), the cluster's settings and
   * secrets, and the founder as first member.
   */
  static async open(options: ClusterOptions): Promise<Cluster> {
    return new Cluster(await openDataDir(options));
  }

  /** The database. */
  get store(): Store {
    return this.#context.store;
  }

  /** The configuration the cluster was opened with. */
  get options(): ClusterOptions {
    return this.#context.options;
  }

  /** The cluster's id. */
  get clusterId(): string {
    return this.#context.clusterId;
  }

  /** What the cluster decided at install. */
  get settings(): ClusterSettings {
    return this.#context.settings;
  }

  /** The cluster's secrets a joiner adopts. */
  get secrets(): ClusterSecrets {
    return this.#context.secrets;
  }

  /** The current cluster root CA (with its key). */
  get ca(): ClusterCa {
    return this.#context.ca;
  }

  /** The OPAQUE server setup (secret). */
  get serverSetup(): string {
    return this.#context.serverSetup;
  }

  /** The membership generation. */
  generation(): number {
    return this.#context.generation();
  }

  /** Whether an upgrade is in progress. */
  upgradeState(): UpgradeState {
    return this.#context.upgradeState();
  }

  /** Throws 503 `UPGRADE_IN_PROGRESS` while an upgrade is in progress. */
  assertNotUpgrading(): void {
    const upgrade = this.upgradeState();
    if (upgrade.inProgress) {
      throw new HttpProblem(503, "UPGRADE_IN_PROGRESS", {
        detail: "The cluster is upgrading; try again later.",
        headers: { "Retry-After": String(upgrade.retryAfterSeconds) },
      });
    }
  }

  // ---------------------------------------------------------------- join codes

  /** Mints a join code (see {@link JoinCodes.mint}); the code is in the answer only. */
  mintCode(
    actor: string,
    request: { ttlSeconds?: number | undefined; endpoint?: string | undefined },
    defaultEndpoint: string,
  ): Promise<MintedJoinCode> {
    return this.#codes.mint(actor, request, defaultEndpoint);
  }

  /** Every join code, newest first. */
  listCodes(): JoinCodeInfo[] {
    return this.#codes.list();
  }

  /** Revokes a code (answers a code that is no longer live as it is). */
  revokeCode(actor: string, id: string): JoinCodeInfo {
    return this.#codes.revoke(actor, id);
  }

  /** The code a PAKE for `selector` runs against (see {@link JoinCodes.forPake}). */
  codeForPake(selector: string): JoinCodeRow | undefined {
    return this.#codes.forPake(selector);
  }

  /** Counts PAKE exchanges that ended unproven, code id → source → how many (see {@link JoinCodes.countUnproven}). */
  countUnproven(ends: UnprovenEnds): BurnedCode[] {
    return this.#codes.countUnproven(ends);
  }

  /** After a proven KE3: why the code no longer works (401 with the reason), or nothing. */
  refusalOfProvenCode(codeId: string): HttpProblem | undefined {
    return this.#codes.refusalOfProvenCode(codeId);
  }

  // ---------------------------------------------------------------- registrations

  /** The upgrade rules' verdict on a joiner's release, or a 409 `RELEASE_MISMATCH`. */
  checkRelease(release: string, selfUpgrade: boolean): AcceptedRelease {
    return this.#registrations.checkRelease(release, selfUpgrade);
  }

  /** The answer of a passed code check. */
  codeCheck(codeId: string, release: string, selfUpgrade: boolean): CodeCheck {
    return this.#registrations.codeCheck(codeId, release, selfUpgrade);
  }

  /** Registers a machine whose code was just proven (see {@link Registrations.register}). */
  register(input: RegistrationInput, proof: RegistrationProof): { status: 200 | 201; registration: Registration } {
    const { status, join } = this.#registrations.register(input, proof);
    return { status, registration: this.registration(join) };
  }

  /** A registration if `keyFingerprint` owns it; else 404 (another key learns nothing). */
  ownedJoin(joinId: string, keyFingerprint: string | undefined): JoinRow {
    return this.#registrations.owned(joinId, keyFingerprint);
  }

  /** The joiner's view of a registration. */
  registration(join: JoinRow): Registration {
    return registrationView(join, this.#waitReason(join, Date.now()));
  }

  /**
   * What a join waits for (spec: `waitReason`): an approved one its turn; a waiting one a
   * free place, while the cluster is full. `full` is the cluster's reason, when a caller
   * already counted it for many joins.
   */
  #waitReason(join: JoinRow, now: number, full?: string | null): string | undefined {
    if (join.state === "approved") return this.#queue.waitReason(join, now);
    if (!WAITING_JOIN_STATES.includes(join.state)) return undefined;
    if (full !== undefined) return full ?? undefined;
    return fullReason(countControlPlane(this.store.listMembers(), this.store.listJoins(), join));
  }

  /** Records a progress report and the state moves it means (see {@link DeliveryQueue.progress}). */
  progress(join: JoinRow, report: ProgressInput): Registration {
    this.#queue.progress(join, report);
    const after = this.store.getJoin(join.id)!;
    // The join ended and its delivery (the node key, the cluster's secrets) was cleared: its
    // old pages are cut from the WAL too, not left there until the next restart.
    if (join.delivery !== null && after.delivery === null) this.store.checkpoint();
    return this.registration(after);
  }

  // ---------------------------------------------------------------- the operator's decisions

  /** Every registration as the admin sees it, newest first. */
  listJoins(): NodeJoin[] {
    return this.joinList().items;
  }

  /** The join list as the API answers it: every registration, newest first, and the capacity. */
  joinList(): { items: NodeJoin[]; capacity: JoinCapacity } {
    const now = Date.now();
    const joins = this.store.listJoins();
    const members = this.store.listMembers();
    const capacity = joinCapacity({
      members,
      joins,
      waiting: joins.filter((j) => WAITING_JOIN_STATES.includes(j.state)).length,
      maxWaiting: this.options.limits.maxWaiting,
      refusals: this.store.getMeta<WaitingRefusals>(REFUSALS_KEY),
    });
    // A waiting join is never counted itself, so one count answers for all of them.
    const full = fullReason(capacity.controlPlane) ?? null;
    return { items: joins.map((j) => this.#nodeJoin(j, now, undefined, full)), capacity };
  }

  /** One registration with its log tail; 404 when unknown. */
  getJoin(joinId: string): NodeJoin {
    const join = this.#context.joinOr404(joinId);
    return this.#nodeJoin(join, Date.now(), this.store.logTail(joinId));
  }

  #nodeJoin(join: JoinRow, now: number, logTail?: string[], full?: string | null): NodeJoin {
    return nodeJoinView(join, {
      now,
      stallAfterMs: this.options.timing.stallAfterMs,
      waitReason: this.#waitReason(join, now, full),
      ...(logTail ? { logTail } : {}),
    });
  }

  /** The assignment an approval would apply, or the refusal it would get; changes nothing. */
  previewApproval(joinId: string, input: ApprovalInput): Assignment {
    return this.#decisions.preview(joinId, input);
  }

  /** Approves a pending (or failed) join with its completed assignment; 409 with field errors when it does not fit. */
  approve(actor: string, joinId: string, input: ApprovalInput): NodeJoin {
    this.#decisions.approve(actor, joinId, input);
    return this.getJoin(joinId);
  }

  /** Rejects a join that has not started delivering; its key is refused from then on. */
  reject(actor: string, joinId: string, reason: string): NodeJoin {
    this.#decisions.reject(actor, joinId, reason);
    return this.getJoin(joinId);
  }

  /** Queues a failed join again with the assignment (and addresses) it had. */
  retry(actor: string, joinId: string): NodeJoin {
    this.#decisions.retry(actor, joinId);
    return this.getJoin(joinId);
  }

  /** Expires a waiting join at once (its key may register again later); 409 unless waiting. */
  expire(actor: string, joinId: string): NodeJoin {
    this.#queue.expireByOperator(actor, joinId);
    return this.getJoin(joinId);
  }

  /** Fails a running join at once (`failedStep` `operator`, the reason as `failedError`); 409 unless running. */
  fail(actor: string, joinId: string, reason: string): NodeJoin {
    this.#queue.failByOperator(actor, joinId, reason);
    return this.getJoin(joinId);
  }

  // ---------------------------------------------------------------- the runner's steps

  /** Expires waiting joins nobody approved in time; returns how many expired. */
  expireWaiting(now = Date.now()): number {
    return this.#queue.expireWaiting(now);
  }

  /** Fails running joins silent past the stall deadline; returns their ids (see {@link DeliveryQueue.failStalled}). */
  failStalled(now = Date.now()): string[] {
    return this.#queue.failStalled(now);
  }

  /** Starts the next approved join if it is its turn (see {@link DeliveryQueue.deliverNext}). */
  deliverNext(): Promise<string | undefined> {
    return this.#queue.deliverNext();
  }

  /** What a join waits for (an approved one its turn, a waiting one a place), if anything. */
  waitReason(join: JoinRow): string | undefined {
    return this.#waitReason(join, Date.now());
  }

  /** True while the join listener must be open: a live code, or a registration not final. */
  listenerNeeded(now = Date.now()): boolean {
    return this.#queue.listenerNeeded(now);
  }

  // ---------------------------------------------------------------- cluster

  /** The members and the membership generation. */
  members(): { membershipGeneration: number; items: ReturnType<typeof memberView>[] } {
    return { membershipGeneration: this.generation(), items: this.store.listMembers().map(memberView) };
  }

  /** Rotates the cluster CA, ending every live code (see {@link rotateCa}). */
  rotateCa(actor: string): Promise<{ caFingerprint: string; revokedCodes: number }> {
    return rotateCa(this.#context, actor);
  }

  /** Marks a cluster upgrade in progress, or over. */
  setUpgrade(actor: string, request: { inProgress: boolean; retryAfterSeconds?: number | undefined }): UpgradeState {
    const state: UpgradeState = {
      inProgress: request.inProgress,
      retryAfterSeconds: request.retryAfterSeconds ?? DEFAULT_UPGRADE_RETRY_SECONDS,
    };
    this.store.tx(() => {
      this.store.setMeta("upgrade", state);
      this.store.audit(actor, "cluster.upgrade.changed", "cluster", { ...state });
    });
    return state;
  }

  /** Closes the database. */
  close(): void {
    this.store.close();
  }
}
