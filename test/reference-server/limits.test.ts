// The join listener's limits: at most 16 registrations waiting, per-address limits with
// Retry-After, and bodies that are not JSON, too large or of the wrong shape (400, never 500).
import { afterEach, describe, expect, it } from "vitest";
import { createMachineIdentity } from "../../src/node/identity.js";
import { TestJoiner, insertJoinRow, mint } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { RawConnection, SELECTORS, anyKe1 } from "./raw-ke1.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

describe("registrations waiting", () => {
  it("takes 16 waiting registrations; the 17th is 429 RATE_LIMITED with Retry-After", async () => {
    const s = await startTestServer();
    t = s;
    const { code } = await mint(s.server);
    // 14 waiting written straight into the store (pending and needs-upgrade both wait), then
    // the 15th and 16th over the listener, then the 17th.
    for (let i = 0; i < 14; i++) insertJoinRow(s.server, { state: i % 2 ? "pending" : "needs-upgrade" });
    insertJoinRow(s.server, { state: "approved" }); // not waiting: not counted
    const joiners = await Promise.all(Array.from({ length: 3 }, () => TestJoiner.create(s.server)));
    expect((await joiners[0]!.register(code)).response.status).toBe(201);
    expect((await joiners[1]!.register(code)).response.status).toBe(201);
    const refused = await joiners[2]!.register(code);
    expect(refused.response.status).toBe(429);
    expect(refused.response.json).toMatchObject({ code: "RATE_LIMITED" });
    expect(Number(refused.response.headers["retry-after"])).toBeGreaterThan(0);
    // A waiting one registering again still gets its registration back.
    expect((await TestJoiner.with(s.server, joiners[0]!.identity).register(code)).response.status).toBe(200);
    // Once one is decided, there is room again.
    const waiting = s.server.store.joinsInState("pending")[0]!;
    s.server.store.tx(() => s.server.store.patchJoin(waiting.id, { state: "rejected" }));
    expect((await joiners[2]!.register(code)).response.status).toBe(201);
    await Promise.all(joiners.map((j) => j.close()));
  });
});

describe("per-address limits", () => {
  it("refuses too many new registrations from one address", async () => {
    t = await startTestServer({ limits: { perAddressRegistrations: 2, perAddressWindowSeconds: 30 } });
    const { code } = await mint(t.server);
    for (let i = 0; i < 2; i++)
      expect((await (await TestJoiner.create(t.server)).register(code)).response.status).toBe(201);
    const third = await (await TestJoiner.create(t.server)).register(code);
    expect(third.response.status).toBe(429);
    const retryAfter = Number(third.response.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(30);
  });

  it("refuses too many calls from one address", async () => {
    t = await startTestServer({ limits: { perAddressCalls: 3, perAddressWindowSeconds: 60 } });
    const { code } = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    for (let i = 0; i < 3; i++) expect((await joiner.pake(code)).response.status).toBe(200);
    const fourth = await joiner.pake(code);
    expect(fourth.response.status).toBe(429);
    expect(fourth.response.json).toMatchObject({ code: "RATE_LIMITED" });
    expect(Number(fourth.response.headers["retry-after"])).toBeGreaterThan(50);
    await joiner.close();
  });
});

describe("bodies the listener refuses", () => {
  it("answers a body that is not JSON, too large, or of the wrong shape with 400 and field errors", async () => {
    t = await startTestServer({ limits: { registrationBodyBytes: 4096 } });
    const { code } = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const connection = await joiner.connect();
    const notJson = await connection.request({
      method: "POST",
      path: "/v1/join/pake",
      body: "{nope",
      headers: { "content-type": "application/json" },
    });
    expect(notJson.status).toBe(400);
    expect(notJson.json).toMatchObject({ code: "INVALID_INPUT", errors: [{ field: "" }] });
    const empty = await connection.request({ method: "POST", path: "/v1/join/registrations", body: "" });
    expect(empty.status).toBe(400);
    const wrong = await joiner.call("registerJoin", "POST", "/v1/join/registrations", {
      json: { pake: { session: 5 }, release: 1, inventory: { disks: [{ name: "x" }] } },
    });
    expect(wrong.status).toBe(400);
    expect((wrong.json as any).errors.map((e: any) => e.field).sort()).toEqual([
      "inventory.disks[0].path",
      "pake.ke3",
      "pake.session",
      "release",
    ]);
    const large = await (
      await joiner.connect()
    ).request({ method: "POST", path: "/v1/join/registrations", json: { pad: "x".repeat(10_000) } });
    expect(large.status).toBe(400);
    expect((large.json as any).errors[0].message).toContain("larger than 4096");
    // The listener still works afterwards.
    expect((await joiner.register(code)).response.status).toBe(201);
    expect(t.logs.some((l) => / 500 /.test(l))).toBe(false);
  });
});

describe("exchanges for selectors that name no code", () => {
  it("fill only their own selectors' budgets: a flood of them never crowds out a live code's KE1", async () => {
    // Sessions that outlast the flood, however long a loaded machine takes to answer it.
    t = await startTestServer({ limits: { perAddressCalls: 1_000_000 }, timing: { pakeSessionMs: 900_000 } });
    const minted = await mint(t.server);
    const live = minted.joinCode.selector as string;
    const identity = await createMachineIdentity();
    const ke1 = await anyKe1();
    // Every selector but the live one, ten exchanges each (its whole budget), left waiting:
    // 10,230 exchanges, more than the 10,000 a founder-wide cap once held for every selector.
    const unknown = SELECTORS.filter((s) => s !== live);
    const connections = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        RawConnection.open({
          host: "127.0.0.1",
          port: t!.server.joinPort,
          identity,
          localAddress: `127.22.1.${i + 1}`,
        }),
      ),
    );
    const answers = (await Promise.all(connections.map((c) => c.ke1s(unknown, ke1)))).flat();
    expect(answers.filter((a) => a.status === 200)).toHaveLength(unknown.length * 10);
    // One more for an unknown selector: its own budget is full (503, as a live code's would be).
    const more = await connections[0]!.ke1s([unknown[0]!], ke1);
    expect(more.map((a) => a.status)).toEqual([503]);
    // A machine with the live code proves it at once, while all of them wait.
    const joiner = await TestJoiner.create(t.server);
    expect((await joiner.register(minted.code)).response.status).toBe(201);
    await joiner.close();
    for (const c of connections) c.close();
  }, 600_000);
});

