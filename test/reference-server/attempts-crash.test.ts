// A founder killed (SIGKILL: no close, no checkpoint) with PAKE exchanges in flight, restarted
// on the same data directory: the attempts counted before stay counted, and the exchanges that
// were outstanding are dropped, not counted (docs/protocol.md §6, "A crash forgives").
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ReferenceServer } from "../../examples/reference-server/server.js";
import { TestJoiner, sameSelectorOtherCode } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { startMainProcess } from "./main-process.js";

const dataDir = mkdtempSync(join(tmpdir(), "stratum-crash-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

interface Founder {
  child: ChildProcess;
  adminUrl: string;
  token: string;
  /** What TestJoiner needs of a server: the listener's port. */
  server: ReferenceServer;
}

/** Starts the reference server's command on the data directory, in its own process. */
async function startFounder(): Promise<Founder> {
  // One code's budget is what this holds: the founder-wide rate of live KE2s is raised.
  const started = await startMainProcess(dataDir, { STRATUM_LIVE_KE2_BURST: "1000" });
  children.push(started.child);
  return {
    child: started.child,
    adminUrl: started.adminUrl,
    token: readFileSync(join(dataDir, "admin-token"), "utf8").trim(),
    server: { joinPort: started.joinPort } as unknown as ReferenceServer,
  };
}

async function adminCall(f: Founder, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${f.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${f.token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return response.json();
}

const codeInfo = async (f: Founder, id: string): Promise<any> =>
  (await adminCall(f, "GET", "/v1/admin/cluster/join-codes")).items.find((c: any) => c.id === id);

/** KE1s for `code` from fresh machines, each on its own connection; the statuses, in order. */
async function ke1s(f: Founder, code: string, n: number): Promise<{ joiners: TestJoiner[]; statuses: number[] }> {
  const joiners = await Promise.all(Array.from({ length: n }, () => TestJoiner.create(f.server)));
  await Promise.all(joiners.map((j) => j.connect()));
  const answers = await Promise.all(joiners.map((j) => j.pake(code)));
  return { joiners, statuses: answers.map((a) => a.response.status) };
}

describe("a founder killed with exchanges in flight", () => {
  it("keeps the counted attempts and drops the outstanding exchanges", async () => {
    const first = await startFounder();
    const minted = await adminCall(first, "POST", "/v1/admin/cluster/join-codes", {});
    const wrong = sameSelectorOtherCode(minted.code);

    // Two exchanges end unproven: counted, and written.
    const guessers = await ke1s(first, wrong, 2);
    expect(guessers.statuses).toEqual([200, 200]);
    for (const g of guessers.joiners) await g.close();
    await eventually(async () => (await codeInfo(first, minted.joinCode.id)).attempts === 2);

    // Eight more are outstanding (the whole budget left), and KE1s are still arriving.
    const outstanding = await ke1s(first, wrong, 8);
    expect(outstanding.statuses).toEqual(Array(8).fill(200));
    const arriving = await Promise.all(Array.from({ length: 4 }, () => TestJoiner.create(first.server)));
    for (const j of arriving) void j.pake(wrong).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    const exited = new Promise((resolve) => first.child.once("exit", resolve));
    first.child.kill("SIGKILL");
    await exited;
    await Promise.all([...outstanding.joiners, ...arriving].map((j) => j.close().catch(() => undefined)));

    const second = await startFounder();
    try {
      expect(await codeInfo(second, minted.joinCode.id)).toMatchObject({ attempts: 2, state: "live" });
      // The dropped exchanges hold no slot: the eight are free again.
      const again = await ke1s(second, wrong, 9);
      expect([...again.statuses].sort()).toEqual([...Array(8).fill(200), 503]);
      await Promise.all(again.joiners.map((j) => j.close()));
      // Those eight ended unproven: the code burns, as it would have without the crash.
      await eventually(async () => (await codeInfo(second, minted.joinCode.id)).state === "revoked");
      expect(await codeInfo(second, minted.joinCode.id)).toMatchObject({
        attempts: 10,
        revokedBy: "system:too-many-attempts",
      });
    } finally {
      const stopped = new Promise((resolve) => second.child.once("exit", resolve));
      second.child.kill("SIGTERM");
      await stopped;
    }
  }, 120_000);
});
