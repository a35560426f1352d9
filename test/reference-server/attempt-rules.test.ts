// The founder's attempt counting at each of its boundaries, and the selector re-check of the
// mint (docs/protocol.md#attempts, #live-rate, #listener-limits): what a guesser of a live code
// gets, counted exactly, and never two live codes behind one selector.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Socket } from "node:net";
import { AddressLimiter, peerAddress, sourceOf } from "../../examples/reference-server/address-limiter.js";
import { LiveKe2Rate } from "../../examples/reference-server/live-rate.js";
import {
  PakeSessions,
  type Budget,
  type PakeSession,
  type UnprovenEnds,
} from "../../examples/reference-server/pake-sessions.js";
import { CROCKFORD_ALPHABET } from "../../src/core/base32.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { registerMachine } from "../../src/node/join-calls.js";
import { startTestServer, type TestServer } from "../helpers/reference-server.js";
import { mint as mintCode } from "./helpers.js";
import { RawConnection, SELECTORS, anyKe1 } from "./raw-ke1.js";

const MAX = 10;

/** Sessions with the founder's limit, their written ends kept in `written`. */
function sessions(options: { failWrites?: boolean } = {}) {
  const written: UnprovenEnds[] = [];
  const proven: number[] = [];
  const s = new PakeSessions({
    maxAttempts: MAX,
    writeUnproven: (ends) => {
      if (options.failWrites) throw new Error("disk full");
      written.push(ends);
    },
    onWriteError: () => {},
    onProvenLive: () => proven.push(1),
  });
  return { s, written, proven };
}

let n = 0;
function session(budget: Budget, source = "192.0.2.1"): PakeSession {
  n += 1;
  return {
    id: `ps-${n}`,
    socketId: `socket-${n}`,
    keyFingerprint: "AB",
    source,
    serverState: "",
    codeId: budget.countable ? budget.key : null,
    budget,
    messages: null,
    caDer: new Uint8Array(),
    caFingerprint: "",
    serverTime: new Date().toISOString(),
    expiresAt: Date.now() + 60_000,
  };
}

/** Reserves slots of `budget` until one is refused; how many were given. */
function slotsOf(s: PakeSessions, budget: Budget): number {
  let given = 0;
  while (s.reserve(budget) && given < 100) given++;
  return given;
}

describe("a code's outstanding exchanges", () => {
  it("are at most 10 − attempts: 10 with none counted, 1 at 9, none at 10 (or more, left by a lowered limit)", () => {
    for (const [counted, slots] of [
      [0, 10],
      [1, 9],
      [9, 1],
      [10, 0],
      [12, 0],
    ] as const) {
      expect(slotsOf(sessions().s, { key: "jc-1", counted, countable: true })).toBe(slots);
    }
    // An unknown selector's budget (not countable) takes the same 10, on a key of its own.
    const { s } = sessions();
    expect(slotsOf(s, { key: "selector:7Q", counted: 0, countable: false })).toBe(10);
    expect(slotsOf(s, { key: "jc-1", counted: 0, countable: true })).toBe(10);
  });

  it("count a KE2 that ended unproven, by source; a proven one, a busy KE1 and an unknown selector's count nothing", async () => {
    const { s, written, proven } = sessions();
    const live: Budget = { key: "jc-1", counted: 0, countable: true };
    // A KE1 answered busy after its slot was taken (the live rate spent): released, not counted.
    const other = s.reserve(live)!;
    const busy = s.reserve(live)!;
    busy.release();
    busy.release(); // a second release frees nothing of another exchange
    expect(s.outstanding("jc-1")).toBe(1);
    other.release();
    expect(s.outstanding("jc-1")).toBe(0);
    // Three answered KE2s: two end unproven from one source, one from another; one is proven.
    for (const source of ["192.0.2.1", "192.0.2.1", "2001:db8:1:2::/64"]) {
      const slot = s.reserve(live)!;
      s.end(session(slot.budget, source), false);
    }
    const ok = s.reserve(live)!;
    s.end(session(ok.budget), true);
    const fake = s.reserve({ key: "selector:7Q", counted: 0, countable: false })!;
    s.end(session(fake.budget), false);
    expect(s.outstanding("jc-1")).toBe(0);
    await new Promise((r) => setImmediate(r));
    expect(written).toEqual([
      new Map([
        [
          "jc-1",
          new Map([
            ["192.0.2.1", 2],
            ["2001:db8:1:2::/64", 1],
          ]),
        ],
      ]),
    ]);
    expect(proven).toEqual([1]);
  });

  it("count ends not written yet (a failing disk): 9 of them leave one slot, 10 none", () => {
    const { s } = sessions({ failWrites: true });
    const live: Budget = { key: "jc-1", counted: 0, countable: true };
    for (let i = 0; i < 9; i++) s.end(session(s.reserve(live)!.budget), false);
    s.writeNow();
    expect(slotsOf(s, live)).toBe(1);
    const { s: s10 } = sessions({ failWrites: true });
    for (let i = 0; i < 10; i++) s10.end(session(s10.reserve(live)!.budget), false);
    s10.writeNow();
    expect(s10.reserve(live)).toBeUndefined();
  });
});

