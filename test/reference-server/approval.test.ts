// Approving a join: the assignment's defaults, address allocation, copyFrom, and every refusal
// at its field path. Registrations are written straight into the store (the PAKE is tested
// elsewhere); approvals go over HTTP and are held to the spec.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JoinRow } from "../../examples/reference-server/rows.js";
import { admin, insertJoinRow } from "./helpers.js";
import { sampleInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  // An upgrade in progress holds the runner: approved joins stay approved (and hold no member
  // row), so each test sees only the joins it made.
  t.server.setUpgrade(true);
});
afterAll(async () => {
  await t.dispose();
});

const insertJoin = (overrides: Partial<JoinRow> = {}): string => insertJoinRow(t.server, overrides);

const approve = (id: string, body?: unknown) =>
  admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, {
    ...(body !== undefined ? { body } : {}),
    operationId: "approveNodeJoin",
  });
const fields = (answer: { body: any }): string[] => (answer.body.errors ?? []).map((e: any) => e.field);
const founder = () => t.server.store.listMembers()[0]!;
/** Puts approved joins back to rejected, so the control-plane count does not leak between tests. */
function settle(...ids: string[]): void {
  t.server.store.tx(() => ids.forEach((id) => t.server.store.patchJoin(id, { state: "rejected" })));
}

describe("approval defaults", () => {
  it("fills in name, role, mgmt and provider from the machine and the cluster", async () => {
    const id = insertJoin();
    const answer = await approve(id);
    expect(answer.status).toBe(200);
    expect(answer.body.state).toBe("approved");
    expect(answer.body.approvedBy).toBe("bootstrap-admin");
    expect(answer.body.assignment).toEqual({
      name: `host-${id}`,
      role: "hybrid",
      mgmt: { interface: "enp87s0", address: t.server.store.getJoin(id)!.sourceAddr },
      provider: { topology: "bridged", vlan: 100, upstreamInterface: "enp87s0" },
    });
    expect(answer.body.waitReason).toEqual(expect.any(String));
    settle(id);
  });

  it("takes the first wired IPv4 NIC for a joiner on the server's own machine (loopback)", async () => {
    const id = insertJoin({ sourceAddr: "127.0.0.1" });
    const answer = await approve(id);
    const own = (t.server.store.getJoin(id)!.inventory!.nics![0]!.addresses![0] as string).split("/")[0];
    expect(answer.body.assignment.mgmt).toEqual({ interface: "enp87s0", address: own });
    settle(id);
  });

  it("allocates storage and overlay addresses, skipping held ones, and sets the MTU", async () => {
    const a = insertJoin();
    const b = insertJoin();
    const link = { name: "data", interface: "enp2s0f0", purposes: ["storage", "overlay"] };
    const first = await approve(a, { assignment: { links: [link] } });
    const second = await approve(b, { assignment: { links: [link] } });
    expect(first.body.assignment.links[0]).toMatchObject({
      addresses: ["10.90.0.1/24", "10.91.0.1/24"],
      addressesAllocated: true,
      mtu: 9000,
      kind: "ethernet",
    });
    expect(second.body.assignment.links[0]).toMatchObject({
      addresses: ["10.90.0.2/24", "10.91.0.2/24"],
      addressesAllocated: true,
    });
    // A named address must be free and in the network.
    const c = insertJoin();
    const taken = await approve(c, {
      assignment: { links: [{ ...link, addresses: ["10.90.0.1/24", "10.91.0.50/24"] }] },
    });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ code: "JOIN_APPROVAL_REFUSED", errors: [{ field: "links[0].addresses[0]" }] });
    const outside = await approve(c, {
      assignment: { links: [{ ...link, addresses: ["10.99.0.5/24", "10.91.0.50/24"] }] },
    });
    expect(fields(outside)).toEqual(["links[0].addresses[0]", "links[0].addresses"]);
    const founderHeld = await approve(c, {
      assignment: { links: [{ ...link, addresses: ["10.90.0.11/24", "10.91.0.50/24"] }] },
    });
    expect(fields(founderHeld)).toEqual(["links[0].addresses[0]"]);
    const named = await approve(c, {
      assignment: { links: [{ ...link, addresses: ["10.90.0.50/24", "10.91.0.50/24"], mtu: 1500 }] },
    });
    expect(named.status).toBe(200);
    expect(named.body.assignment.links[0].addressesAllocated).toBeUndefined();
    expect(named.body.assignment.links[0].mtu).toBe(1500);
    settle(a, b, c);
  });

  it("keeps the address of a failed join when it is approved again", async () => {
    const id = insertJoin();
    const link = { name: "data", interface: "enp2s0f0", purposes: ["storage"] };
    const first = await approve(id, { assignment: { links: [link] } });
    const address = first.body.assignment.links[0].addresses[0];
    t.server.store.tx(() => t.server.store.patchJoin(id, { state: "failed", failedStep: "storage" }));
    const other = insertJoin();
    const second = await approve(other, { assignment: { links: [link] } });
    expect(second.body.assignment.links[0].addresses[0]).not.toBe(address); // a failed join holds its address
    const again = await approve(id, { assignment: { links: [link] } });
    expect(again.body.state).toBe("approved");
    expect(again.body.assignment.links[0].addresses[0]).toBe(address);
    expect(again.body.failedStep).toBeUndefined();
    settle(id, other);
  });
});

