// A cluster on IPv6, end to end over real TLS with the real joiner: the admin API and the join
// listener on [::1], a mgmt network and a storage network that are IPv6 and an overlay network
// that is dual stack. A code is minted for `[::1]:PORT`; a machine on an older release checks
// it, registers, upgrades itself from the release the founder serves, registers again, is
// approved with IPv6 addresses allocated from the cluster's networks, receives its delivery and
// reaches `joined`. The machine's NIC carries an IPv6 address in the mgmt network (written by
// hand: the test machine need not have one).
import { join } from "node:path";
import QRCode from "qrcode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CLUSTER } from "../../examples/reference-server/config.js";
import { createAdminClient, parseJoinUrl, type AdminClient } from "../../src/index.js";
import {
  checkJoinCode,
  createMachineIdentity,
  downloadRelease,
  registerMachine,
  reportProgress,
  waitForRegistration,
} from "../../src/node/index.js";
import { makeRelease, removeDir, tempDir, type Fixture } from "../release/helpers/release.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

const FILES = { "os/blobs/rootfs.img": 300_000, "sysext/agent.raw": 12_345 };

/** The machine as its inventory says: its mgmt NIC has an IPv6 address in fd00:10::/64. */
const inventory = {
  uefi: true,
  disks: [
    { name: "nvme0n1", path: "/dev/nvme0n1", sizeBytes: 512e9, mountpoints: ["/"] },
    { name: "nvme1n1", path: "/dev/nvme1n1", wwn: "eui.0025", sizeBytes: 2e12, mountpoints: [], holders: [] },
  ],
  nics: [
    {
      name: "enp1s0",
      mac: "58:47:ca:70:11:02",
      link: "up",
      mtu: 1500,
      addresses: ["fd00:10::21/64", "fe80::5a47:caff:fe70:1102/64"],
    },
    { name: "enp2s0", mac: "58:47:ca:70:11:03", link: "up", mtu: 9000, addresses: [] },
  ],
};

let t: TestServer;
let releases: string;
let fixture: Fixture;
let client: AdminClient;

beforeAll(async () => {
  releases = await tempDir("stratum-v6-releases-");
  fixture = await makeRelease(FILES, { dir: join(releases, "0.6.0"), release: "0.6.0" });
  t = await startTestServer({
    adminAddr: "[::1]:0",
    joinAddr: "[::1]:0",
    releaseDir: releases,
    cluster: {
      networks: {
        ...DEFAULT_CLUSTER.networks,
        storage: { cidr: "fd00:90::/64", mtu: 9000 },
        overlay: { cidr: "10.91.0.0/24", secondaryCidr: "fd00:91::/64", mtu: 9000 },
        providerUpstreamInterface: "enp1s0",
      },
      mgmtCidr: "fd00:10::/64",
    },
  });
  client = createAdminClient({ baseUrl: t.server.adminUrl, token: t.server.adminToken });
});
afterAll(async () => {
  await t?.dispose();
  await removeDir(releases);
});

describe("a cluster on IPv6", () => {
  it("mints for [::1], and a machine checks, registers, upgrades, is approved with IPv6 addresses and joins", async () => {
    expect(t.server.adminUrl).toMatch(/^http:\/\/\[::1\]:\d+$/);
    const minted = await client.mintJoinCode();
    const port = t.server.joinPort;
    expect(minted.endpoint).toBe(`[::1]:${port}`);
    expect(minted.joinCode.endpoint).toBe(`[::1]:${port}`);
    expect(minted.url).toBe(`stratum-join://[::1]:${port}/${minted.code}`);
    expect(parseJoinUrl(minted.url)).toMatchObject({ host: "::1", port });
    // The QR code a console draws carries the URL as it is (brackets and all, so byte mode).
    const qr = QRCode.create(minted.url, { errorCorrectionLevel: "M" });
    expect(qr.segments.map((s: { data: Uint8Array | string }) => Buffer.from(s.data).toString("utf8")).join("")).toBe(
      minted.url,
    );

    // Check, then register on 0.5.0: told to upgrade from the founder's own release.
    const check = await checkJoinCode({ url: minted.url, release: "0.5.0", selfUpgrade: true });
    expect(check.upgrade).toMatchObject({ from: "0.5.0", to: "0.6.0", served: true });
    const identity = await createMachineIdentity();
    const first = await registerMachine({
      url: minted.url,
      identity,
      release: "0.5.0",
      selfUpgrade: true,
      hostname: "node-v6",
      inventory,
    });
    expect(first.registration.state).toBe("needs-upgrade");
    expect(first.session.endpoint).toBe(`[::1]:${port}`);

    const dest = await tempDir("stratum-v6-dest-");
    try {
      const release = await downloadRelease({
        upgrade: first.registration.upgrade!,
        session: first.session,
        identity,
        destDir: dest,
        trustedKeys: [fixture.keys[0]!.publicKeyPem],
      });
      expect(release.release).toBe("0.6.0");
    } finally {
      await removeDir(dest);
    }
    const again = await registerMachine({
      url: minted.url,
      identity,
      release: "0.6.0",
      hostname: "node-v6",
      inventory,
    });
    expect(again.session.joinId).toBe(first.session.joinId);
    expect(again.registration.state).toBe("pending");
    const joinId = again.session.joinId;
    expect(await client.getNodeJoin(joinId)).toMatchObject({ sourceAddr: "::1", release: "0.6.0" });

    // Approved with the defaults and one data link: every address IPv6 but the overlay's IPv4 half.
    const approved = await client.approveNodeJoin(joinId, {
      assignment: {
        links: [{ name: "data", kind: "ethernet", interface: "enp2s0", purposes: ["storage", "overlay"] }],
      },
    });
    expect(approved.assignment).toMatchObject({
      mgmt: { interface: "enp1s0", address: "fd00:10::21" },
      links: [
        { name: "data", addresses: ["fd00:90::1/64", "10.91.0.1/24", "fd00:91::1/64"], addressesAllocated: true },
      ],
    });

    const delivering = await waitForRegistration(again.session, identity, { until: "delivering", timeoutMs: 20_000 });
    const delivery = delivering.delivery!;
    expect(delivery.nodeYaml).toContain("fd00:10::21");
    expect(delivery.nodeYaml).toContain("fd00:90::1/64");
    expect(delivery.nodeYaml).toContain("fd00:91::1/64");
    const self = delivery.bundle.nodes.find((n) => n.nodeId === delivery.nodeId)!;
    expect(self).toMatchObject({ mgmtIp: "fd00:10::21", networks: { storage: { ip: "fd00:90::1" } } });

    await reportProgress(again.session, identity, {
      steps: [{ name: "storage", title: "Preparing storage", status: "done" }],
    });
    await reportProgress(again.session, identity, { steps: [{ name: "join", title: "Joining", status: "done" }] });
    const joined = await waitForRegistration(again.session, identity, { until: "joined", timeoutMs: 20_000 });
    expect(joined.state).toBe("joined");
    const members = await client.listClusterMembers();
    expect(members.items.find((m) => m.nodeId === delivery.nodeId)).toMatchObject({
      state: "active",
      mgmtIp: "fd00:10::21",
    });
  }, 120_000);
});
