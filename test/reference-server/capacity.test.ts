// What the cluster can still take, said before anything is refused: the join list's capacity
// (roles, control-plane nodes, waiting slots and the registrations they turned away), a
// waiting machine told when the cluster is full, an approved one which machine holds the queue
// (by host name, and that it went silent), the 429 of a full waiting list in words, approval
// defaults that skip names and addresses others hold (twins), refusals that name the holder,
// and expiring a waiting join.
import { afterEach, describe, expect, it } from "vitest";
import { MAX_CONTROL_PLANE } from "../../examples/reference-server/capacity.js";
import { TestJoiner, admin, insertJoinRow, mint } from "./helpers.js";
import { sampleInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

const list = async (s: TestServer) =>
  (await admin(s.server, "GET", "/v1/admin/cluster/joins", { operationId: "listNodeJoins" })).body;
const approve = (s: TestServer, id: string, body?: unknown) =>
  admin(s.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, {
    ...(body !== undefined ? { body } : {}),
    operationId: "approveNodeJoin",
  });
const preview = (s: TestServer, id: string, body?: unknown) =>
  admin(s.server, "POST", `/v1/admin/cluster/joins/${id}/approval-preview`, {
    ...(body !== undefined ? { body } : {}),
    operationId: "previewApproval",
  });

describe("the join list's capacity", () => {
  it("counts control-plane nodes and approved joins against 5, and tells every waiting machine once it is full", async () => {
    const s = await startTestServer();
    t = s;
    // The upgrade holds the runner: approved joins stay approved.
    s.server.setUpgrade(true);
    const pending = Array.from({ length: 6 }, () => insertJoinRow(s.server));
    let answer = await list(s);
    expect(answer.capacity).toEqual({
      roles: ["hybrid"],
      controlPlane: { members: 1, approved: 0, max: MAX_CONTROL_PLANE, remaining: 4 },
      waiting: { count: 6, max: 16, refused: 0 },
    });
    expect(answer.items.every((j: any) => j.waitReason === undefined)).toBe(true);
    for (const id of pending.slice(0, 4)) expect((await approve(s, id)).status).toBe(200);
    answer = await list(s);
    expect(answer.capacity.controlPlane).toEqual({ members: 1, approved: 4, max: 5, remaining: 0 });
    const waiting = answer.items.filter((j: any) => j.state === "pending");
    expect(waiting).toHaveLength(2);
    for (const j of waiting)
      expect(j.waitReason).toMatch(
        /^a free place: the cluster is full, with 1 control-plane member and 4 approved joins, the most it takes \(5\)/,
      );
    // The machine's own view says it too.
    expect(s.server.cluster.registration(s.server.store.getJoin(waiting[0].id)!).waitReason).toMatch(/cluster is full/);
    // The approval is refused by the same count, at role.
    const refused = await approve(s, waiting[0].id);
    expect(refused.status).toBe(409);
    expect(refused.body.errors).toEqual([{ field: "role", message: expect.stringContaining("the cluster is full") }]);
    // Expiring the ones it cannot take frees their waiting slots at once.
    const expired = await admin(s.server, "POST", `/v1/admin/cluster/joins/${waiting[0].id}/expire`, {
      operationId: "expireNodeJoin",
    });
    expect(expired.status).toBe(200);
    expect(expired.body.state).toBe("expired");
    expect(
      s.server.store.auditEntries().some((a) => a.action === "cluster.join.expired" && a.target === waiting[0].id),
    ).toBe(true);
    expect((await list(s)).capacity.waiting.count).toBe(1);
    const again = await admin(s.server, "POST", `/v1/admin/cluster/joins/${waiting[0].id}/expire`, {
      operationId: "expireNodeJoin",
    });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("JOIN_STATE_CONFLICT");
  });

  it("names the join that holds the queue by its host name, and says when it went silent", async () => {
    const s = await startTestServer({ timing: { stallAfterMs: 60_000 } });
    t = s;
    const running = insertJoinRow(s.server, { hostname: "rack3-vm", state: "delivering", deliveredAt: Date.now() });
    const queued = insertJoinRow(s.server, { state: "approved" });
    const reason = () => s.server.cluster.registration(s.server.store.getJoin(queued)!).waitReason;
    expect(reason()).toBe(`rack3-vm (${running}, delivering) to finish: one join runs at a time`);
    s.server.store.tx(() =>
      s.server.store.patchJoin(running, {
        lastSeenAt: Date.now() - 12 * 60_000,
        deliveredAt: Date.now() - 12 * 60_000,
      }),
    );
    expect(reason()).toBe(
      `rack3-vm (${running}, delivering) to finish, one join at a time; it has been silent for 12 min: fail it if it will not report again`,
    );
  });
});

describe("a full waiting list", () => {
  it("turns a registration away in words, with the counts, and the list counts the refusals", async () => {
    const s = await startTestServer({ limits: { maxWaiting: 2 } });
    t = s;
    const { code } = await mint(s.server);
    insertJoinRow(s.server);
    insertJoinRow(s.server);
    const joiner = await TestJoiner.create(s.server);
    const refused = await joiner.register(code);
    expect(refused.response.status).toBe(429);
    expect(refused.response.json).toMatchObject({
      code: "RATE_LIMITED",
      details: { waiting: 2, maxWaiting: 2 },
      detail: expect.stringMatching(
        /^2 registrations are already waiting for an operator's decision, the most this cluster keeps \(2, STRATUM_MAX_WAITING.*approving, rejecting or expiring one frees a slot/,
      ),
    });
    const after = (await list(s)).capacity.waiting;
    expect(after).toMatchObject({ count: 2, max: 2, refused: 1, lastRefusedAt: expect.any(String) });
    // Kept across a restart: a console opened later still sees machines were turned away.
    const restarted = await s.restart();
    t = restarted;
    expect((await list(restarted)).capacity.waiting.refused).toBe(1);
    await joiner.close();
  });
});

describe("twins: defaults that skip what others hold", () => {
  it("gives identical machines distinct names and addresses, and a refusal names the holder", async () => {
    const s = await startTestServer();
    t = s;
    s.server.setUpgrade(true);
    // Two clones: one host name, one static address on the first card, another on the second.
    const clone = (second: string) => {
      const inventory = sampleInventory("192.0.2.77") as any;
      inventory.nics[1].addresses = [`${second}/24`];
      return insertJoinRow(s.server, { hostname: "vm", sourceAddr: "127.0.0.1", inventory });
    };
    const a = clone("198.51.100.1");
    const b = clone("198.51.100.2");
    const c = clone("198.51.100.2");
    const first = await approve(s, a);
    expect(first.body.assignment).toMatchObject({ name: "vm", mgmt: { interface: "enp87s0", address: "192.0.2.77" } });
    const second = await preview(s, b);
    expect(second.status).toBe(200);
    expect(second.body.assignment).toMatchObject({
      name: "vm-2",
      mgmt: { interface: "enp2s0f0", address: "198.51.100.2" },
    });
    expect((await approve(s, b)).body.assignment).toEqual(second.body.assignment);
    // A third clone has no free address left on its cards: refused, naming what holds it.
    const third = await preview(s, c);
    expect(third.body.refusal.errors).toContainEqual({
      field: "mgmt.address",
      message: `192.0.2.77 is already held by vm (${a}, approved); give this machine another address (a new one as a CIDR, with a gateway)`,
    });
    // A name given that another approved join has is refused, naming it; the VIPs are named too.
    const named = await preview(s, c, {
      assignment: { name: "vm-2", mgmt: { interface: "enp2s0f0", address: "192.0.2.240" } },
    });
    expect(named.body.refusal.errors).toEqual(
      expect.arrayContaining([
        { field: "name", message: `vm-2 is already the name of vm (${b}, approved)` },
        expect.objectContaining({ field: "mgmt.address", message: expect.stringContaining("held by the API VIP") }),
      ]),
    );
    expect(
      (await preview(s, c, { assignment: { mgmt: { interface: "enp2s0f0" } } })).body.refusal.errors,
    ).toContainEqual({
      field: "mgmt.address",
      message: expect.stringContaining(`198.51.100.2 is already held by vm (${b}, approved)`),
    });
    expect(
      (await preview(s, c, { assignment: { name: "vm-3" } })).body.errors?.map((e: any) => e.field) ?? [],
    ).not.toContain("name");
  });
});
