// The founder's PAKE steps and join codes at the boundaries of their rules (join-pake.ts,
// join-codes.ts; docs/protocol.md §5 and §6): whose budget and which live share a KE1 takes and
// gives back, a session past its expiry, what a busy KE1 is told to wait, and what a mint, a
// revocation and a proven code's refusal record and say.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { startTestServer, type TestServer } from "../helpers/reference-server.js";
import { eventually } from "../helpers/eventually.js";
import { TestJoiner, admin, mint } from "./helpers.js";
import { RawConnection, SELECTORS, anyKe1 } from "./raw-ke1.js";

let identity: MachineIdentity;
let ke1: string;
beforeAll(async () => {
  identity = await createMachineIdentity();
  ke1 = await anyKe1();
});
afterEach(() => vi.restoreAllMocks());

const open = (t: TestServer) => RawConnection.open({ host: "127.0.0.1", port: t.server.joinPort, identity });
/** A KE1 that passes the schema and is no OPAQUE message. */
const malformed = () => Buffer.alloc(Buffer.from(ke1, "base64url").length, 0xff).toString("base64url");
const unknownSelectors = (t: TestServer) =>
  SELECTORS.filter((s) => t.server.cluster.store.listCodes().every((c) => c.selector !== s));

describe("a KE1's budget and live share", () => {
  let t: TestServer;
  beforeAll(async () => {
    // Two live KE2s at once, refilled far slower than a test runs.
    t = await startTestServer({ limits: { liveKe2Burst: 2, liveKe2PerMinute: 0.01 } });
  });
  afterAll(async () => t?.dispose());

  it("each unknown selector has a budget of its own: 11 exchanges for 11 selectors are all answered", async () => {
    await mint(t.server);
    const raw = await open(t);
    try {
      expect(await raw.ke1s(unknownSelectors(t).slice(0, 11), ke1)).toEqual(
        Array.from({ length: 11 }, () => ({ status: 200, retryAfter: undefined })),
      );
    } finally {
      raw.close();
    }
  });

  it("a KE1 that is no KE1 gives a live code's share back, and an unknown selector's gives none it did not take", async () => {
    const [a, b, c] = [await mint(t.server), await mint(t.server), await mint(t.server)];
    const raw = await open(t);
    const one = async (selector: string, key = ke1) =>
      (await raw.post("/v1/join/pake", [JSON.stringify({ selector, ke1: key })]))[0]!.status;
    try {
      expect(await one(a.joinCode.selector, malformed())).toBe(400);
      // Both shares are there: the malformed KE1 gave its own back.
      expect(await one(a.joinCode.selector)).toBe(200);
      expect(await one(unknownSelectors(t)[0]!, malformed())).toBe(400);
      expect(await one(b.joinCode.selector)).toBe(200);
      // Both shares are taken by the exchanges still waiting: the unknown selector gave none back.
      expect(await one(c.joinCode.selector)).toBe(503);
    } finally {
      raw.close();
    }
  });
});

describe("a KE3 for a session past its expiry, before the sweep ends it", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ timing: { pakeSessionMs: 300, tickMs: 600_000 } });
  });
  afterAll(async () => t?.dispose());

  it("is 409 JOIN_PAKE_RESTART, and the exchange ends unproven: counted", async () => {
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    await joiner.connect();
    const exchange = await joiner.exchange(minted.code);
    await new Promise((r) => setTimeout(r, 400));
    const answer = await joiner.sendProof("code-checks", { release: "0.6.0" }, exchange);
    expect(answer.response.status).toBe(409);
    expect(answer.response.json).toMatchObject({ code: "JOIN_PAKE_RESTART" });
    await joiner.close();
    await eventually(() => t.server.store.getCode(minted.joinCode.id)!.attempts === 1, 10_000, "the attempt counted");
  });
});

