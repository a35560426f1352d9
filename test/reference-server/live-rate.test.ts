// The founder-wide rate of KE2s answered for live codes (docs/protocol.md#live-rate): a code-less
// sweep of the selectors burns live codes only as fast as that rate, every KE1 waits while it is
// spent (so the refusal names no live selector), a proven exchange gives its share back, a
// batch of machines joins while a sweep runs, and the operator sees who made the attempts.
import { afterEach, describe, expect, it } from "vitest";
import { createMachineIdentity } from "../../src/node/identity.js";
import { registerMachine } from "../../src/node/join-calls.js";
import { runCli } from "../../src/cli/run.js";
import { TestJoiner, admin, mint, sameSelectorOtherCode } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { RawConnection, SELECTORS, anyKe1 } from "./raw-ke1.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

const codes = async (s: TestServer): Promise<any[]> =>
  (await admin(s.server, "GET", "/v1/admin/cluster/join-codes", { operationId: "listJoinCodes" })).body.items;

describe("the founder-wide rate of live KE2s", () => {
  it("answers `burst` KE2s for live codes, then tells every KE1 to wait, for a live selector or not", async () => {
    t = await startTestServer({ limits: { liveKe2Burst: 3, liveKe2PerMinute: 6 } });
    const minted = await mint(t.server);
    const wrong = sameSelectorOtherCode(minted.code);
    const guessers = await Promise.all(Array.from({ length: 4 }, () => TestJoiner.create(t!.server)));
    await Promise.all(guessers.map((g) => g.connect()));
    const answers: number[] = [];
    for (const g of guessers) answers.push((await g.pake(wrong)).response.status);
    expect(answers).toEqual([200, 200, 200, 503]);
    // While the three are still going, a share may come back any moment (proven): a short wait.
    const spent = await TestJoiner.create(t.server);
    const busy = await spent.pake(wrong);
    expect(busy.response.json).toMatchObject({ code: "JOIN_CODE_BUSY" });
    expect(Number(busy.response.headers["retry-after"])).toBeLessThanOrEqual(3);
    // A selector that names no code is told the same.
    const unknown = SELECTORS.find((s) => s !== minted.joinCode.selector)!;
    const identity = await createMachineIdentity();
    const raw = await RawConnection.open({ host: "127.0.0.1", port: t.server.joinPort, identity });
    const ke1 = await anyKe1();
    expect((await raw.ke1s([unknown], ke1)).map((a) => a.status)).toEqual([503]);
    expect(t.logs.some((l) => l.includes("the founder-wide rate of KE2s for live codes is spent"))).toBe(true);
    // They end unproven: their shares stay spent, and the wait is the refill's (a share each 10 s
    // at 6 a minute), spread by a second or two; for a live selector or not.
    await Promise.all(guessers.map((g) => g.close()));
    await eventually(async () => ((await codes(t!))[0]?.attempts === 3 ? true : undefined));
    const later = await spent.pake(wrong);
    expect(later.response.status).toBe(503);
    expect(Number(later.response.headers["retry-after"])).toBeGreaterThanOrEqual(10);
    const unknownLater = await raw.ke1s([unknown], ke1);
    expect(unknownLater.map((a) => a.status)).toEqual([503]);
    expect(unknownLater[0]!.retryAfter).toBeGreaterThanOrEqual(10);
    raw.close();
    await spent.close();
  });

  it("gives a proven exchange's share back at once: machines that know the code join one after another on a burst of 1", async () => {
    t = await startTestServer({ limits: { liveKe2Burst: 1, liveKe2PerMinute: 1 } });
    const minted = await mint(t.server);
    for (let i = 0; i < 4; i++) {
      const joiner = await TestJoiner.create(t.server);
      expect((await joiner.register(minted.code)).response.status).toBe(201);
      await joiner.close();
    }
    expect((await codes(t)).find((c) => c.id === minted.joinCode.id)).toMatchObject({ attempts: 0, state: "live" });
  });
});

describe("a KE1 told to wait", () => {
  it("does not count against its source's calls: machines behind one address are not rate limited for waiting", async () => {
    // No refill within the test (1 a minute): only a proven exchange gives the share back.
    t = await startTestServer({ limits: { liveKe2Burst: 1, liveKe2PerMinute: 1, perAddressCalls: 4 } });
    const minted = await mint(t.server);
    const holder = await TestJoiner.create(t.server);
    await holder.connect();
    const held = await holder.exchange(minted.code); // call 1 of 4: the share is taken
    const waiting = await TestJoiner.create(t.server);
    for (let i = 0; i < 5; i++) expect((await waiting.pake(minted.code)).response.status).toBe(503); // not counted
    // The holder proves the code (call 2 of 4): its share comes back at once.
    expect((await holder.sendProof("code-checks", { release: "0.6.0" }, held)).response.status).toBe(200);
    await holder.close();
    const proving = await waiting.exchange(minted.code); // call 3 of 4
    expect((await waiting.sendProof("code-checks", { release: "0.6.0" }, proving)).response.status).toBe(200); // 4 of 4
    await waiting.close();
    // The fifth counted call is over the limit: the five waits were not counted.
    const over = await TestJoiner.create(t.server);
    expect((await over.pake(minted.code)).response.json).toMatchObject({ code: "RATE_LIMITED" });
    await over.close();
  });
});

