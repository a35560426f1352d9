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