describe("approval refusals, at their fields", () => {
  it("refuses every role but hybrid at role, and a non-role as bad input", async () => {
    const id = insertJoin();
    const refused = await approve(id, { assignment: { role: "storage" } });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: "JOIN_APPROVAL_REFUSED", errors: [{ field: "role" }] });
    const bad = await approve(id, { assignment: { role: "wizard" } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: "INVALID_INPUT", errors: [{ field: "assignment.role" }] });
    const shape = await approve(id, { assignment: { links: [{ name: "x" }], disks: "no" } });
    expect(shape.status).toBe(400);
    expect(fields(shape).sort()).toEqual(["assignment.disks", "assignment.links[0].interface"]);
  });

  it("takes at most 5 control-plane nodes", async () => {
    const ids = [insertJoin(), insertJoin(), insertJoin(), insertJoin(), insertJoin()];
    for (const id of ids.slice(0, 4)) expect((await approve(id)).status).toBe(200);
    const fifth = await approve(ids[4]!);
    expect(fifth.status).toBe(409);
    expect(fifth.body.errors).toEqual([{ field: "role", message: expect.stringContaining("at most 5") }]);
    settle(...ids);
  });

  it("keys disks by WWN or by-id, never the system disk, and wants confirm for a disk with data", async () => {
    const id = insertJoin();
    const refused = await approve(id, {
      assignment: {
        disks: [
          { key: "/dev/nvme1n1", role: "ceph-osd" },
          { key: "/dev/disk/by-id/nvme-SYSTEM_DISK_0001", role: "compute" },
          { key: "naa.5000c500a1b2c3d4", role: "compute" },
          { key: "eui.002538b221b0a1c2", role: "ceph-osd", pool: "fast" },
          { key: "/dev/disk/by-id/ata-OLD_DISK_42", role: "ceph-osd", confirm: "sda" },
          { key: "/dev/disk/by-id/nope", role: "unused" },
        ],
      },
    });
    expect(refused.status).toBe(409);
    expect(fields(refused)).toEqual([
      "disks[0].key",
      "disks[1].key",
      "disks[2].confirm",
      "disks[3].pool",
      "disks[4].key",
      "disks[4].confirm",
      "disks[5].key",
    ]);
    expect(refused.body.errors[0].message).toContain("WWN");
    expect(refused.body.errors[1].message).toContain("system disk");
    const ok = await approve(id, {
      assignment: {
        disks: [
          { key: "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_2TB_S6B0NL0W123456", role: "ceph-osd" },
          { key: "naa.5000c500a1b2c3d4", role: "compute", confirm: "naa.5000c500a1b2c3d4" },
        ],
      },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.assignment.disks).toEqual([
      { key: "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_2TB_S6B0NL0W123456", role: "ceph-osd" },
      {
        key: "naa.5000c500a1b2c3d4",
        role: "compute",
        confirm: "naa.5000c500a1b2c3d4",
        pool: "local",
        storageClass: "local",
      },
    ]);
    expect(ok.body.assignment.diskNames).toBeUndefined();
    settle(id);
  });

  it("takes an unprobed disk (no holders) as holding data: its wipe needs the typed confirmation", async () => {
    // The joiner leaves `holders` out when it could not probe a disk; "Empty means blank",
    // and only empty does: unknown must never be wiped unasked.
    const inventory = sampleInventory("192.0.2.251") as any;
    const unprobed = inventory.disks[1];
    delete unprobed.holders;
    unprobed.partitions = [];
    unprobed.stack = [];
    const id = insertJoin({ inventory, sourceAddr: "192.0.2.251" });
    const key = "eui.002538b221b0a1c2";
    const refused = await approve(id, { assignment: { disks: [{ key, role: "ceph-osd" }] } });
    expect(refused.status).toBe(409);
    expect(refused.body.errors).toEqual([
      { field: "disks[0].confirm", message: expect.stringContaining("nvme1n1 was not probed") },
    ]);
    const preview = await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approval-preview`, {
      body: { assignment: { disks: [{ key, role: "compute" }] } },
      operationId: "previewApproval",
    });
    // The preview answers a refused assignment with the refusal, at the same field.
    expect(preview.status).toBe(200);
    expect(preview.body.refusal.errors.map((e: { field: string }) => e.field)).toEqual(["disks[0].confirm"]);
    // Left unused, it needs nothing; confirmed, it is taken (and node.yaml may wipe it).
    expect((await approve(id, { assignment: { disks: [{ key, role: "unused" }] } })).status).toBe(200);
    settle(id);
    const twin = { ...sampleInventory("192.0.2.252"), disks: inventory.disks };
    const again = insertJoin({ inventory: twin, sourceAddr: "192.0.2.252" });
    const ok = await approve(again, { assignment: { disks: [{ key, role: "ceph-osd", confirm: key }] } });
    expect(ok.status).toBe(200);
    expect(ok.body.assignment.disks).toEqual([{ key, role: "ceph-osd", confirm: key }]);
    // A probed, empty disk is blank: no confirmation.
    const blank = insertJoin();
    expect((await approve(blank, { assignment: { disks: [{ key, role: "ceph-osd" }] } })).status).toBe(200);
    settle(again, blank);
  });

  it("wants interfaces that exist and links that make sense", async () => {
    const id = insertJoin();
    const refused = await approve(id, {
      assignment: {
        links: [
          { name: "a", interface: "eth9", purposes: ["storage"] },
          { name: "b", kind: "vlan", interface: "vlan90", purposes: ["storage"] },
          { name: "c", kind: "bond", interface: "bond0", purposes: ["oob"] },
          { name: "d", interface: "enp2s0f0", controller: "bond7", addresses: ["10.90.0.40/24"] },
        ],
        mgmt: { interface: "wlan0" },
      },
    });
    expect(refused.status).toBe(409);
    expect(fields(refused)).toEqual([
      "links[0].interface",
      "links[1].parent",
      "links[1].vlanId",
      "links[1].purposes",
      "links[2].bond",
      "links[2].interface",
      "links[2].purposes",
      "links[3].controller",
      "links[3].addresses",
      "mgmt.interface",
    ]);
    const bonded = await approve(id, {
      assignment: {
        links: [
          {
            name: "bond0",
            kind: "bond",
            interface: "bond0",
            bond: { mode: "802.3ad" },
            purposes: ["storage", "overlay"],
          },
          { name: "m1", interface: "enp2s0f0", controller: "bond0" },
          { name: "v", kind: "vlan", interface: "vlan100", parent: "bond0", vlanId: 100, purposes: ["provider"] },
        ],
      },
    });
    expect(bonded.status).toBe(200);
    expect(bonded.body.assignment.links[0].addressesAllocated).toBe(true);
    expect(bonded.body.assignment.links[1].addresses).toBeUndefined();
    expect(bonded.body.assignment.provider.upstreamInterface).toBe("vlan100");
    settle(id);
  });

  it("holds the provider uplink to the cluster's topology and VLAN", async () => {
    const id = insertJoin();
    const refused = await approve(id, { assignment: { provider: { topology: "routed-host", vlan: 200 } } });
    expect(fields(refused)).toEqual(["provider.topology", "provider.vlan"]);
    const missing = await approve(id, { assignment: { provider: { upstreamInterface: "eth7" } } });
    expect(fields(missing)).toEqual(["provider.upstreamInterface"]);
    const clash = await approve(id, {
      assignment: { links: [{ name: "data", interface: "enp87s0", purposes: ["storage"] }] },
    });
    expect(fields(clash)).toEqual(["provider.upstreamInterface"]);
    expect(clash.body.errors[0].message).toContain("bridged");
  });

  it("checks the mgmt address", async () => {
    const id = insertJoin();
    expect(fields(await approve(id, { assignment: { mgmt: { address: "192.0.2.99" } } }))).toEqual(["mgmt.address"]);
    expect(fields(await approve(id, { assignment: { mgmt: { address: "192.0.2.99/24" } } }))).toEqual(["mgmt.gateway"]);
    expect(
      fields(await approve(id, { assignment: { mgmt: { address: "192.0.2.11/24", gateway: "192.0.2.1" } } })),
    ).toEqual(["mgmt.address"]);
    const ok = await approve(id, {
      assignment: { mgmt: { address: "192.0.2.99/24", gateway: "192.0.2.1", dns: ["192.0.2.53"] } },
    });
    expect(ok.status).toBe(200);
    settle(id);
  });

  it("rejects an approved join that has not started delivering, and not a running one", async () => {
    const id = insertJoin();
    expect((await approve(id)).body.state).toBe("approved");
    const rejected = await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/reject`, {
      body: { reason: "wrong rack" },
      operationId: "rejectNodeJoin",
    });
    expect(rejected.body).toMatchObject({ state: "rejected", reason: "wrong rack" });
    const running = insertJoin({ state: "installing" });
    const refused = await admin(t.server, "POST", `/v1/admin/cluster/joins/${running}/reject`, {
      body: { reason: "late" },
      operationId: "rejectNodeJoin",
    });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("JOIN_STATE_CONFLICT");
    settle(running);
  });

  it("refuses approving a join that is not pending or failed", async () => {
    const upgrading = insertJoin({
      state: "needs-upgrade",
      release: "0.5.0",
      upgrade: { from: "0.5.0", to: "0.6.0", served: true },
    });
    const answer = await approve(upgrading);
    expect(answer.status).toBe(409);
    expect(answer.body.code).toBe("JOIN_STATE_CONFLICT");
    expect((await approve("nj-nosuch00")).status).toBe(404);
    // Rejecting a needs-upgrade join is allowed.
    const rejected = await admin(t.server, "POST", `/v1/admin/cluster/joins/${upgrading}/reject`, {
      body: { reason: "old" },
      operationId: "rejectNodeJoin",
    });
    expect(rejected.body.state).toBe("rejected");
  });
});