describe("the exchanges waiting for their KE3", () => {
  const live: Budget = { key: "jc-1", counted: 0, countable: true };
  const flush = () => new Promise((r) => setImmediate(r));

  it("end unproven when their session expires: at its expiry, not a millisecond before", async () => {
    const { s, written } = sessions();
    const early = { ...session(s.reserve(live)!.budget), expiresAt: 1_000 };
    const late = { ...session(s.reserve(live)!.budget), expiresAt: 2_000 };
    s.add(early);
    s.add(late);
    s.expire(999);
    expect([s.size, s.outstanding("jc-1")]).toEqual([2, 2]);
    s.expire(1_000);
    expect([s.size, s.outstanding("jc-1")]).toEqual([1, 1]);
    expect(s.take(early.id, early.socketId, early.keyFingerprint)).toBeUndefined();
    await flush();
    expect(written).toEqual([new Map([["jc-1", new Map([["192.0.2.1", 1]])]])]);
  });

  it("end unproven when their connection closes, that connection's only", async () => {
    const { s, written } = sessions();
    const a = session(s.reserve(live)!.budget);
    const b = { ...session(s.reserve(live)!.budget), socketId: a.socketId };
    const other = session(s.reserve(live)!.budget, "192.0.2.2");
    for (const x of [a, b, other]) s.add(x);
    s.connectionClosed("socket-none");
    expect(s.size).toBe(3);
    s.connectionClosed(a.socketId);
    expect([s.size, s.outstanding("jc-1")]).toEqual([1, 1]);
    // A second close of the same connection finds nothing more to end.
    s.connectionClosed(a.socketId);
    await flush();
    expect(written).toEqual([new Map([["jc-1", new Map([["192.0.2.1", 2]])]])]);
    expect(s.take(other.id, other.socketId, other.keyFingerprint)).toBe(other);
  });

  it("are taken once, and only by their connection and key; a stranger's try leaves the exchange waiting", () => {
    const { s } = sessions();
    const a = session(s.reserve(live)!.budget);
    const b = { ...session(s.reserve(live)!.budget), socketId: a.socketId };
    s.add(a);
    s.add(b);
    expect(s.take(a.id, "socket-stranger", a.keyFingerprint)).toBeUndefined();
    expect(s.take(a.id, a.socketId, "CD")).toBeUndefined();
    expect(s.take("ps-unknown", a.socketId, a.keyFingerprint)).toBeUndefined();
    expect(s.size).toBe(2);
    expect(s.take(a.id, a.socketId, a.keyFingerprint)).toBe(a);
    expect(s.take(a.id, a.socketId, a.keyFingerprint)).toBeUndefined();
    expect(s.size).toBe(1);
    // The taken one is no longer the connection's: its close ends the other exchange only.
    s.connectionClosed(a.socketId);
    expect(s.size).toBe(0);
  });

  it("write what a failed write kept with the next one, once; told each failure", async () => {
    let failing = true;
    const written: UnprovenEnds[] = [];
    const failures: unknown[] = [];
    const s = new PakeSessions({
      maxAttempts: MAX,
      writeUnproven: (ends) => {
        if (failing) throw new Error("disk full");
        written.push(ends);
      },
      onWriteError: (error) => failures.push(error),
    });
    for (const source of ["192.0.2.1", "192.0.2.1", "192.0.2.9"])
      s.end(session(s.reserve(live)!.budget, source), false);
    await flush();
    expect(written).toEqual([]);
    expect(failures).toEqual([new Error("disk full")]);
    failing = false;
    // The expiry sweep retries a failed write.
    s.expire(Date.now());
    await flush();
    expect(written).toEqual([
      new Map([
        [
          "jc-1",
          new Map([
            ["192.0.2.1", 2],
            ["192.0.2.9", 1],
          ]),
        ],
      ]),
    ]);
    // Nothing is left to write: neither the sweep nor a shutdown writes it again.
    s.expire(Date.now());
    await flush();
    s.writeNow();
    expect(written).toHaveLength(1);
    expect(slotsOf(s, live)).toBe(MAX);
  });

  it("stop for good at close: what ended is written, what waits is dropped uncounted, and nothing counts after", async () => {
    const { s, written, proven } = sessions();
    s.end(session(s.reserve(live)!.budget), false);
    const waiting = session(s.reserve(live)!.budget);
    s.add(waiting);
    s.close();
    expect(written).toEqual([new Map([["jc-1", new Map([["192.0.2.1", 1]])]])]);
    expect([s.size, s.outstanding("jc-1")]).toEqual([0, 0]);
    expect(s.reserve(live)).toBeUndefined();
    expect(s.reserve({ key: "selector:7Q", counted: 0, countable: false })).toBeUndefined();
    s.connectionClosed(waiting.socketId);
    s.end(waiting, false);
    s.end(waiting, true);
    s.writeNow();
    await flush();
    expect(written).toHaveLength(1);
    expect(proven).toEqual([]);
  });
});

