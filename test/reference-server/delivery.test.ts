// What a delivery carries, by the rules of the seed page's Bundle and Assignment fields: the
// unseal key only where OpenBao runs as a raft, the cluster's NTP servers unless the
// assignment names its own, and the OS disk layout read off the partitions when the machine
// has no install record. Joins are written straight into the store as approved (the PAKE is
// tested elsewhere); the runner delivers them as it would any approved join.
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { bundleSecrets, type ClusterSecrets } from "../../examples/reference-server/delivery.js";
import type { StoredAssignment } from "../../examples/reference-server/rows.js";
import { insertJoinRow } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { sampleInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer | undefined;
let nodes = 0;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

const ASSIGNMENT: StoredAssignment = {
  name: "node-2",
  role: "hybrid",
  mgmt: { interface: "enp87s0", address: "192.0.2.21" },
};

/** Approves a join written into the store and waits for the runner to deliver it. */
async function delivered(
  server: TestServer["server"],
  overrides: Parameters<typeof insertJoinRow>[1] = {},
): Promise<{ nodeYaml: string; bundle: Record<string, any> }> {
  const id = insertJoinRow(server, {
    state: "approved",
    nodeId: `n-test${String(nodes++).padStart(4, "0")}`,
    assignment: ASSIGNMENT,
    ...overrides,
  });
  const delivery = await eventually(() => server.store.getJoin(id)?.delivery);
  return delivery as { nodeYaml: string; bundle: Record<string, any> };
}

describe("the OpenBao unseal key", () => {
  it("is not in the bundle of a single-instance cluster (the default)", async () => {
    t = await startTestServer();
    const { bundle } = await delivered(t.server);
    expect(bundle.openBaoUnsealKey).toBeUndefined();
    expect(JSON.stringify(bundle)).not.toContain(t.server.cluster.secrets.openBaoUnsealKey);
    // The rest of what a control plane needs is there.
    expect(bundle.openBaoToken).toBe(t.server.cluster.secrets.openBaoToken);
    expect(bundle.adminPassword).toBe(t.server.cluster.secrets.adminPassword);
  });

  it("is in the bundle of a raft cluster (openBaoMode raft)", async () => {
    t = await startTestServer({ openBaoMode: "raft" });
    const { bundle } = await delivered(t.server);
    expect(bundle.openBaoUnsealKey).toBe(t.server.cluster.secrets.openBaoUnsealKey);
  });

  it("is never given to a Postgres-only replica, nor the control plane's secrets", () => {
    const secrets: ClusterSecrets = {
      postgresPassword: "pg",
      adminPassword: "admin",
      openBaoToken: "token",
      dnsEncryptionKey: "dns",
      openBaoUnsealKey: "unseal",
    };
    expect(bundleSecrets(secrets, "raft", { controlPlane: false })).toEqual({
      postgresPassword: "pg",
      dnsEncryptionKey: "dns",
    });
    expect(bundleSecrets(secrets, "raft", { controlPlane: true })).toEqual({ ...secrets });
    expect(bundleSecrets(secrets, "single-instance", { controlPlane: true })).not.toHaveProperty("openBaoUnsealKey");
  });
});

describe("node.yaml", () => {
  it("carries the cluster's NTP servers, unless the assignment names its own", async () => {
    t = await startTestServer({ cluster: { ntpServers: ["192.0.2.123", "192.0.2.124"] } });
    const cluster = parse((await delivered(t.server)).nodeYaml);
    expect(cluster.ntp).toEqual({ servers: ["192.0.2.123", "192.0.2.124"] });
    t.server.store.tx(() => {
      for (const j of t!.server.store.listJoins()) t!.server.store.patchJoin(j.id, { state: "joined", delivery: null });
    });
    const own = parse(
      (await delivered(t.server, { assignment: { ...ASSIGNMENT, ntpServers: ["198.51.100.1"] } })).nodeYaml,
    );
    expect(own.ntp).toEqual({ servers: ["198.51.100.1"] });
  });

  it("says the OS disk layout, read off the OS disks' partitions when the machine has no install record", async () => {
    t = await startTestServer();
    const recorded = parse((await delivered(t.server)).nodeYaml);
    expect(recorded.storage.os_disk_layout).toBe("compute-tail");
    const finish = (): void =>
      t!.server.store.tx(() => {
        for (const j of t!.server.store.listJoins())
          t!.server.store.patchJoin(j.id, { state: "joined", delivery: null });
      });
    finish();
    // No record: the 512 GB system disk has only its 512 MiB ESP, the rest left free: a compute tail.
    const { osDiskLayout: _record, ...noRecord } = sampleInventory() as any;
    const tail = parse((await delivered(t.server, { inventory: noRecord })).nodeYaml);
    expect(tail.storage.os_disk_layout).toBe("compute-tail");
    finish();
    // No record, and the system disk partitioned to its end: the whole disk.
    const whole = structuredClone(noRecord);
    whole.disks[0].partitions.push({
      number: 2,
      name: "nvme0n1p2",
      path: "/dev/nvme0n1p2",
      sizeBytes: whole.disks[0].sizeBytes - 536870912,
    });
    expect(parse((await delivered(t.server, { inventory: whole })).nodeYaml).storage.os_disk_layout).toBe("whole-disk");
  });
});

describe("the bundle", () => {
  it("carries the cluster's identity as the founder has it, for the joiner to adopt", async () => {
    // An empty upstream list is a value (resolve from the root servers), not an omission.
    t = await startTestServer({ cluster: { dnsUpstreamServers: [], region: "eu-2", adminEmail: "ops@example.com" } });
    const { bundle } = await delivered(t.server);
    const { settings } = t.server.cluster;
    expect(bundle).toMatchObject({
      clusterId: t.server.cluster.clusterId,
      role: "hybrid",
      parentDomain: settings.parentDomain,
      region: "eu-2",
      adminEmail: "ops@example.com",
      vips: settings.vips,
    });
    expect(bundle.dnsUpstreamServers).toEqual([]);
    // A bridged cluster has no floating-IP next hop.
    expect(bundle.vips).not.toHaveProperty("providerGw");
    // The AES-256 key as 64 hex characters.
    expect(bundle.dnsEncryptionKey).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keys each node's AZ in az, never in its labels, and sends no boot state it did not probe", async () => {
    t = await startTestServer();
    const { bundle } = await delivered(t.server, { assignment: { ...ASSIGNMENT, rack: "r3", az: "az-b" } });
    const self = bundle.nodes.find((n: any) => n.nodeId === bundle.nodes.at(-1).nodeId);
    expect(self).toMatchObject({ az: "az-b", labels: { "topology.rack": "r3" } });
    expect(self.labels).not.toHaveProperty("topology.az");
    // The reference cluster wires no boot-health probe (spec: "Omitted when … not wired").
    for (const node of bundle.nodes)
      for (const field of ["bootState", "bootPhase", "bootElapseMs", "readyAfterMs"])
        expect(node).not.toHaveProperty(field);
    // The founder first, this node last: members in join order.
    expect(bundle.nodes[0].nodeId).toBe(t.server.store.listMembers()[0]!.nodeId);
  });

  it("mints an OpenBao node token for each joiner", async () => {
    t = await startTestServer();
    const first = (await delivered(t.server)).bundle.openBaoNodeToken;
    t.server.store.tx(() => {
      for (const j of t!.server.store.listJoins()) t!.server.store.patchJoin(j.id, { state: "joined", delivery: null });
    });
    const second = (await delivered(t.server, { assignment: { ...ASSIGNMENT, name: "node-3" } })).bundle
      .openBaoNodeToken;
    expect(first).toEqual(expect.any(String));
    expect(second).not.toBe(first);
  });
});
