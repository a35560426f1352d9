// IPv6 in the founder's address arithmetic and approvals: canonical IPv6 text, IPv6 CIDRs, the
// next free address of an IPv6 network, a mgmt network that is IPv6 (a joiner on loopback takes
// its NIC address in it), and dual-stack networks that give a link an address of each family.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bareIp,
  canonicalIp,
  inNetwork,
  nextFree,
  parseCidr,
  parseIp,
} from "../../examples/reference-server/addresses.js";
import { DEFAULT_CLUSTER } from "../../examples/reference-server/config.js";
import type { JoinRow } from "../../examples/reference-server/rows.js";
import { admin, insertJoinRow } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

describe("IPv6 address arithmetic", () => {
  it("writes every spelling of an address one way (RFC 5952)", () => {
    expect(canonicalIp("FD00:0:0:0:0:0:0:5")).toBe("fd00::5");
    expect(canonicalIp("fd00:0000::0005")).toBe("fd00::5");
    expect(canonicalIp("2001:db8:0:0:1:0:0:1")).toBe("2001:db8::1:0:0:1");
    expect(canonicalIp("::ffff:192.0.2.1")).toBe("::ffff:c000:201");
    expect(canonicalIp("::")).toBe("::");
    expect(canonicalIp("1:2:3:4:5:6:7:8")).toBe("1:2:3:4:5:6:7:8");
    expect(canonicalIp("192.0.2.1")).toBe("192.0.2.1");
    expect(bareIp("fd00:0::21/64")).toBe("fd00::21");
    expect(parseIp("not-an-ip")).toBeUndefined();
  });

  it("parses IPv6 CIDRs and keeps the families apart", () => {
    const net = parseCidr("fd00:90::/64")!;
    expect(net).toMatchObject({ family: 6, prefix: 64 });
    expect(inNetwork(net, "fd00:90::1")).toBe(true);
    expect(inNetwork(net, "fd00:90:0:0:ffff:ffff:ffff:ffff")).toBe(true);
    expect(inNetwork(net, "fd00:91::1")).toBe(false);
    expect(inNetwork(net, "10.90.0.1")).toBe(false);
    expect(inNetwork(parseCidr("10.90.0.0/24")!, "fd00:90::1")).toBe(false);
    expect(parseCidr("fd00::/129")).toBeUndefined();
    expect(parseCidr("fd00::/64")).toBeDefined();
  });

  it("hands out the lowest free host address, skipping the network's own, held ones and the gateway", () => {
    const net = parseCidr("fd00:90::/64")!;
    expect(nextFree(net, new Set())).toBe("fd00:90::1");
    expect(nextFree(net, new Set(["fd00:90::1"]), "fd00:90::2")).toBe("fd00:90::3");
    expect(nextFree(parseCidr("fd00:90::/127")!, new Set(["fd00:90::1"]))).toBeUndefined();
    // IPv4 as before: no network or broadcast address.
    expect(nextFree(parseCidr("10.90.0.0/30")!, new Set(["10.90.0.1"]))).toBe("10.90.0.2");
    expect(nextFree(parseCidr("10.90.0.0/30")!, new Set(["10.90.0.1", "10.90.0.2"]))).toBeUndefined();
  });
});

