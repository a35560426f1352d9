// The join listener's limits: at most 16 registrations waiting, per-address limits with
// Retry-After, and bodies that are not JSON, too large or of the wrong shape (400, never 500).
import { afterEach, describe, expect, it } from "vitest";
import { TestJoiner, insertJoinRow, mint } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

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
    t = await startTestServer({ limits: { bodyBytes: 4096 } });
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
