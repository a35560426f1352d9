// The approval preview: the assignment an approval would apply, through the same check, with
// nothing changed on the founder. Over HTTP (held to the spec) and through the admin client.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdminClient, StratumApiError } from "../../src/index.js";
import { validateResponses } from "../../src/validate/index.js";
import { admin, insertJoinRow } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  // An upgrade in progress holds the runner: an approved join stays approved.
  t.server.setUpgrade(true);
});
afterAll(async () => {
  await t.dispose();
});

const preview = (id: string, body?: unknown) =>
  admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approval-preview`, {
    ...(body !== undefined ? { body } : {}),
    operationId: "previewApproval",
  });
const approve = (id: string, body?: unknown) =>
  admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, {
    ...(body !== undefined ? { body } : {}),
    operationId: "approveNodeJoin",
  });
const client = () =>
  createAdminClient({ baseUrl: t.server.adminUrl, token: t.server.adminToken, validate: validateResponses });
/** Everything a change could touch: the join's row, every member, the audit trail, the generation. */
const snapshot = (id: string) => ({
  join: t.server.store.getJoin(id),
  members: t.server.store.listMembers(),
  audit: t.server.store.auditEntries().length,
  generation: t.server.cluster.generation(),
});
function settle(...ids: string[]): void {
  t.server.store.tx(() => ids.forEach((id) => t.server.store.patchJoin(id, { state: "rejected" })));
}

describe("approval preview", () => {
  it("answers the default assignment that approve then applies, and changes nothing", async () => {
    const id = insertJoinRow(t.server);
    const before = snapshot(id);
    const previewed = await preview(id);
    expect(previewed.status).toBe(200);
    expect(previewed.body.assignment).toEqual({
      name: `host-${id}`,
      role: "hybrid",
      mgmt: { interface: "enp87s0", address: "192.0.2.21" },
      provider: { topology: "bridged", vlan: 100, upstreamInterface: "enp87s0" },
    });
    expect(snapshot(id)).toEqual(before);
    const approved = await approve(id);
    expect(approved.status).toBe(200);
    expect(approved.body.assignment).toEqual(previewed.body.assignment);
    settle(id);
  });

  it("allocates the addresses approve then gives, holding none of them itself", async () => {
    const link = { name: "data", interface: "enp2s0f0", purposes: ["storage", "overlay"] };
    const body = { assignment: { links: [link], disks: [{ key: "eui.002538b221b0a1c2", role: "compute" }] } };
    const a = insertJoinRow(t.server);
    const b = insertJoinRow(t.server);
    const first = await preview(a, body);
    // A preview holds nothing: a second join previewed now is offered the same addresses.
    const second = await preview(b, body);
    expect(second.body.assignment.links).toEqual(first.body.assignment.links);
    expect(first.body.assignment.links[0]).toMatchObject({ addressesAllocated: true, mtu: 9000 });
    expect(first.body.assignment.disks).toEqual([
      { key: "eui.002538b221b0a1c2", role: "compute", pool: "local", storageClass: "local" },
    ]);
    const approved = await approve(a, body);
    expect(approved.body.assignment).toEqual(first.body.assignment);
    // Once a holds them, b's preview moves on to the next free addresses.
    const after = await preview(b, body);
    expect(after.body.assignment.links[0].addresses).not.toEqual(first.body.assignment.links[0].addresses);
    settle(a, b);
  });

  it("copies from a member as approve does, with the copy notes", async () => {
    const id = insertJoinRow(t.server);
    const founder = t.server.store.listMembers()[0]!;
    const previewed = await preview(id, { copyFrom: founder.nodeId });
    expect(previewed.body.assignment).toMatchObject({ copiedFrom: founder.nodeId, copyNotes: expect.any(Array) });
    const approved = await approve(id, { copyFrom: founder.nodeId });
    expect(approved.body.assignment).toEqual(previewed.body.assignment);
    settle(id);
  });

  it("answers the refusal approve would give, with 200 (no failed request in a browser's log), and changes nothing", async () => {
    const id = insertJoinRow(t.server);
    const body = {
      assignment: {
        role: "storage",
        links: [{ name: "data", interface: "eth9", purposes: ["storage"] }],
        disks: [{ key: "eui.0000000000000001", role: "ceph-osd" }],
        provider: { vlan: 7 },
      },
    };
    const before = snapshot(id);
    const refused = await preview(id, body);
    expect(refused.status).toBe(200);
    expect(refused.body.assignment).toBeUndefined();
    expect(refused.body.refusal).toMatchObject({
      status: 409,
      code: "JOIN_APPROVAL_REFUSED",
      requestId: expect.any(String),
    });
    expect(refused.body.refusal.errors.map((e: { field: string }) => e.field)).toEqual(
      expect.arrayContaining(["role", "links[0].interface", "disks[0].key", "provider.vlan"]),
    );
    expect(snapshot(id)).toEqual(before);
    const approveRefused = await approve(id, body);
    expect(approveRefused.status).toBe(409);
    expect(approveRefused.body.errors).toEqual(refused.body.refusal.errors);
    settle(id);
  });

  it("refuses a join that cannot be approved, and an unknown one, as approve does", async () => {
    const upgrading = insertJoinRow(t.server, { state: "needs-upgrade" });
    expect((await preview(upgrading)).body.code).toBe("JOIN_STATE_CONFLICT");
    const approved = insertJoinRow(t.server);
    await approve(approved);
    const conflict = await preview(approved);
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe("JOIN_STATE_CONFLICT");
    expect((await preview("nj-none0000")).status).toBe(404);
    const invalid = await preview(approved, { assignment: { links: "no" } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.code).toBe("INVALID_INPUT");
    settle(upgrading, approved);
  });

  it("is the admin client's previewApproval, validated against the spec", async () => {
    const id = insertJoinRow(t.server);
    const before = snapshot(id);
    const { assignment } = await client().previewApproval(id, { assignment: { rack: "r2" } });
    expect(assignment).toMatchObject({ rack: "r2", role: "hybrid", name: `host-${id}` });
    expect(snapshot(id)).toEqual(before);
    const error = await client()
      .previewApproval(id, { assignment: { name: "node-1" } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error).toMatchObject({ status: 409, code: "JOIN_APPROVAL_REFUSED" });
    expect((error as StratumApiError).errors.map((e) => e.field)).toEqual(["name"]);
    const approved = await client().approveNodeJoin(id, { assignment: { rack: "r2" } });
    expect(approved.assignment).toEqual(assignment);
    settle(id);
  });
});