describe("a code-less sweep of every selector, with five live codes", () => {
  it("counts attempts no faster than the rate, while a batch of machines joins; the codes show where they came from", async () => {
    t = await startTestServer();
    const live = await Promise.all(Array.from({ length: 5 }, () => mint(t!.server)));
    const ids = new Set(live.map((m) => m.joinCode.id));
    const identity = await createMachineIdentity();
    const ke1 = await anyKe1();
    const started = Date.now();
    // Three passes over all 1,024 selectors from 32 addresses, each connection closed after its
    // KE1s so their exchanges end (unproven, counted on a live code) at once.
    const sweeping = (async () => {
      for (let pass = 0; pass < 3; pass++) {
        await Promise.all(
          Array.from({ length: 32 }, async (_, i) => {
            const c = await RawConnection.open({
              host: "127.0.0.1",
              port: t!.server.joinPort,
              identity,
              localAddress: `127.22.3.${i + 1}`,
            });
            await c.ke1s(
              SELECTORS.filter((_, k) => k % 32 === i),
              ke1,
            );
            c.close();
          }),
        );
      }
    })();
    // A batch of six machines with the first code starts while the sweep runs.
    await new Promise((r) => setTimeout(r, 1_000));
    const batch = await Promise.all(
      Array.from({ length: 6 }, async (_, i) =>
        registerMachine({
          url: live[0].url,
          identity: await createMachineIdentity(),
          release: "0.6.0",
          hostname: `batch-${i}`,
        }),
      ),
    );
    await sweeping;
    const minutes = (Date.now() - started) / 60_000;
    expect(batch.every((r) => r.created)).toBe(true);
    await eventually(async () => ((await codes(t!)).filter((c) => ids.has(c.id)).length === 5 ? true : undefined));
    const after = (await codes(t)).filter((c) => ids.has(c.id));
    const attempts = after.reduce((n, c) => n + (c.attempts ?? 0), 0);
    // At most the burst and the refill over the sweep's time (5, and 10 a minute), not the 15
    // that three passes give without the rate.
    expect(attempts).toBeLessThanOrEqual(5 + Math.ceil(10 * minutes));
    expect(after.every((c) => c.state === "live")).toBe(true);
    // Each code with attempts names the sweep's addresses, and nothing of the batch.
    for (const code of after.filter((c) => c.attempts > 0)) {
      expect(code.attemptSources.reduce((n: number, s: any) => n + s.attempts, 0)).toBe(code.attempts);
      for (const s of code.attemptSources) expect(s.source).toMatch(/^127\.22\.3\.\d+$/);
    }
  }, 240_000);
});

describe("who burned a code", () => {
  it("is kept with its attempts: listed per code, in `admin codes`, in the log and the audit entry of the burn", async () => {
    t = await startTestServer({ limits: { liveKe2Burst: 100 } });
    const minted = await mint(t.server);
    const wrong = sameSelectorOtherCode(minted.code);
    const identity = await createMachineIdentity();
    const ke1s = async (from: string, n: number) => {
      const c = await RawConnection.open({ host: "127.0.0.1", port: t!.server.joinPort, identity, localAddress: from });
      // KE1s of a guess with the live code's selector, each left to end unproven on close.
      const { startLogin } = await import("../../src/node/opaque.js");
      for (let i = 0; i < n; i++)
        await c.post("/v1/join/pake", [
          JSON.stringify({ selector: minted.joinCode.selector, ke1: (await startLogin(wrong)).ke1 }),
        ]);
      c.close();
    };
    await ke1s("127.22.4.7", 3);
    await eventually(async () =>
      (await codes(t!)).find((c) => c.id === minted.joinCode.id)?.attempts === 3 ? true : undefined,
    );
    let code = (await codes(t)).find((c) => c.id === minted.joinCode.id);
    expect(code.attemptSources).toEqual([{ source: "127.22.4.7", attempts: 3, lastAttemptAt: expect.any(String) }]);
    let out = "";
    await runCli(["admin", "codes", "--api", t.server.adminUrl, "--token", t.server.adminToken], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: () => true },
      env: {},
      isTTY: false,
    });
    expect(out).toMatch(
      new RegExp(`${minted.joinCode.id}: 3 attempts that did not prove it, from 127\\.22\\.4\\.7 \\(3,`),
    );
    // Seven more from another address burn it.
    await ke1s("127.22.4.8", 7);
    await eventually(async () =>
      (await codes(t!)).find((c) => c.id === minted.joinCode.id)?.state === "revoked" ? true : undefined,
    );
    code = (await codes(t)).find((c) => c.id === minted.joinCode.id);
    expect(code.attemptSources.map((s: any) => [s.source, s.attempts])).toEqual([
      ["127.22.4.8", 7],
      ["127.22.4.7", 3],
    ]);
    expect(
      t.logs.some((l) => l.includes(`join code ${minted.joinCode.id}`) && l.includes("127.22.4.8 (7), 127.22.4.7 (3)")),
    ).toBe(true);
    const audit = t.server.store.auditEntries().find((e) => e.actor === "system:too-many-attempts");
    expect(audit?.details).toMatchObject({
      sources: [
        { source: "127.22.4.8", attempts: 7 },
        { source: "127.22.4.7", attempts: 3 },
      ],
    });
  });
});