describe("request bodies are bounded by what each route carries, and in all", () => {
  it("refuses a KE1 request over 4 KiB and a registration over 256 KiB before reading them", async () => {
    t = await startTestServer();
    await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const connection = await joiner.connect();
    const padded = await connection.request({
      method: "POST",
      path: "/v1/join/pake",
      json: { selector: "00", ke1: await anyKe1(), pad: "x".repeat(5_000) },
    });
    expect(padded.status).toBe(400);
    expect((padded.json as any).errors[0].message).toContain("larger than 4096");
    const big = await (
      await joiner.connect()
    ).request({ method: "POST", path: "/v1/join/registrations", json: { pad: "x".repeat(300_000) } });
    expect(big.status).toBe(400);
    expect((big.json as any).errors[0].message).toContain("larger than 262144");
    await joiner.close();
  });

  it("holds at most bodiesInFlightBytes of bodies at once: the one that does not fit is refused 429, the rest are read", async () => {
    t = await startTestServer({ limits: { bodiesInFlightBytes: 16 * 1024 } });
    await mint(t.server);
    const identity = await createMachineIdentity();
    const open = (i: number) =>
      RawConnection.open({ host: "127.0.0.1", port: t!.server.joinPort, identity, localAddress: `127.22.2.${i + 1}` });
    const connections = await Promise.all(Array.from({ length: 5 }, (_, i) => open(i)));
    // Five requests declaring 4,000 bytes each, each sending 3,500 and holding the rest: four
    // fit in 16 KiB, the fifth does not.
    const head =
      "POST /v1/join/pake HTTP/1.1\r\nHost: founder\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n";
    for (const c of connections) {
      c.write(`${head}${" ".repeat(3_500)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const fifth = await connections[4]!.read(1);
    expect(fifth.map((a) => a.status)).toEqual([429]);
    expect(fifth[0]!.retryAfter).toBeGreaterThanOrEqual(1);
    // The four are still being read: each is answered once the rest of it comes (a body of
    // white space: 400, "a JSON body is required").
    const rest = await Promise.all(
      connections.slice(0, 4).map(async (c) => {
        c.write(" ".repeat(500));
        return (await c.read(1))[0]!.status;
      }),
    );
    expect(rest).toEqual([400, 400, 400, 400]);
    // What they held is given back: a KE1 is taken again.
    const again = await open(5);
    expect((await again.ke1s(["00"], await anyKe1())).map((a) => a.status)).toEqual([200]);
    for (const c of [...connections, again]) c.close();
  });
});