describe("approvals on IPv6 and dual-stack networks", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({
      cluster: {
        networks: {
          ...DEFAULT_CLUSTER.networks,
          storage: { cidr: "fd00:90::/64", mtu: 9000 },
          overlay: { cidr: "10.91.0.0/24", secondaryCidr: "fd00:91::/64", mtu: 9000 },
        },
        mgmtCidr: "fd00:10::/64",
      },
    });
    t.server.setUpgrade(true); // approved joins stay approved: each test sees the addresses it asked for
  });
  afterAll(async () => t.dispose());

  const machine = (n: number, overrides: Partial<JoinRow> = {}): string =>
    insertJoinRow(t.server, {
      sourceAddr: "::1",
      inventory: {
        nics: [
          { name: "enp87s0", addresses: [`fd00:10:0:0::${20 + n}/64`, "fe80::5847:caff:fe70:1102/64"] },
          { name: "enp2s0f0", addresses: [] },
        ],
      },
      ...overrides,
    });
  const link = { name: "data", interface: "enp2s0f0", purposes: ["storage", "overlay"] };
  const approve = (id: string, body: unknown) =>
    admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, { body, operationId: "approveNodeJoin" });

  it("the founder took host ::b of each IPv6 network, and the mgmt network's", () => {
    const founder = t.server.store.listMembers()[0]!;
    expect(founder.mgmtIp).toBe("fd00:10::b");
    expect(founder.assignment!.links![0]!.addresses).toEqual(["fd00:90::b/64", "10.91.0.11/24", "fd00:91::b/64"]);
    expect(founder.networks).toMatchObject({ storage: { ip: "fd00:90::b" }, overlay: { ip: "10.91.0.11" } });
  });

  it("a joiner on loopback gets its NIC address in the IPv6 mgmt network, and a link gets an address of each family", async () => {
    const a = machine(1);
    const first = await approve(a, { assignment: { links: [link] } });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.assignment.mgmt).toEqual({ interface: "enp87s0", address: "fd00:10::21" });
    expect(first.body.assignment.links[0]).toMatchObject({
      addresses: ["fd00:90::1/64", "10.91.0.1/24", "fd00:91::1/64"],
      addressesAllocated: true,
      mtu: 9000,
    });
    // The next machine gets the next addresses: the first join holds its own.
    const second = await approve(machine(2), { assignment: { links: [link] } });
    expect(second.body.assignment.links[0].addresses).toEqual(["fd00:90::2/64", "10.91.0.2/24", "fd00:91::2/64"]);
  });

  it("checks given IPv6 addresses: inside, free in any spelling, and both families of a dual-stack network", async () => {
    const id = machine(3);
    const given = (addresses: string[]) => approve(id, { assignment: { links: [{ ...link, addresses }] } });
    const fields = (answer: { body: any }): string[] => (answer.body.errors ?? []).map((e: any) => e.field);
    // fd00:90:0::1 is fd00:90::1, which the first machine holds.
    const taken = await given(["fd00:90:0::1/64", "10.91.0.50/24", "fd00:91::50/64"]);
    expect(taken.status).toBe(409);
    expect(fields(taken)).toEqual(["links[0].addresses[0]"]);
    const onlyV4Overlay = await given(["fd00:90::50/64", "10.91.0.50/24"]);
    expect(fields(onlyV4Overlay)).toEqual(["links[0].addresses"]);
    const wrongPrefix = await given(["fd00:90::50/80", "10.91.0.50/24", "fd00:91::50/64"]);
    expect(fields(wrongPrefix)).toEqual(["links[0].addresses[0]"]);
    const networkAddress = await given(["fd00:90::/64", "10.91.0.50/24", "fd00:91::50/64"]);
    expect(fields(networkAddress)).toEqual(["links[0].addresses[0]"]);
    const fine = await given(["FD00:90::50/64", "10.91.0.50/24", "fd00:91::50/64"]);
    expect(fine.status, JSON.stringify(fine.body)).toBe(200);
  });

  it("a mgmt address outside the mgmt network is refused at mgmt.address", async () => {
    const id = machine(4);
    const answer = await approve(id, { assignment: { mgmt: { address: "2001:db8::4/64", gateway: "2001:db8::1" } } });
    expect(answer.status).toBe(409);
    expect(answer.body.errors).toEqual([expect.objectContaining({ field: "mgmt.address" })]);
  });

  it("a machine with no address in the mgmt network is asked to name one", async () => {
    const id = machine(5, { inventory: { nics: [{ name: "enp87s0", addresses: ["192.0.2.25/24"] }] } });
    const answer = await approve(id, {});
    expect(answer.status).toBe(409);
    expect(answer.body.errors.map((e: any) => e.field)).toContain("mgmt.interface");
  });
});
