// Attempts (docs/protocol.md §6): an exchange is outstanding from its KE1 until a valid KE3
// (proven, never counted), a failed KE3, its connection closing or its session expiring
// (unproven, counted). A code takes at most 10 − attempts outstanding exchanges; a KE1 beyond
// that is 503 JOIN_CODE_BUSY. So a batch of machines never burns its code, and a guesser gets
// at most 10 KE2 answers for it however parallel it is. The crash case: attempts-crash.test.ts.
import { afterEach, describe, expect, it } from "vitest";
import { generateJoinCode, parseJoinCode } from "../../src/core/join-code.js";
import { createMachineIdentity, registerMachine, type RegisterResult } from "../../src/node/index.js";
import { TestJoiner, admin, keepListenerOpen, mint, sameSelectorOtherCode } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { sampleInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

const codeInfo = async (s: TestServer, id: string): Promise<any> =>
  (await admin(s.server, "GET", "/v1/admin/cluster/join-codes", { operationId: "listJoinCodes" })).body.items.find(
    (c: any) => c.id === id,
  );

/** A registration's body (the KE3 is added by the helper). */
const registrationBody = (i: number): Record<string, unknown> => ({
  release: "0.6.0",
  hostname: `early-${i}`,
  inventory: sampleInventory(),
});

/** Sends a KE3 that cannot verify (a guesser's) for the exchange answered on `joiner`'s connection. */
async function wrongKe3(joiner: TestJoiner, session: string): Promise<number> {
  const answer = await joiner.call("checkJoinCode", "POST", "/v1/join/code-checks", {
    json: { pake: { session, ke3: "AAAA" }, release: "0.6.0" },
    headers: { "join-binding": Buffer.alloc(32).toString("base64") },
  });
  expect(answer.json).toMatchObject({ code: answer.status === 401 ? "JOIN_CODE_INVALID" : expect.any(String) });
  return answer.status;
}

/**
 * These tests hold one code's budget of outstanding exchanges (10): the founder-wide rate of
 * live KE2s, which would refuse sooner (test/reference-server/live-rate.test.ts), is raised.
 */
const ONE_CODE = { limits: { liveKe2Burst: 1_000 } };

describe("a batch of machines with one code", () => {
  it("registers 64 machines started at once with the real joiner; the code stays live with 0 attempts", async () => {
    const s = await startTestServer({
      // All of them come from 127.0.0.1: the per-address limits and the waiting limit are raised.
      // The founder-wide rate of live KE2s too: this is about one code's budget.
      limits: { perAddressCalls: 100_000, perAddressRegistrations: 1_000, maxWaiting: 1_000, ...ONE_CODE.limits },
    });
    t = s;
    const minted = await mint(s.server);
    // Ten machines of the rack got their KE2 first and are slow to send KE3: every slot of the
    // code is taken when the 64 start. (Without them, 64 joiners sharing one process's event
    // loop with their Argon2 reach the listener too slowly to fill the slots reliably.)
    const early = await Promise.all(Array.from({ length: 10 }, () => TestJoiner.create(s.server)));
    const held = await Promise.all(early.map(async (j) => (await j.connect(), j.exchange(minted.code))));

    const refused = new Set<number>();
    const waits: string[] = [];
    const batch: Promise<RegisterResult[]> = Promise.all(
      Array.from({ length: 64 }, async (_, i) =>
        registerMachine({
          url: minted.url,
          identity: await createMachineIdentity(),
          release: "0.6.0",
          hostname: `rack-${String(i).padStart(2, "0")}`,
          // One process runs all 64 Argon2s and TLS handshakes (and the server) in turn: far
          // slower than 64 machines of their own.
          timeoutMs: 600_000,
          connectTimeoutMs: 300_000,
          onRetry: (error) => {
            waits.push(error.code);
            refused.add(i);
          },
        }),
      ),
    );
    // Every one of the 64 was told to wait at least once; then the ten send their KE3.
    // As long as the joiners' own connect deadline: 64 handshakes and KE1s in one process.
    await eventually(() => refused.size === 64, 300_000, "every joiner told to wait");
    const first = await Promise.all(early.map((j, i) => j.sendProof("registrations", registrationBody(i), held[i]!)));
    expect(first.map((p) => p.response.status)).toEqual(Array(10).fill(201));

    const results = await batch;
    expect(results.every((r) => r.created)).toBe(true);
    expect(new Set(results.map((r) => r.session.joinId)).size).toBe(64);
    expect(await codeInfo(s, minted.joinCode.id)).toMatchObject({ attempts: 0, state: "live", registrations: 74 });
    expect(new Set(waits)).toEqual(new Set(["JOIN_CODE_BUSY"]));
    await Promise.all(early.map((j) => j.close()));
  }, 900_000);
});

describe("a guesser", () => {
  it("gets at most 10 KE2 answers of 30 sent at once, and the code burns when those 10 end unproven", async () => {
    const s = await startTestServer(ONE_CODE);
    t = s;
    const minted = await mint(s.server);
    await keepListenerOpen(s.server, minted.code);
    const wrong = sameSelectorOtherCode(minted.code);
    const guessers = await Promise.all(Array.from({ length: 30 }, () => TestJoiner.create(s.server)));
    await Promise.all(guessers.map((g) => g.connect()));
    const first = await Promise.all(guessers.map((g) => g.pake(wrong)));
    const answered = guessers.filter((_, i) => first[i]!.response.status === 200);
    const refused = first.filter((a) => a.response.status !== 200);
    expect(answered.length).toBe(10);
    expect(refused.length).toBe(20);
    for (const { response } of refused) {
      expect(response.status).toBe(503);
      expect(response.json).toMatchObject({ code: "JOIN_CODE_BUSY" });
      expect(Number(response.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }
    // Nothing is counted before an exchange ends.
    expect(await codeInfo(s, minted.joinCode.id)).toMatchObject({ attempts: 0, state: "live" });

    // While the 10 are outstanding, 30 more get no KE2 at all.
    const more = await Promise.all(guessers.map((g) => TestJoiner.with(s.server, g.identity).pake(wrong)));
    expect(more.map((a) => a.response.status)).toEqual(Array(30).fill(503));

    // The 10 end unproven (a guesser cannot make a KE3 that verifies): counted, and the code burns.
    const sessions = answered.map((g) => (first[guessers.indexOf(g)]!.response.json as any).session as string);
    const ends = await Promise.all(answered.map((g, i) => wrongKe3(g, sessions[i]!)));
    expect(ends).toEqual(Array(10).fill(401));
    expect(await codeInfo(s, minted.joinCode.id)).toMatchObject({
      attempts: 10,
      state: "revoked",
      revokedBy: "system:too-many-attempts",
    });
    expect(s.server.store.auditEntries().filter((e) => e.actor === "system:too-many-attempts")).toHaveLength(1);

    // A burned code still answers (so that its holder learns why at KE3), but nothing more is counted.
    const after = await guessers[0]!.pake(wrong);
    expect(after.response.status).toBe(200);
    const holder = await TestJoiner.create(s.server);
    const told = await holder.register(minted.code);
    expect(told.response.status).toBe(401);
    expect(told.response.json).toMatchObject({
      code: "JOIN_CODE_REVOKED",
      details: { revokedBy: "system:too-many-attempts" },
    });
    await Promise.all([...guessers, holder].map((g) => g.close()));
    expect((await codeInfo(s, minted.joinCode.id)).attempts).toBe(10);
  });

  it("gets 503 JOIN_CODE_BUSY for an unknown selector too, past the same number of exchanges", async () => {
    const s = await startTestServer(ONE_CODE);
    t = s;
    const minted = await mint(s.server);
    let unknown: string;
    do unknown = generateJoinCode().formatted;
    while (parseJoinCode(unknown).selector === minted.joinCode.selector);
    const statuses = async (code: string): Promise<number[]> => {
      const joiners = await Promise.all(Array.from({ length: 11 }, () => TestJoiner.create(s.server)));
      await Promise.all(joiners.map((j) => j.connect()));
      const answers = await Promise.all(joiners.map((j) => j.pake(code)));
      await Promise.all(joiners.map((j) => j.close()));
      return answers.map((a) => a.response.status).sort();
    };
    // Busy tells a live selector from an unused one no better than KE2 does.
    expect(await statuses(unknown)).toEqual([...Array(10).fill(200), 503]);
    expect(await statuses(sameSelectorOtherCode(minted.code))).toEqual([...Array(10).fill(200), 503]);
  });
});

describe("how an exchange ends", () => {
  it("counts an exchange whose connection closed or whose session expired before its KE3", async () => {
    const s = await startTestServer({ timing: { pakeSessionMs: 300 } });
    t = s;
    const minted = await mint(s.server);
    const closer = await TestJoiner.create(s.server);
    expect((await closer.pake(minted.code)).response.status).toBe(200);
    await closer.close();
    const waiter = await TestJoiner.create(s.server);
    expect((await waiter.pake(minted.code)).response.status).toBe(200);
    await new Promise((r) => setTimeout(r, 400));
    await s.server.tick();
    expect((await codeInfo(s, minted.joinCode.id)).attempts).toBe(2);
    await waiter.close();
    // An expired exchange is counted once, not again when its connection closes.
    await new Promise((r) => setTimeout(r, 100));
    expect((await codeInfo(s, minted.joinCode.id)).attempts).toBe(2);
  });

  it("frees the slot of a proven exchange at once: 12 machines in turn on 10 slots, nothing counted", async () => {
    const s = await startTestServer();
    t = s;
    const minted = await mint(s.server);
    for (let i = 0; i < 12; i++) {
      const joiner = await TestJoiner.create(s.server);
      expect((await joiner.register(minted.code)).response.status).toBe(201);
      await joiner.close();
    }
    expect(await codeInfo(s, minted.joinCode.id)).toMatchObject({ attempts: 0, state: "live", registrations: 12 });
  });
});