describe("a busy KE1's Retry-After", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ limits: { liveKe2Burst: 1, liveKe2PerMinute: 1 } });
  });
  afterAll(async () => t?.dispose());

  it("is 1 to 3 s for a code with no slot left, and at least the refill's wait when the live rate is spent", async () => {
    const { cluster } = t.server;
    const minted = await mint(t.server);
    const selector = minted.joinCode.selector;
    cluster.countUnproven(new Map([[minted.joinCode.id, new Map([["192.0.2.1", 9]])]]));
    const raw = await open(t);
    try {
      // The one slot left taken by an exchange that waits; the live share with it.
      expect((await raw.ke1s([selector], ke1)).map((a) => a.status)).toEqual([200]);
      const joiner = await TestJoiner.create(t.server);
      const refused = await joiner.pake(minted.code);
      await joiner.close();
      expect(refused.response.status).toBe(503);
      expect(refused.response.json).toMatchObject({
        code: "JOIN_CODE_BUSY",
        detail: "Too many exchanges are waiting for their proof; send a new KE1 after Retry-After.",
      });
      const spread = async (draw: number) => {
        vi.spyOn(Math, "random").mockReturnValue(draw);
        const [answer] = await raw.ke1s([unknownSelectors(t)[0]!], ke1);
        vi.restoreAllMocks();
        return answer!;
      };
      // The live share is taken but its exchange still waits: busy, with the short spread only.
      expect(await spread(0)).toEqual({ status: 503, retryAfter: 1 });
      expect(await spread(0.999)).toEqual({ status: 503, retryAfter: 3 });
    } finally {
      raw.close();
    }
    // The exchange ended unproven: the share stays spent, and the refill takes a minute.
    await eventually(() => cluster.store.getCode(minted.joinCode.id)!.revokedBy !== null, 10_000, "the burn");
    const again = await open(t);
    try {
      const [busy] = await again.ke1s([unknownSelectors(t)[0]!], ke1);
      expect(busy!.status).toBe(503);
      expect(busy!.retryAfter).toBeGreaterThanOrEqual(60);
    } finally {
      again.close();
    }
  });
});

