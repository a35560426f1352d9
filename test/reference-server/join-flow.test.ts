// A machine joins the reference server end to end, over real sockets: mint, PAKE, registration,
// approval, delivery, progress, joined; and the other ends of the state machine (failed and
// retried, rejected, code checks that record nothing).
import { X509Certificate } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseJoinCode } from "../../src/core/join-code.js";
import { parsePairingCode } from "../../src/core/pairing.js";
import { sensitiveFields } from "../../generated/sensitive.js";
import { TestJoiner, admin, mint } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer;
beforeEach(async () => {
  t = await startTestServer();
});
afterEach(async () => {
  await t.dispose();
});

describe("a join from mint to joined", () => {
  it("registers, is approved, delivered, installs and joins", async () => {
    const { server } = t;
    expect(server.joinListenerOpen).toBe(false);
    const minted = await mint(server, { ttlSeconds: 3600 });
    expect(parseJoinCode(minted.code).formatted).toBe(minted.code);
    expect(minted.url).toBe(`stratum-join://${server.joinEndpoint}/${minted.code}`);
    expect(minted.joinCode.endpoint).toBe(server.joinEndpoint);
    expect(minted.joinCode.state).toBe("live");
    expect(Date.parse(minted.joinCode.expiresAt) - Date.parse(minted.joinCode.createdAt)).toBe(3600_000);
    expect(server.joinListenerOpen).toBe(true);

    const joiner = await TestJoiner.create(server);
    const registered = await joiner.register(minted.code);
    expect(registered.response.status).toBe(201);
    expect(registered.serverBindingOk).toBe(true);
    const registration = registered.response.json as any;
    expect(registration.state).toBe("pending");
    expect(parsePairingCode(registration.pairingCode)).toBe(parsePairingCode(registered.pairingCode!));
    const joinId = registration.joinId as string;

    // The same key again, on a new connection and exchange: its registration back, 200, first pairing code.
    const again = await TestJoiner.with(server, joiner.identity).register(minted.code, { hostname: "renamed" });
    expect(again.response.status).toBe(200);
    expect((again.response.json as any).joinId).toBe(joinId);
    expect((again.response.json as any).pairingCode).toBe(registration.pairingCode);

    const listed = await admin(server, "GET", "/v1/admin/cluster/joins", { operationId: "listNodeJoins" });
    expect(listed.body.items).toHaveLength(1);
    const item = listed.body.items[0];
    expect(item).toMatchObject({
      id: joinId,
      codeId: minted.joinCode.id,
      state: "pending",
      pairingCode: registration.pairingCode,
      hostname: "node-2",
      release: "0.6.0",
      sourceAddr: "127.0.0.1",
      keyFingerprint: joiner.identity.keyFingerprint,
      stalled: false,
      steps: [],
    });
    expect(item.expiresAt).toBe(new Date(Date.parse(minted.joinCode.expiresAt) + 24 * 3600_000).toISOString());
    const codes = await admin(server, "GET", "/v1/admin/cluster/join-codes", { operationId: "listJoinCodes" });
    expect(codes.body.items[0]).toMatchObject({ id: minted.joinCode.id, registrations: 1, attempts: 0 });

    // Long poll: nothing changes within a second → 304 with the same ETag.
    const first = await joiner.view(joinId);
    expect(first.status).toBe(200);
    const etag = first.headers.etag as string;
    const started = Date.now();
    const unchanged = await joiner.view(joinId, { waitSeconds: 1, etag });
    expect(unchanged.status).toBe(304);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);

    // Approve while a long poll waits: it wakes with the change.
    const waiting = joiner.view(joinId, { waitSeconds: 20, etag });
    const approved = await admin(server, "POST", `/v1/admin/cluster/joins/${joinId}/approve`, {
      body: {
        assignment: {
          rack: "r2",
          links: [{ name: "data", interface: "enp2s0f0", purposes: ["storage", "overlay"] }],
          disks: [{ key: "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_2TB_S6B0NL0W123456", role: "ceph-osd" }],
        },
      },
      operationId: "approveNodeJoin",
    });
    expect(approved.status).toBe(200);
    expect(approved.body.state).toBe("approved");
    expect(approved.body.nodeId).toMatch(/^n-/);
    const woke = await waiting;
    expect(woke.status).toBe(200);
    expect(woke.headers.etag).not.toBe(etag);

    const delivering = await eventually(async () => {
      const v = await joiner.view(joinId);
      return (v.json as any).state === "delivering" ? (v.json as any) : undefined;
    });
    const { delivery } = delivering;
    expect(delivery.nodeId).toBe(approved.body.nodeId);
    const bundle = delivery.bundle;
    expect(bundle.role).toBe("hybrid");
    expect(bundle.clusterId).toBe(server.cluster.clusterId);
    expect(bundle.caBundle).toBe(server.caPem);
    expect(bundle.membershipGeneration).toBe(2);
    expect(bundle.nodes.map((n: any) => n.nodeId)).toContain(delivery.nodeId);
    const self = bundle.nodes.find((n: any) => n.nodeId === delivery.nodeId);
    expect(self.networks.storage).toEqual({ ip: "10.90.0.1", interface: "enp2s0f0" });
    expect(self.labels).toEqual({ "topology.rack": "r2" });
    // Every secret a hybrid node of a single-instance cluster needs; no unseal key (spec: Bundle.openBaoUnsealKey).
    for (const field of sensitiveFields.Bundle)
      expect(typeof bundle[field], field).toBe(field === "openBaoUnsealKey" ? "undefined" : "string");
    const leaf = new X509Certificate(bundle.nodeCert);
    expect(leaf.verify(new X509Certificate(server.caPem).publicKey)).toBe(true);
    expect(leaf.subjectAltName).toContain(`urn:stratum:node:${delivery.nodeId}`);
    expect(leaf.subjectAltName).not.toContain("join-listener");
    const nodeYaml = parse(delivery.nodeYaml);
    expect(nodeYaml.node).toMatchObject({ id: delivery.nodeId, name: "node-2", role: "hybrid" });
    expect(nodeYaml.network.mgmt).toEqual({ interface: "enp87s0", address: "192.0.2.21" });
    const members = await admin(server, "GET", "/v1/admin/cluster/members", { operationId: "listClusterMembers" });
    expect(members.body.membershipGeneration).toBe(2);
    expect(members.body.items.find((m: any) => m.nodeId === delivery.nodeId)).toMatchObject({
      state: "joining",
      name: "node-2",
    });
    // The admin never sees the delivery.
    const adminView = await admin(server, "GET", `/v1/admin/cluster/joins/${joinId}`, { operationId: "getNodeJoin" });
    expect(JSON.stringify(adminView.body)).not.toContain(bundle.nodeKey);
    expect(adminView.body.deliveredAt).toBeDefined();

    const installing = await joiner.progress(joinId, {
      steps: [{ name: "storage", title: "Preparing disks", status: "running" }],
      log: ["10:00 preparing disks"],
    });
    expect(installing.status).toBe(200);
    expect((installing.json as any).state).toBe("installing");
    const joined = await joiner.progress(joinId, {
      steps: [
        { name: "storage", title: "Preparing disks", status: "done" },
        { name: "join", title: "Joining the cluster", status: "done" },
      ],
      log: ["10:05 joined"],
    });
    expect((joined.json as any).state).toBe("joined");
    expect((joined.json as any).delivery).toBeUndefined();
    const final = await admin(server, "GET", `/v1/admin/cluster/joins/${joinId}`, { operationId: "getNodeJoin" });
    expect(final.body).toMatchObject({ state: "joined", logTail: ["10:00 preparing disks", "10:05 joined"] });
    expect(final.body.steps.map((s: any) => [s.name, s.status])).toEqual([
      ["storage", "done"],
      ["join", "done"],
    ]);
    const after = await admin(server, "GET", "/v1/admin/cluster/members", { operationId: "listClusterMembers" });
    expect(after.body.items.find((m: any) => m.nodeId === delivery.nodeId)).toMatchObject({
      state: "active",
      appliedGeneration: 2,
    });
    // A joined join takes no more reports.
    expect((await joiner.progress(joinId, { log: ["late"] })).status).toBe(409);

    // The listener closes once no code is live and no registration is open.
    await admin(server, "DELETE", `/v1/admin/cluster/join-codes/${minted.joinCode.id}`, {
      operationId: "revokeJoinCode",
    });
    await joiner.close();
    await eventually(() => !server.joinListenerOpen);
    const actions = server.store.auditEntries().map((e) => e.action);
    for (const a of [
      "cluster.join_code.minted",
      "cluster.join.registered",
      "cluster.join.approved",
      "cluster.join.delivering",
      "cluster.join.installing",
      "cluster.join.joined",
      "cluster.join_code.revoked",
    ])
      expect(actions).toContain(a);
    // No secret in any log line or audit entry.
    const everything = t.logs.join("\n") + JSON.stringify(server.store.auditEntries());
    expect(everything).not.toContain(parseJoinCode(minted.code).code);
    expect(everything).not.toContain(minted.code);
    expect(everything).not.toContain(server.adminToken);
    expect(everything).not.toContain(bundle.nodeKey.split("\n")[1]);
    expect(everything).not.toContain(bundle.postgresPassword);
    expect(t.logs.some((l) => / join 127\.0\.0\.1 POST \/v1\/join\/registrations 201 \d+ms$/.test(l))).toBe(true);
  });

  it("fails at a step, keeps its addresses when retried, and is delivered again", async () => {
    const { server } = t;
    const minted = await mint(server);
    const joiner = await TestJoiner.create(server);
    const joinId = ((await joiner.register(minted.code)).response.json as any).joinId;
    const approved = await admin(server, "POST", `/v1/admin/cluster/joins/${joinId}/approve`, {
      body: { assignment: { links: [{ name: "data", interface: "enp2s0f0", purposes: ["storage"] }] } },
      operationId: "approveNodeJoin",
    });
    expect(approved.body.assignment.links[0]).toMatchObject({
      addresses: ["10.90.0.1/24"],
      addressesAllocated: true,
      mtu: 9000,
    });
    await eventually(async () => ((await joiner.view(joinId)).json as any).state === "delivering");
    const failed = await joiner.progress(joinId, {
      steps: [
        { name: "join/patroni", title: "Joining Patroni", status: "failed", message: "replica never found the leader" },
      ],
    });
    expect(failed.json).toMatchObject({
      state: "failed",
      failedStep: "join/patroni",
      failedError: "replica never found the leader",
    });
    const view = await admin(server, "GET", `/v1/admin/cluster/joins/${joinId}`, { operationId: "getNodeJoin" });
    expect(view.body).toMatchObject({
      state: "failed",
      failedStep: "join/patroni",
      failedStepTitle: "Joining Patroni",
    });
    const members = await admin(server, "GET", "/v1/admin/cluster/members", { operationId: "listClusterMembers" });
    expect(members.body.items).toHaveLength(1);

    // (A failed join may also be rejected: join-actions.test.ts.)
    const retried = await admin(server, "POST", `/v1/admin/cluster/joins/${joinId}/retry`, {
      operationId: "retryNodeJoin",
    });
    expect(retried.status).toBe(200);
    expect(retried.body.state).toBe("approved");
    expect(retried.body.failedStep).toBeUndefined();
    expect(retried.body.assignment.links[0].addresses).toEqual(["10.90.0.1/24"]);
    const again = await eventually(async () => {
      const v = (await joiner.view(joinId)).json as any;
      return v.state === "delivering" ? v : undefined;
    });
    expect(again.delivery.nodeId).toBe(approved.body.nodeId);
    expect(again.delivery.bundle.membershipGeneration).toBe(3);
    expect(
      (await admin(server, "POST", `/v1/admin/cluster/joins/${joinId}/retry`, { operationId: "retryNodeJoin" })).status,
    ).toBe(409);
  });

  it("gives a key whose registration expired a new registration (201), not the expired one back", async () => {
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const first = (await joiner.register(minted.code)).response.json as any;
    t.server.store.tx(() => t.server.store.patchJoin(first.joinId, { state: "expired" }));
    const again = await TestJoiner.with(t.server, joiner.identity).register(minted.code);
    expect(again.response.status).toBe(201);
    const second = again.response.json as any;
    expect(second.joinId).not.toBe(first.joinId);
    expect(second.state).toBe("pending");
    // The expired one stays as it was, for the record.
    expect(t.server.store.getJoin(first.joinId)!.state).toBe("expired");
  });

  it("rejects a machine, whose key is refused from then on", async () => {
    const { server } = t;
    const minted = await mint(server);
    const joiner = await TestJoiner.create(server);
    const joinId = ((await joiner.register(minted.code)).response.json as any).joinId;
    const rejected = await admin(server, "POST", `/v1/admin/cluster/joins/${joinId}/reject`, {
      body: { reason: "not ours" },
      operationId: "rejectNodeJoin",
    });
    expect(rejected.body).toMatchObject({ state: "rejected", reason: "not ours", rejectedBy: "bootstrap-admin" });
    const seen = await joiner.view(joinId);
    expect(seen.json).toMatchObject({ state: "rejected", reason: "not ours" });
    const back = await TestJoiner.with(server, joiner.identity).register(minted.code);
    expect(back.response.status).toBe(409);
    expect(back.response.json).toMatchObject({ code: "REGISTRATION_REJECTED", details: { reason: "not ours" } });
    expect(
      (await admin(server, "POST", `/v1/admin/cluster/joins/${joinId}/approve`, { operationId: "approveNodeJoin" }))
        .body.code,
    ).toBe("JOIN_STATE_CONFLICT");
    expect(
      (
        await admin(server, "POST", `/v1/admin/cluster/joins/${joinId}/reject`, {
          body: {},
          operationId: "rejectNodeJoin",
        })
      ).body.errors,
    ).toEqual([{ field: "reason", message: expect.any(String) }]);
  });

  it("answers a code check and records nothing", async () => {
    const { server } = t;
    const minted = await mint(server);
    const joiner = await TestJoiner.create(server);
    const checked = await joiner.prove(minted.code, "code-checks", { release: "0.6.0" });
    expect(checked.response.status).toBe(200);
    expect(checked.serverBindingOk).toBe(true);
    expect(checked.response.json).toEqual({ clusterRelease: "0.6.0", expiresAt: minted.joinCode.expiresAt });
    expect((await admin(server, "GET", "/v1/admin/cluster/joins")).body.items).toEqual([]);
    expect(server.store.auditEntries().some((e) => e.action.startsWith("cluster.join."))).toBe(false);
    const codes = await admin(server, "GET", "/v1/admin/cluster/join-codes");
    expect(codes.body.items[0]).toMatchObject({ attempts: 0, registrations: 0 });
  });

  it("serves another key nothing: 404 on its view, its progress", async () => {
    const { server } = t;
    const minted = await mint(server);
    const joiner = await TestJoiner.create(server);
    const joinId = ((await joiner.register(minted.code)).response.json as any).joinId;
    const stranger = await TestJoiner.create(server);
    stranger.caDer = joiner.caDer;
    expect((await stranger.view(joinId)).status).toBe(404);
    expect((await stranger.progress(joinId, { log: ["x"] })).status).toBe(404);
    expect((await joiner.view("nj-unknown0")).status).toBe(404);
    // A pending join takes no progress report.
    expect((await joiner.progress(joinId, { log: ["x"] })).json).toMatchObject({ code: "JOIN_STATE_CONFLICT" });
  });
});