describe("what the exchanges hold", () => {
  const live: Budget = { key: "jc-1", counted: 0, countable: true };
  const flush = () => new Promise((r) => setImmediate(r));

  it("falls back to nothing once every exchange has ended, however it ended", async () => {
    // No callbacks given: a proven end and an unproven one need none.
    const written: UnprovenEnds[] = [];
    const s = new PakeSessions({ maxAttempts: MAX, writeUnproven: (e) => written.push(e), onWriteError: () => {} });
    const a = session(s.reserve(live)!.budget);
    const b = { ...session(s.reserve(live)!.budget), socketId: a.socketId };
    const c = session(s.reserve({ key: "selector:7Q", counted: 0, countable: false })!.budget);
    const d = { ...session(s.reserve(live)!.budget), expiresAt: 0 };
    for (const x of [a, b, c, d]) s.add(x);
    expect(s.held()).toEqual({ sessions: 4, connections: 3, budgets: 2, unwritten: 0 });
    s.end(s.take(a.id, a.socketId, a.keyFingerprint)!, true);
    expect(s.held()).toEqual({ sessions: 3, connections: 3, budgets: 2, unwritten: 0 });
    s.end(s.take(b.id, b.socketId, b.keyFingerprint)!, false);
    expect(s.held()).toEqual({ sessions: 2, connections: 2, budgets: 2, unwritten: 1 });
    s.connectionClosed(c.socketId);
    s.expire(1);
    expect(s.held()).toEqual({ sessions: 0, connections: 0, budgets: 0, unwritten: 1 });
    await flush();
    expect(s.held()).toEqual({ sessions: 0, connections: 0, budgets: 0, unwritten: 0 });
    expect(written).toEqual([new Map([["jc-1", new Map([["192.0.2.1", 2]])]])]);
  });

  it("writes nothing after close, not even a write scheduled before it", async () => {
    let failing = true;
    const written: UnprovenEnds[] = [];
    const s = new PakeSessions({
      maxAttempts: MAX,
      writeUnproven: (ends) => {
        if (failing) throw new Error("disk full");
        written.push(ends);
      },
      onWriteError: () => {},
    });
    // The end schedules a write; close writes at once, and fails; the disk then recovers.
    s.end(session(s.reserve(live)!.budget), false);
    s.close();
    failing = false;
    await flush();
    expect(written).toEqual([]);
  });
});

