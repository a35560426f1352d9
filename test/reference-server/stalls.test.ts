// Stuck joins end. A running join holds the one-at-a-time queue, and can be neither rejected
// (its delivery was handed out) nor retried (it has not failed): a machine that stops reporting
// in `delivering` used to block every later join for good. Now the founder fails a join silent
// past the stall deadline itself, an operator can fail one at once, and either way `retry`
// queues it again and it can still reach `joined`.
import { afterEach, describe, expect, it } from "vitest";
import { createAdminClient } from "../../src/index.js";
import { TestJoiner, admin, insertJoinRow, mint } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

const view = async (id: string): Promise<any> =>
  (await admin(t!.server, "GET", `/v1/admin/cluster/joins/${id}`, { operationId: "getNodeJoin" })).body;

const approve = async (id: string): Promise<void> => {
  const answer = await admin(t!.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, {
    operationId: "approveNodeJoin",
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
};

/** Two machines on different addresses, both approvable with the defaults. */
function twoJoins(): [string, string] {
  return [
    insertJoinRow(t!.server),
    insertJoinRow(t!.server, {
      sourceAddr: "192.0.2.22",
      inventory: { nics: [{ name: "enp87s0", addresses: ["192.0.2.22/24"] }] },
    }),
  ];
}

describe("the stall deadline", () => {
  it("fails a join whose machine stops reporting in delivering, and the next join runs", async () => {
    t = await startTestServer({ timing: { stallAfterMs: 300, failStalledAfterMs: 1500 } });
    const [a, b] = twoJoins();
    await approve(a);
    await eventually(async () => (await view(a)).state === "delivering");
    const nodeId = (await view(a)).nodeId;
    expect(t.server.store.getMember(nodeId)).toMatchObject({ state: "joining" });
    await approve(b);
    await t.server.tick();
    expect(await view(b)).toMatchObject({ state: "approved", waitReason: expect.stringContaining(a) });

    // a says nothing more: flagged stalled first, then failed by the founder.
    await eventually(async () => (await view(a)).stalled === true, 5000);
    const failed = await eventually(async () => {
      const v = await view(a);
      return v.state === "failed" ? v : undefined;
    }, 10_000);
    expect(failed).toMatchObject({
      failedStep: "stalled",
      failedStepTitle: "No progress report",
      failedError: expect.stringContaining("no progress report for 2 s"),
      stalled: false,
    });
    // Its member row and its delivery are gone, as after a failed step; the queue moved on.
    expect(t.server.store.getMember(nodeId)).toBeUndefined();
    expect(t.server.store.getJoin(a)!.delivery).toBeNull();
    await eventually(async () => (await view(b)).state === "delivering", 5000);
    const audit = t.server.store.auditEntries().find((e) => e.action === "cluster.join.failed" && e.target === a);
    expect(audit).toMatchObject({ actor: "system:stall-deadline", details: { failedStep: "stalled" } });
    expect(t.logs.some((l) => l.includes(`runner failed ${a}`))).toBe(true);
  });

  it("spares a join that keeps reporting", async () => {
    t = await startTestServer({ timing: { stallAfterMs: 200, failStalledAfterMs: 800 } });
    const [a] = twoJoins();
    await approve(a);
    await eventually(async () => (await view(a)).state === "delivering");
    for (let i = 0; i < 6; i++) {
      t.server.cluster.progress(t.server.store.getJoin(a)!, {
        steps: [{ name: "storage", title: "Preparing disks", status: "running", message: `${i}` }],
      });
      await new Promise((r) => setTimeout(r, 300));
      await t.server.tick();
    }
    expect((await view(a)).state).toBe("installing");
  });
});

describe("the operator fails a running join", () => {
  it("frees the queue at once; anything but a running join is 409; a reason is required", async () => {
    t = await startTestServer();
    const [a, b] = twoJoins();
    await approve(a);
    await eventually(async () => (await view(a)).state === "delivering");
    await approve(b);

    const noReason = await admin(t.server, "POST", `/v1/admin/cluster/joins/${a}/fail`, {
      body: {},
      operationId: "failNodeJoin",
    });
    expect(noReason.status).toBe(400);
    expect(noReason.body.errors).toEqual([expect.objectContaining({ field: "reason" })]);
    const pending = await admin(t.server, "POST", `/v1/admin/cluster/joins/${b}/fail`, {
      body: { reason: "x" },
      operationId: "failNodeJoin",
    });
    expect(pending.status).toBe(409);
    expect(pending.body.code).toBe("JOIN_STATE_CONFLICT");
    const unknown = await admin(t.server, "POST", "/v1/admin/cluster/joins/nj-none0000/fail", {
      body: { reason: "x" },
      operationId: "failNodeJoin",
    });
    expect(unknown.status).toBe(404);

    const failed = await admin(t.server, "POST", `/v1/admin/cluster/joins/${a}/fail`, {
      body: { reason: "powered off for good" },
      operationId: "failNodeJoin",
    });
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({
      state: "failed",
      failedStep: "operator",
      failedStepTitle: "Failed by bootstrap-admin",
      failedError: "powered off for good",
    });
    await eventually(async () => (await view(b)).state === "delivering", 5000);
    const audit = t.server.store.auditEntries().find((e) => e.action === "cluster.join.failed" && e.target === a);
    expect(audit).toMatchObject({ actor: "bootstrap-admin", details: { failedStep: "operator" } });
  });

  it("a real machine: failed while installing, retried, delivered again and joined", async () => {
    t = await startTestServer();
    const { code } = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const joinId = ((await joiner.register(code)).response.json as { joinId: string }).joinId;
    const client = createAdminClient({ baseUrl: t.server.adminUrl, token: t.server.adminToken });
    await client.approveNodeJoin(joinId);
    await eventually(async () => (await client.getNodeJoin(joinId)).state === "delivering");
    const progress = { steps: [{ name: "storage", title: "Preparing disks", status: "running" }] };
    expect((await joiner.progress(joinId, progress)).status).toBe(200);

    const failed = await client.failNodeJoin(joinId, { reason: "wrong disk pulled" });
    expect(failed).toMatchObject({ state: "failed", failedStep: "operator", failedError: "wrong disk pulled" });
    // The machine is told: its view says failed and why, its delivery is withdrawn, its reports refused.
    const seen = await joiner.view(joinId);
    expect(seen.json).toMatchObject({ state: "failed", failedStep: "operator", failedError: "wrong disk pulled" });
    expect((seen.json as { delivery?: unknown }).delivery).toBeUndefined();
    const late = await joiner.progress(joinId, progress);
    expect(late.status).toBe(409);
    expect(late.json).toMatchObject({ code: "JOIN_STATE_CONFLICT" });

    const retried = await client.retryNodeJoin(joinId);
    expect(retried.state).toBe("approved");
    expect(retried.failedStep).toBeUndefined();
    await eventually(async () => (await client.getNodeJoin(joinId)).state === "delivering");
    const delivered = await joiner.view(joinId);
    expect((delivered.json as { delivery?: { nodeId: string } }).delivery?.nodeId).toBe(failed.nodeId);
    expect((await joiner.progress(joinId, progress)).status).toBe(200);
    const done = await joiner.progress(joinId, { steps: [{ name: "join", title: "Joining", status: "done" }] });
    expect(done.json).toMatchObject({ state: "joined" });
    expect((await client.getNodeJoin(joinId)).state).toBe("joined");
    await joiner.close();
  });
});