describe("a founder's join codes, minted, revoked and proven", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ timing: { maxCodeTtlSeconds: 3_600, defaultCodeTtlSeconds: 600 } });
  });
  afterAll(async () => t?.dispose());

  const auditOf = (id: string) =>
    t.server.store
      .auditEntries()
      .filter((e) => e.target === id)
      .map((e) => ({ actor: e.actor, action: e.action, details: e.details }));

  it("takes a lifetime up to the founder's longest, and refuses one second more at its field", async () => {
    const longest = await mint(t.server, { ttlSeconds: 3_600 });
    expect(longest.joinCode.expiresAt).toBeDefined();
    const refused = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", {
      body: { ttlSeconds: 3_601 },
      operationId: "mintJoinCode",
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([{ field: "ttlSeconds", message: "at most 3600 seconds" }]);
  });

  it("audits a mint and a revocation once, with what they were", async () => {
    const minted = await mint(t.server);
    const id = minted.joinCode.id;
    t.server.cluster.revokeCode("ops-1", id);
    // A code no longer live is answered as it is: no second revocation.
    t.server.cluster.revokeCode("ops-2", id);
    expect(auditOf(id)).toEqual([
      {
        actor: "bootstrap-admin",
        action: "cluster.join_code.minted",
        details: {
          selector: minted.joinCode.selector,
          endpoint: minted.joinCode.endpoint,
          expiresAt: minted.joinCode.expiresAt,
        },
      },
      { actor: "ops-1", action: "cluster.join_code.revoked", details: { selector: minted.joinCode.selector } },
    ]);
    expect(t.server.store.getCode(id)).toMatchObject({ revokedBy: "ops-1" });
    expect(() => t.server.cluster.revokeCode("ops-1", "jc-none0000")).toThrow(
      expect.objectContaining({ status: 404, code: "NOT_FOUND", detail: "No join code jc-none0000." }),
    );
  });

  it("audits a burn with the attempts of each source", async () => {
    const minted = await mint(t.server);
    const id = minted.joinCode.id;
    t.server.cluster.countUnproven(
      new Map([
        [
          id,
          new Map([
            ["192.0.2.1", 7],
            ["2001:db8:1:2::/64", 3],
          ]),
        ],
      ]),
    );
    expect(auditOf(id).at(-1)).toEqual({
      actor: "system:too-many-attempts",
      action: "cluster.join_code.revoked",
      details: {
        selector: minted.joinCode.selector,
        attempts: 10,
        sources: [
          { source: "192.0.2.1", attempts: 7 },
          { source: "2001:db8:1:2::/64", attempts: 3 },
        ],
      },
    });
  });

  it("tells a proven code's holder why it no longer works, each reason in its words", async () => {
    const { cluster } = t.server;
    expect(cluster.refusalOfProvenCode("jc-none0000")).toMatchObject({
      status: 401,
      code: "JOIN_CODE_INVALID",
      detail: "The join code was not proven.",
    });
    const live = await mint(t.server);
    expect(cluster.refusalOfProvenCode(live.joinCode.id)).toBeUndefined();
    const burned = await mint(t.server);
    cluster.countUnproven(new Map([[burned.joinCode.id, new Map([["192.0.2.1", 10]])]]));
    expect(cluster.refusalOfProvenCode(burned.joinCode.id)).toMatchObject({
      status: 401,
      code: "JOIN_CODE_REVOKED",
      detail: "The join code was revoked after too many attempts that did not prove it.",
      details: { revokedBy: "system:too-many-attempts" },
    });
    const revoked = await mint(t.server);
    cluster.revokeCode("ops-1", revoked.joinCode.id);
    expect(cluster.refusalOfProvenCode(revoked.joinCode.id)).toMatchObject({
      code: "JOIN_CODE_REVOKED",
      detail: "The join code was revoked.",
      details: { revokedBy: "ops-1" },
    });
    await cluster.rotateCa("ops-1");
    expect(cluster.refusalOfProvenCode(live.joinCode.id)).toMatchObject({
      status: 401,
      code: "JOIN_CODE_STALE",
      detail: "The join code was minted under a cluster CA that has since rotated; mint a new one.",
    });
  });

  it("runs a PAKE against a selector's live code, not an older one that ended", async () => {
    const { cluster, store } = t.server;
    const row = store.getCode((await mint(t.server)).joinCode.id)!;
    const selector = unknownSelectors(t)[0]!;
    // An ended code of the selector, then a live one minted after it.
    store.tx(() => {
      store.insertCode({ ...row, id: "jc-ended0001", selector, expiresAt: Date.now() - 1_000 });
      store.insertCode({ ...row, id: "jc-live00001", selector });
    });
    expect(cluster.codeForPake(selector)?.id).toBe("jc-live00001");
  });

  it("gives up after 8 tries when every try's selector was taken meanwhile", async () => {
    const { store } = t.server;
    // Inside the mint's transaction every selector reads as taken, as if other mints had won.
    let inTx = false;
    let checks = 0;
    const tx = store.tx.bind(store);
    const liveCodes = store.liveCodes.bind(store);
    vi.spyOn(store, "tx").mockImplementation(((fn: () => unknown) => {
      inTx = true;
      try {
        return tx(fn as never);
      } finally {
        inTx = false;
      }
    }) as never);
    vi.spyOn(store, "liveCodes").mockImplementation((now: number) => {
      if (!inTx) return liveCodes(now);
      checks += 1;
      return SELECTORS.map((selector) => ({ selector })) as never;
    });
    const error = await t.server.cluster.mintCode("test", {}, t.server.joinEndpoint).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 409, code: "JOIN_STATE_CONFLICT" });
    expect(checks).toBe(8);
  });
});