describe("the founder-wide live KE2 rate", () => {
  it("answers `burst` at once, then one per 60/perMinute s: none a millisecond early, one exactly on time", () => {
    const spent: number[] = [];
    const rate = new LiveKe2Rate({ burst: 3, perMinute: 60, onSpent: () => spent.push(1) }, 0);
    expect([rate.take(0), rate.take(0), rate.take(0), rate.take(0)]).toEqual([true, true, true, false]);
    expect(spent).toEqual([1]);
    // Exchanges still going: their tokens may come back proven, so no wait is asked.
    expect(rate.secondsUntilToken(0)).toBe(0);
    rate.spend();
    rate.spend();
    rate.spend();
    expect(rate.secondsUntilToken(0)).toBe(1);
    expect(rate.hasToken(999)).toBe(false);
    expect(spent).toEqual([1]);
    expect(rate.take(1000)).toBe(true);
    expect(rate.take(1000)).toBe(false);
    expect(spent).toEqual([1, 1]);
    // A proven exchange's token comes back at once; never above the burst.
    rate.refund(1000);
    expect(rate.take(1000)).toBe(true);
    for (let i = 0; i < 10; i++) rate.refund(2000);
    expect([rate.take(2000), rate.take(2000), rate.take(2000), rate.take(2000)]).toEqual([true, true, true, false]);
    // The refill stops at the burst however long the founder was idle.
    expect([3, 3, 3, 3].map(() => rate.take(10 * 60_000))).toEqual([true, true, true, false]);
  });

  it("asks a refused KE1 to wait until the refill brings a token", () => {
    const rate = new LiveKe2Rate({ burst: 1, perMinute: 2 }, 0);
    expect(rate.take(0)).toBe(true);
    rate.spend();
    expect(rate.secondsUntilToken(0)).toBe(30);
    expect(rate.secondsUntilToken(29_500)).toBe(1);
    expect(rate.hasToken(29_999)).toBe(false);
    expect(rate.hasToken(30_000)).toBe(true);
  });
});

describe("the founder-wide live KE2 rate, given back", () => {
  it("counts only exchanges that took a token: a refund or spend with none going leaves the next one going", () => {
    for (const end of ["refund", "spend"] as const) {
      const rate = new LiveKe2Rate({ burst: 1, perMinute: 1 }, 0);
      expect(rate.take(0)).toBe(true);
      rate.refund(0);
      // Nothing is going now; one more end of either kind must not count below none.
      rate[end](0);
      expect(rate.take(0)).toBe(true);
      expect(rate.take(0)).toBe(false);
      // That exchange is still going: a refused KE1 is not sent to wait for the refill.
      expect(rate.secondsUntilToken(0), end).toBe(0);
      rate.spend();
      expect(rate.secondsUntilToken(0), end).toBe(60);
    }
  });

  it("tells onSpent when a bucket that starts empty is first asked (a burst under 1)", () => {
    const spent: number[] = [];
    const rate = new LiveKe2Rate({ burst: 0, perMinute: 1, onSpent: () => spent.push(1) }, 0);
    expect(rate.hasToken(0)).toBe(false);
    expect(spent).toEqual([1]);
  });

  it("asks no wait while a token is there", () => {
    const rate = new LiveKe2Rate({ burst: 2, perMinute: 1 }, 0);
    expect(rate.secondsUntilToken(0)).toBe(0);
    expect(rate.take(0)).toBe(true);
    rate.spend();
    // One token left, none going.
    expect(rate.secondsUntilToken(0)).toBe(0);
  });
});

