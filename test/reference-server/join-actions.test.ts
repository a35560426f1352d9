// Which state allows approve, reject, fail and retry has one home (JOIN_ACTION_STATES in
// src/core/join-states.ts). For every state and action, the reference server, the fake
// cluster of @stratum/join/testing and the console's buttons must all say what it says.
import { setupServer } from "msw/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canApprove, canExpire, canFail, canReject, canRetry } from "../../examples/console/src/format.js";
import { JOIN_ACTION_STATES, JOIN_STATES, joinAllows, type JoinAction } from "../../src/core/join-states.js";
import { adminHandlers, createFakeCluster } from "../../src/testing/index.js";
import type { JoinState } from "../../src/types.js";
import { admin, insertJoinRow } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

const ACTIONS: JoinAction[] = ["approve", "reject", "fail", "retry", "expire"];
const BODIES: Record<JoinAction, unknown> = {
  approve: {},
  reject: { reason: "no" },
  fail: { reason: "gone" },
  retry: undefined,
  expire: undefined,
};
const OPERATION: Record<JoinAction, string> = {
  approve: "approveNodeJoin",
  reject: "rejectNodeJoin",
  fail: "failNodeJoin",
  retry: "retryNodeJoin",
  expire: "expireNodeJoin",
};
const CONSOLE: Record<JoinAction, (state: JoinState) => boolean> = {
  approve: canApprove,
  reject: canReject,
  fail: canFail,
  retry: canRetry,
  expire: canExpire,
};

const FAKE = "https://fake.cluster.test";
const fake = createFakeCluster();
const msw = setupServer(...adminHandlers({ cluster: fake, baseUrl: FAKE }));
let t: TestServer;
beforeAll(async () => {
  msw.listen({ onUnhandledRequest: "bypass" });
  t = await startTestServer();
  // Holds the runner: an approved join stays approved, a delivering one is not touched.
  t.server.setUpgrade(true);
});
afterAll(async () => {
  msw.close();
  await t.dispose();
});

describe("JOIN_ACTION_STATES", () => {
  it("names the states the spec gives each action", () => {
    expect(JOIN_ACTION_STATES).toEqual({
      approve: ["pending", "failed"],
      reject: ["needs-upgrade", "pending", "approved", "failed"],
      fail: ["delivering", "installing"],
      retry: ["failed"],
      expire: ["needs-upgrade", "pending"],
    });
    // The seed's rule for needs-upgrade: "approving it is refused, rejecting it is not".
    expect(joinAllows("needs-upgrade", "approve")).toBe(false);
    expect(joinAllows("needs-upgrade", "reject")).toBe(true);
    // A final state allows nothing.
    for (const action of ACTIONS)
      for (const state of ["joined", "rejected", "expired"] as const) expect(joinAllows(state, action)).toBe(false);
  });
});

describe("the founder, the fake cluster and the console agree", () => {
  for (const state of JOIN_STATES) {
    it(`a ${state} join`, async () => {
      for (const action of ACTIONS) {
        const allowed = joinAllows(state, action);
        // The reference server.
        const id = insertJoinRow(t.server, {
          state,
          ...(state === "needs-upgrade"
            ? { release: "0.5.0", upgrade: { from: "0.5.0", to: "0.6.0", served: true } }
            : {}),
          ...(state === "approved" || state === "delivering" || state === "installing" || state === "failed"
            ? {
                nodeId: `n-${state.slice(0, 4)}${action.slice(0, 4)}`,
                assignment: { name: `m-${state}-${action}`, role: "hybrid" },
              }
            : {}),
        });
        const answer = await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/${action}`, {
          ...(BODIES[action] !== undefined ? { body: BODIES[action] } : {}),
          operationId: OPERATION[action],
        });
        expect([action, answer.status, answer.body.code], `founder: ${action} a ${state} join`).toEqual(
          allowed ? [action, 200, undefined] : [action, 409, "JOIN_STATE_CONFLICT"],
        );
        t.server.store.tx(() => t.server.store.patchJoin(id, { state: "rejected" }));
        // The fake cluster.
        const join = fake.addJoin({ state });
        const faked = await fetch(`${FAKE}/v1/admin/cluster/joins/${join.id}/${action}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          ...(BODIES[action] !== undefined ? { body: JSON.stringify(BODIES[action]) } : {}),
        });
        expect([action, faked.status], `fake cluster: ${action} a ${state} join`).toEqual([
          action,
          allowed ? 200 : 409,
        ]);
        // Leaves the fake's capacity as it was: an approved join holds a control-plane place.
        fake.updateJoin(join.id, { state: "rejected" });
        // The console's buttons.
        expect([action, CONSOLE[action](state)], `console: ${action} a ${state} join`).toEqual([action, allowed]);
      }
    });
  }
});
