// The join runner and persistence: one join at a time, waiting on a green cluster, stalls and
// expiry, the listener opening and closing, a restart that loses nothing, and a crash in the
// middle of a delivery that leaves the state before it.
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TestJoiner, admin, insertJoinRow, mint } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

const joinView = async (id: string): Promise<any> =>
  (await admin(t!.server, "GET", `/v1/admin/cluster/joins/${id}`, { operationId: "getNodeJoin" })).body;

function portRefuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
}

describe("the join runner", () => {
  it("runs one join at a time, and only on a green cluster", async () => {
    t = await startTestServer();
    const a = insertJoinRow(t.server);
    const b = insertJoinRow(t.server, {
      sourceAddr: "192.0.2.22",
      inventory: { nics: [{ name: "enp87s0", addresses: ["192.0.2.22/24"] }] },
    });
    t.server.setUpgrade(true);
    await admin(t.server, "POST", `/v1/admin/cluster/joins/${a}/approve`, { operationId: "approveNodeJoin" });
    await t.server.tick();
    expect(await joinView(a)).toMatchObject({ state: "approved", waitReason: expect.stringContaining("upgrade") });
    t.server.setUpgrade(false);
    await eventually(async () => (await joinView(a)).state === "delivering");
    await admin(t.server, "POST", `/v1/admin/cluster/joins/${b}/approve`, { operationId: "approveNodeJoin" });
    await t.server.tick();
    expect(await joinView(b)).toMatchObject({ state: "approved", waitReason: expect.stringContaining(a) });
    // The first one fails: the second runs.
    const first = t.server.store.getJoin(a)!;
    t.server.cluster.progress(first, {
      steps: [{ name: "storage", title: "Preparing disks", status: "failed", message: "no disk" }],
    });
    await eventually(async () => (await joinView(b)).state === "delivering");
    expect((await joinView(a)).state).toBe("failed");
  });

  it("marks a silent running join stalled, and not once it reports", async () => {
    t = await startTestServer({ timing: { stallAfterMs: 1500 } });
    const id = insertJoinRow(t.server);
    await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, { operationId: "approveNodeJoin" });
    await eventually(async () => (await joinView(id)).state === "delivering");
    expect((await joinView(id)).stalled).toBe(false);
    await new Promise((r) => setTimeout(r, 1600));
    expect((await joinView(id)).stalled).toBe(true);
    t.server.cluster.progress(t.server.store.getJoin(id)!, {
      steps: [{ name: "storage", title: "Preparing disks", status: "running" }],
    });
    const after = await joinView(id);
    expect(after).toMatchObject({ state: "installing", stalled: false, currentStep: "storage" });
  });

  it("expires waiting joins the grace after their code's expiry", async () => {
    t = await startTestServer({ timing: { pendingGraceMs: 300 } });
    const minted = await mint(t.server, { ttlSeconds: 3600 });
    const joiner = await TestJoiner.create(t.server);
    const id = ((await joiner.register(minted.code)).response.json as any).joinId;
    await joiner.close();
    const pending = await joinView(id);
    expect(pending.state).toBe("pending");
    expect(Date.parse(pending.expiresAt)).toBe(Date.parse(minted.joinCode.expiresAt) + 300);
    // Let the hour pass: the code ends, and the join's deadline comes.
    await admin(t.server, "DELETE", `/v1/admin/cluster/join-codes/${minted.joinCode.id}`);
    t.server.store.tx(() => t!.server.store.patchJoin(id, { expiresAt: Date.now() + 100 }));
    await eventually(async () => (await joinView(id)).state === "expired", 4000);
    expect((await joinView(id)).expiresAt).toBeUndefined();
    expect(t.server.store.auditEntries().some((e) => e.action === "cluster.join.expired" && e.target === id)).toBe(
      true,
    );
    // Nothing is live and nothing is open: the listener closes, and refuses connections.
    await eventually(() => !t!.server.joinListenerOpen);
    expect(await portRefuses(t.server.joinPort)).toBe(true);
    // A new code opens it again, on the same port.
    const port = t.server.joinPort;
    await mint(t.server);
    expect(t.server.joinListenerOpen).toBe(true);
    expect(t.server.joinPort).toBe(port);
    expect(await portRefuses(port)).toBe(false);
  });

  it("keeps the listener open while a registration is not final", async () => {
    t = await startTestServer();
    expect(t.server.joinListenerOpen).toBe(false);
    const { code, joinCode } = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const id = ((await joiner.register(code)).response.json as any).joinId;
    await admin(t.server, "DELETE", `/v1/admin/cluster/join-codes/${joinCode.id}`);
    await t.server.tick();
    await new Promise((r) => setTimeout(r, 150));
    expect(t.server.joinListenerOpen).toBe(true);
    expect((await joiner.view(id)).status).toBe(200);
    await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/reject`, { body: { reason: "no" } });
    await joiner.close();
    await eventually(() => !t!.server.joinListenerOpen);
  });
});

describe("persistence", () => {
  it("loses no code, registration, state, step, log line or audit entry across a restart", async () => {
    t = await startTestServer();
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const id = ((await joiner.register(minted.code)).response.json as any).joinId;
    await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, { operationId: "approveNodeJoin" });
    await eventually(async () => ((await joiner.view(id)).json as any).state === "delivering");
    await joiner.progress(id, {
      steps: [{ name: "storage", title: "Preparing disks", status: "running" }],
      log: ["line 1", "line 2"],
    });
    const other = insertJoinRow(t.server);
    await admin(t.server, "POST", `/v1/admin/cluster/joins/${other}/reject`, { body: { reason: "dup" } });
    await joiner.close();

    const before = {
      codes: (await admin(t.server, "GET", "/v1/admin/cluster/join-codes")).body,
      joins: (await admin(t.server, "GET", "/v1/admin/cluster/joins")).body,
      one: await joinView(id),
      members: (await admin(t.server, "GET", "/v1/admin/cluster/members")).body,
      audit: t.server.store.auditEntries(),
      token: t.server.adminToken,
      ca: t.server.caFingerprint,
      delivery: t.server.store.getJoin(id)!.delivery,
    };
    t = await t.restart();
    const after = {
      codes: (await admin(t.server, "GET", "/v1/admin/cluster/join-codes")).body,
      joins: (await admin(t.server, "GET", "/v1/admin/cluster/joins")).body,
      one: await joinView(id),
      members: (await admin(t.server, "GET", "/v1/admin/cluster/members")).body,
      audit: t.server.store.auditEntries().slice(0, before.audit.length),
      token: t.server.adminToken,
      ca: t.server.caFingerprint,
      delivery: t.server.store.getJoin(id)!.delivery,
    };
    const stripStalled = (x: any) =>
      JSON.parse(
        JSON.stringify(x, (k, v) => (k === "stalled" || k === "lastSeenAt" || k === "waitReason" ? undefined : v)),
      );
    expect(stripStalled(after)).toEqual(stripStalled(before));
    expect(after.one.logTail).toEqual(["line 1", "line 2"]);
    expect(t.server.adminTokenCreated).toBe(false);

    // The listener is open again (a code is live) and the same key, pinned to the same CA,
    // finds its registration; the code still proves (the OPAQUE setup was kept).
    expect(t.server.joinListenerOpen).toBe(true);
    const again = TestJoiner.with(t.server, joiner.identity);
    again.caDer = joiner.caDer;
    expect(((await again.view(id)).json as any).state).toBe("installing");
    const fresh = await TestJoiner.create(t.server);
    expect((await fresh.register(minted.code)).response.status).toBe(201);
    await again.close();
    await fresh.close();
  });

  it("leaves the state before a change that crashed in the middle", async () => {
    let crash = true;
    t = await startTestServer({
      faultHook: (point) => {
        if (point === "delivery" && crash) {
          crash = false;
          throw new Error("simulated crash in the middle of a delivery");
        }
      },
      timing: { tickMs: 60_000 },
    });
    const id = insertJoinRow(t.server);
    // The approval wakes the runner, whose delivery crashes half-way.
    await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, { operationId: "approveNodeJoin" });
    await eventually(() => !crash);
    await new Promise((r) => setTimeout(r, 50));
    // Nothing of the delivery happened: no member row, no new generation, still approved.
    expect(t.server.store.getJoin(id)!.state).toBe("approved");
    expect(t.server.store.getJoin(id)!.delivery).toBeNull();
    expect((await admin(t.server, "GET", "/v1/admin/cluster/members")).body).toMatchObject({
      membershipGeneration: 1,
      items: [{ name: "node-1" }],
    });
    expect(t.server.store.auditEntries().some((e) => e.action === "cluster.join.delivering")).toBe(false);
    expect(t.logs.some((l) => l.includes("runner error simulated crash"))).toBe(true);
    // The next pass delivers it.
    await t.server.tick();
    expect(t.server.store.getJoin(id)!.state).toBe("delivering");
    expect((await admin(t.server, "GET", "/v1/admin/cluster/members")).body.membershipGeneration).toBe(2);
  });
});