describe("copyFrom", () => {
  it("copies a member's assignment, matching NICs and disks by name", async () => {
    const id = insertJoin();
    const answer = await approve(id, { copyFrom: founder().nodeId, assignment: { rack: "r9" } });
    expect(answer.status).toBe(200);
    const a = answer.body.assignment;
    expect(a.copiedFrom).toBe(founder().nodeId);
    expect(a.copyNotes).toEqual([]);
    expect(a.rack).toBe("r9");
    expect(a.links[0]).toMatchObject({
      interface: "enp2s0f0",
      purposes: ["storage", "overlay"],
      addressesAllocated: true,
    });
    expect(a.links[0].addresses[0]).not.toBe("10.90.0.11/24");
    expect(a.disks).toEqual([{ key: "eui.002538b221b0a1c2", role: "ceph-osd" }]);
    settle(id);
  });

  it("says in copyNotes what it could not match", async () => {
    const inventory = sampleInventory("192.0.2.250") as any;
    inventory.nics = inventory.nics.filter((n: any) => n.name !== "enp2s0f0");
    inventory.disks = inventory.disks.filter((d: any) => d.name !== "nvme1n1");
    const id = insertJoin({ inventory, sourceAddr: "192.0.2.250" });
    const answer = await approve(id, { copyFrom: founder().nodeId });
    expect(answer.status).toBe(200);
    expect(answer.body.assignment.copyNotes).toHaveLength(2);
    expect(answer.body.assignment.copyNotes.join("\n")).toMatch(/enp2s0f0[\s\S]*nvme1n1/);
    expect(answer.body.assignment.links).toBeUndefined();
    const unknown = await approve(insertJoin(), { copyFrom: "n-nobody00" });
    expect(fields(unknown)).toEqual(["copyFrom"]);
    settle(id);
  });
});

describe("networks", () => {
  it("lists the networks approvals allocate from", async () => {
    const answer = await admin(t.server, "GET", "/v1/admin/cluster/networks", { operationId: "getClusterNetworks" });
    expect(answer.body).toMatchObject({
      storage: { cidr: "10.90.0.0/24" },
      overlay: { cidr: "10.91.0.0/24" },
      providerTopology: "bridged",
      providerVlan: 100,
    });
  });
});
