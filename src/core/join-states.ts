/**
 * Where a join stands, and which states end it: the one list the SDK, its CLI, the console
 * and the reference founder all read. openapi.yaml's `JoinState` is the source; a type test
 * (`test/core/join-states.test-d.ts`) holds this list to the generated union in both
 * directions.
 * @module
 */
import type { JoinState } from "../types.js";

/**
 * Every state of a join, in the order a join moves through them: `needs-upgrade` (the
 * machine must upgrade itself first), `pending` (waiting for the operator), `approved`,
 * `delivering` (the founder handed out the delivery), `installing` (the machine reports
 * steps), then one of `joined`, `failed` (a step failed; the operator may retry),
 * `rejected` or `expired`.
 */
export const JOIN_STATES = [
  "needs-upgrade",
  "pending",
  "approved",
  "delivering",
  "installing",
  "joined",
  "failed",
  "rejected",
  "expired",
] as const satisfies readonly JoinState[];

/**
 * The states a join never leaves: `joined`, `rejected`, `expired`. (`failed` is not final:
 * the operator can retry it.)
 */
export const FINAL_JOIN_STATES: readonly JoinState[] = ["joined", "rejected", "expired"];

/** The states in which the operator decides: the machine waits for approval (or upgrades first). */
export const WAITING_JOIN_STATES: readonly JoinState[] = ["needs-upgrade", "pending"];

/** The states in which the founder runs the join: delivered, and the machine installing. */
export const RUNNING_JOIN_STATES: readonly JoinState[] = ["delivering", "installing"];

/** True for a state the join never leaves ({@link FINAL_JOIN_STATES}). */
export function isFinalState(state: JoinState): boolean {
  return FINAL_JOIN_STATES.includes(state);
}

/** True for a string that names a join state (for input from a command line or a URL). */
export function isJoinState(value: unknown): value is JoinState {
  return typeof value === "string" && (JOIN_STATES as readonly string[]).includes(value);
}

/**
 * What an operator does to a join: `approve` it (or preview its approval), `reject` it, `fail`
 * a running one, `retry` a failed one, `expire` a waiting one.
 */
export type JoinAction = "approve" | "reject" | "fail" | "retry" | "expire";

/**
 * The states each {@link JoinAction} is allowed in, the one list the reference founder, the
 * fake cluster of `@stratum/join/testing` and the console read (any other state: 409
 * `JOIN_STATE_CONFLICT`):
 *
 * - `approve`: `pending`, and `failed` (queued again, as retry does). Not `needs-upgrade`: the
 *   machine must register again on the cluster's release first (spec: "approving it is
 *   refused, rejecting it is not").
 * - `reject`: every state the join is not running or over in: `needs-upgrade`, `pending`,
 *   `approved` and `failed`. A failed join holds its addresses and keeps the join listener
 *   open until it is retried, so rejecting is how an operator ends one whose machine will
 *   not come back.
 * - `fail`: the running states, `delivering` and `installing`.
 * - `retry`: `failed` only.
 * - `expire`: the waiting states, `needs-upgrade` and `pending`: the waiting slot is freed at
 *   once and the key may register again (unlike reject, which refuses the key for good).
 */
export const JOIN_ACTION_STATES: Readonly<Record<JoinAction, readonly JoinState[]>> = {
  approve: ["pending", "failed"],
  reject: ["needs-upgrade", "pending", "approved", "failed"],
  fail: RUNNING_JOIN_STATES,
  retry: ["failed"],
  expire: WAITING_JOIN_STATES,
};

/** True when a join in `state` allows `action` ({@link JOIN_ACTION_STATES}). */
export function joinAllows(state: JoinState, action: JoinAction): boolean {
  return JOIN_ACTION_STATES[action].includes(state);
}

/**
 * The two `failedStep` names that are the founder's own, not a step a joiner reported:
 * `stalled` (the joiner was silent past the stall deadline, and the founder failed the join)
 * and `operator` (an operator failed it, `failedError` the reason). Every other `failedStep` is
 * a step "as the joiner named it" (spec: NodeJoin.failedStep), so a founder refuses a progress
 * report that names a step so (400 `INVALID_INPUT` at `steps[i].name`): the two can never be
 * told apart otherwise.
 */
export const FOUNDER_STEP_NAMES = ["stalled", "operator"] as const;

/** One of {@link FOUNDER_STEP_NAMES}. */
export type FounderStepName = (typeof FOUNDER_STEP_NAMES)[number];

/** True for a step name only the founder gives ({@link FOUNDER_STEP_NAMES}). */
export function isFounderStepName(name: string): boolean {
  return (FOUNDER_STEP_NAMES as readonly string[]).includes(name);
}