describe("the per-address limit", () => {
  it("takes `max` calls in the window, refuses the next until the first leaves it, and forgets a call taken back", () => {
    const limiter = new AddressLimiter();
    const hit = (at: number, address = "192.0.2.1") => limiter.hit(address, "call", 3, 10_000, at);
    expect([hit(0), hit(1), hit(2)]).toEqual([undefined, undefined, undefined]);
    expect(hit(3)).toBe(10);
    // Another source, or another kind of call, has a window of its own.
    expect(hit(3, "192.0.2.2")).toBeUndefined();
    expect(limiter.hit("192.0.2.1", "registration", 3, 10_000, 3)).toBeUndefined();
    expect(hit(9_999)).toBe(1);
    // At 10 000 the call at 0 is out of the window.
    expect(hit(10_000)).toBeUndefined();
    expect(hit(10_000)).toBe(1);
    limiter.forget("192.0.2.1", "call", 10_000);
    expect(hit(10_000)).toBeUndefined();
  });

  it("forgets windows that have passed, keeping the calls still in theirs", () => {
    const limiter = new AddressLimiter();
    expect(limiter.hit("192.0.2.1", "call", 2, 10_000, 0)).toBeUndefined();
    expect(limiter.hit("192.0.2.1", "call", 2, 10_000, 6_000)).toBeUndefined();
    expect(limiter.hit("192.0.2.2", "call", 2, 10_000, 0)).toBeUndefined();
    expect(limiter.size).toBe(2);
    limiter.prune(10_000, 10_000);
    // 192.0.2.2's only call left its window at 10 000; 192.0.2.1 keeps its call at 6 000.
    expect(limiter.size).toBe(1);
    expect(limiter.hit("192.0.2.1", "call", 2, 10_000, 10_000)).toBeUndefined();
    expect(limiter.hit("192.0.2.1", "call", 2, 10_000, 10_000)).toBe(6);
    limiter.prune(10_000, 20_000);
    expect(limiter.size).toBe(0);
  });

  it("takes back only the call recorded at that time, the first one too", () => {
    const limiter = new AddressLimiter();
    expect(limiter.hit("192.0.2.1", "call", 1, 10_000, 5)).toBeUndefined();
    limiter.forget("192.0.2.1", "call", 4);
    limiter.forget("192.0.2.9", "call", 5);
    limiter.forget("192.0.2.1", "registration", 5);
    expect(limiter.hit("192.0.2.1", "call", 1, 10_000, 6)).toBe(10);
    limiter.forget("192.0.2.1", "call", 5);
    expect(limiter.hit("192.0.2.1", "call", 1, 10_000, 6)).toBeUndefined();
  });

  it("reads the caller's address with an IPv4-mapped IPv6 one written as IPv4", () => {
    const of = (remoteAddress: string | undefined) => peerAddress({ remoteAddress } as Socket);
    expect(of("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(of("2001:db8::ffff:1")).toBe("2001:db8::ffff:1");
    expect(of("192.0.2.1")).toBe("192.0.2.1");
    expect(of(undefined)).toBe("");
  });

  it("counts an IPv6 source by its prefix, IPv4 by its address", () => {
    expect(sourceOf("2001:db8:1:2:aaaa::1", 64)).toBe("2001:db8:1:2::/64");
    expect(sourceOf("2001:db8:1:2:ffff::9", 64)).toBe("2001:db8:1:2::/64");
    expect(sourceOf("2001:db8:1:3::1", 64)).toBe("2001:db8:1:3::/64");
    expect(sourceOf("2001:db8:1:2::1", 128)).toBe("2001:db8:1:2::1");
    expect(sourceOf("2001:db8:1:2::1", 127)).toBe("2001:db8:1:2::/127");
    expect(sourceOf("2001:db8:1:2::3", 127)).toBe("2001:db8:1:2::2/127");
    expect(sourceOf("2001:db8:1:2::1", 48)).toBe("2001:db8:1::/48");
    expect(sourceOf("2001:db8:1:2::1", 0)).toBe("::/0");
    expect(sourceOf("192.0.2.7", 64)).toBe("192.0.2.7");
    expect(sourceOf("192.0.2.7", 0)).toBe("192.0.2.7");
    expect(sourceOf("not-an-address", 64)).toBe("not-an-address");
  });
});

describe("a founder's join codes", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => t?.dispose());

  const mint = () => t.server.cluster.mintCode("test", {}, t.server.joinEndpoint);

  it("burn at the 10th counted attempt, not the 9th, with the attempts of every source; attempts past 10 are not counted", async () => {
    const { cluster } = t.server;
    const { joinCode } = await mint();
    const id = joinCode.id;
    expect(cluster.countUnproven(new Map([[id, new Map([["192.0.2.1", 9]])]]))).toEqual([]);
    expect(cluster.store.getCode(id)).toMatchObject({ attempts: 9, revokedBy: null });
    const burned = cluster.countUnproven(
      new Map([
        [
          id,
          new Map([
            ["2001:db8:1:2::/64", 4],
            ["192.0.2.9", 1],
          ]),
        ],
      ]),
    );
    expect(burned.map((b) => b.id)).toEqual([id]);
    expect(cluster.store.getCode(id)).toMatchObject({ attempts: 10, revokedBy: "system:too-many-attempts" });
    expect(cluster.store.attemptSources(id).map((s) => [s.source, s.attempts])).toEqual([
      ["192.0.2.1", 9],
      ["2001:db8:1:2::/64", 1],
    ]);
    // A burned code counts nothing more; nor does a code that is gone or ended.
    expect(cluster.countUnproven(new Map([[id, new Map([["192.0.2.1", 1]])]]))).toEqual([]);
    expect(cluster.store.getCode(id)!.attempts).toBe(10);
    expect(cluster.countUnproven(new Map([["jc-unknown", new Map([["192.0.2.1", 1]])]]))).toEqual([]);
    const other = (await mint()).joinCode.id;
    cluster.revokeCode("test", other);
    expect(cluster.countUnproven(new Map([[other, new Map([["192.0.2.1", 3]])]]))).toEqual([]);
    expect(cluster.store.getCode(other)).toMatchObject({ attempts: 0, revokedBy: "test" });
    expect(cluster.store.attemptSources(other)).toEqual([]);
  });

  it("never give two mints racing for the last free selector the same one: the re-check inside the mint's transaction refuses the second", async () => {
    const { cluster } = t.server;
    // Every selector but one taken by a live code, so both mints must draw that one.
    const taken = new Set(cluster.store.liveCodes(Date.now()).map((c) => c.selector));
    const all = [...CROCKFORD_ALPHABET].flatMap((a) => [...CROCKFORD_ALPHABET].map((b) => a + b));
    const free = all.find((s) => !taken.has(s))!;
    const now = Date.now();
    cluster.store.tx(() => {
      for (const selector of all) {
        if (selector === free || taken.has(selector)) continue;
        cluster.store.insertCode({
          id: `jc-filler-${selector}`,
          selector,
          record: "",
          caFingerprint: t.server.caFingerprint,
          endpoint: t.server.joinEndpoint,
          attempts: 0,
          createdBy: "test",
          createdAt: now,
          expiresAt: now + 3_600_000,
          revokedBy: null,
          revokedAt: null,
        });
      }
    });
    // Both draw before either's Argon2 ends: the pre-check passes for both.
    const results = await Promise.allSettled([mint(), mint()]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r) => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect((won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof mint>>>).value.joinCode.selector).toBe(free);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({ status: 409, code: "JOIN_STATE_CONFLICT" });
    const live = cluster.store.liveCodes(Date.now()).filter((c) => c.selector === free);
    expect(live).toHaveLength(1);
    // Every selector taken now: a mint is refused at once, saying why.
    const full = await mint().catch((e: unknown) => e);
    expect(full).toMatchObject({ status: 409, code: "JOIN_STATE_CONFLICT" });
    expect((full as Error & { detail?: string }).detail).toBe(
      "No free selector: too many live join codes. Revoke some first.",
    );
  });
});

describe("KE1s at the listener", () => {
  let t: TestServer;
  let identity: MachineIdentity;
  let ke1: string;
  beforeAll(async () => {
    // A live KE2 budget of 2, refilled far slower than a test runs.
    t = await startTestServer({ limits: { liveKe2Burst: 2, liveKe2PerMinute: 0.01 } });
    identity = await createMachineIdentity();
    ke1 = await anyKe1();
  });
  afterAll(async () => t?.dispose());

  // Through the admin API: a mint there opens the listener.
  // The tests run in order on one founder, each leaving its live shares as they were.
  const mint = () => mintCode(t.server);
  const statuses = async (selectors: string[]): Promise<number[]> => {
    const raw = await RawConnection.open({ host: "127.0.0.1", port: t.server.joinPort, identity });
    try {
      return (await raw.ke1s(selectors, ke1)).map((a) => a.status);
    } finally {
      raw.close();
    }
  };

  it("of a machine that knows the code leave its attempts at 0; a live code at 10 attempts is burned at its next KE1; an unknown selector's take no live KE2 share; a KE1 that is no KE1 costs nothing", async () => {
    const { cluster } = t.server;
    const minted = await mint();
    const unknown = SELECTORS.filter((s) => cluster.store.liveCodes(Date.now()).every((c) => c.selector !== s));
    // Unknown selectors are answered (a fake KE2) without a live share.
    expect(await statuses(unknown.slice(0, 3))).toEqual([200, 200, 200]);
    // A malformed KE1 for the live selector: 400, its share given back.
    const raw = await RawConnection.open({ host: "127.0.0.1", port: t.server.joinPort, identity });
    const bad = Buffer.alloc(Buffer.from(ke1, "base64url").length, 0xff).toString("base64url");
    const [refused] = await raw.post("/v1/join/pake", [
      JSON.stringify({ selector: minted.joinCode.selector, ke1: bad }),
    ]);
    raw.close();
    expect(refused!.status).toBe(400);
    // The machine proves the code (its share comes back), twice: nothing is counted.
    for (const hostname of ["m-1", "m-2"]) {
      await registerMachine({ url: minted.url, identity: await createMachineIdentity(), release: "0.6.0", hostname });
    }
    expect(cluster.store.getCode(minted.joinCode.id)).toMatchObject({ attempts: 0, revokedBy: null });
    // A code left at the limit (a lowered one): its next KE1 burns it, and is answered as for a burned code.
    cluster.store.setAttempts(minted.joinCode.id, 10);
    expect(await statuses([minted.joinCode.selector])).toEqual([200]);
    expect(cluster.store.getCode(minted.joinCode.id)).toMatchObject({ revokedBy: "system:too-many-attempts" });
  });

  it("of a code at 9 attempts: one KE2, then busy; with the live shares spent, every KE1 is busy, for a live selector or not", async () => {
    const { cluster } = t.server;
    const minted = await mint();
    cluster.countUnproven(new Map([[minted.joinCode.id, new Map([["192.0.2.1", 9]])]]));
    // An exchange for an unknown selector, left waiting; it takes no live share.
    const unknown = SELECTORS.find((s) => cluster.store.liveCodes(Date.now()).every((c) => c.selector !== s))!;
    const waiting = await RawConnection.open({ host: "127.0.0.1", port: t.server.joinPort, identity });
    expect((await waiting.ke1s([unknown], ke1)).map((a) => a.status)).toEqual([200]);
    const raw = await RawConnection.open({ host: "127.0.0.1", port: t.server.joinPort, identity });
    const sel = minted.joinCode.selector;
    expect((await raw.ke1s([sel, sel, sel], ke1)).map((a) => a.status)).toEqual([200, 503, 503]);
    // Another live code takes the last share; then an unknown selector is told to wait too.
    const other = await mint();
    expect(await statuses([other.joinCode.selector])).toEqual([200]);
    // The unknown selector's exchange ends: it gave back no live share, so the one still going
    // (the code at 9) may yet come back proven: a short wait, not the refill's.
    // Its close reaches the founder before the next connection's handshake is done.
    waiting.close();
    const told = await RawConnection.open({ host: "127.0.0.1", port: t.server.joinPort, identity });
    const [busy] = await told.ke1s([unknown], ke1);
    told.close();
    expect(busy!.status).toBe(503);
    expect(busy!.retryAfter).toBeLessThanOrEqual(3);
    raw.close();
  });
});
