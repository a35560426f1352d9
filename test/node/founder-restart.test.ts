// The founder killed (SIGKILL) and restarted in the middle of machines' exchanges: the joiner
// rides it out within its deadline (docs/protocol.md#deadlines). A refused or reset connection
// is waited out with backoff and a fresh exchange follows; a registration whose answer was lost
// is found again by its key, the same one, with the pairing code of the exchange that made it.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createTcpServer, connect as connectTcp, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createMachineIdentity } from "../../src/node/identity.js";
import { registerMachine } from "../../src/node/join-calls.js";
import { startMainProcess, type MainProcess } from "../reference-server/main-process.js";
import { eventually } from "../helpers/eventually.js";

let dataDir: string;
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  children.length = 0;
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
});

/** A free loopback port, for a founder that must come back where it was. */
async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startFounder(joinPort: number): Promise<MainProcess> {
  const started = await startMainProcess(dataDir, { STRATUM_JOIN_ADDR: `127.0.0.1:${joinPort}` });
  children.push(started.child);
  return started;
}

async function adminCall(f: MainProcess, method: string, path: string, body?: unknown): Promise<any> {
  const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  const response = await fetch(`${f.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return response.json();
}

/** Kills the founder at once (no close, no checkpoint) and waits until it is gone. */
async function kill(f: MainProcess): Promise<void> {
  const exited = new Promise((resolve) => f.child.once("exit", resolve));
  f.child.kill("SIGKILL");
  await exited;
}

/** Waits for the founder's log line of a call: `POST /v1/join/pake 200`, … */
const logged = (f: MainProcess, pattern: RegExp) =>
  eventually(() => (pattern.test(f.output()) ? true : undefined), 60_000, `a log line ${pattern}`);

describe("a founder killed and restarted mid-exchange", () => {
  it("killed at the first KE2: five machines registering at once all register once the founder is back", async () => {
    dataDir = mkdtempSync(join(tmpdir(), "stratum-restart-"));
    const port = await freePort();
    const first = await startFounder(port);
    const minted = await adminCall(first, "POST", "/v1/admin/cluster/join-codes", {});
    const identities = await Promise.all(Array.from({ length: 5 }, () => createMachineIdentity()));
    const joining = identities.map((identity, i) =>
      registerMachine({ url: minted.url, identity, release: "0.6.0", hostname: `m-${i}`, timeoutMs: 120_000 }).then(
        (result) => ({ result, error: undefined }),
        (error: unknown) => ({ result: undefined, error }),
      ),
    );
    await logged(first, /POST \/v1\/join\/pake 200/);
    await kill(first);
    await new Promise((r) => setTimeout(r, 1_500)); // down for a while: connections refused
    const second = await startFounder(port);
    const outcomes = await Promise.all(joining);
    for (const o of outcomes) expect(o.error).toBeUndefined();
    const keys = outcomes.map((o) => o.result!.session.keyFingerprint).sort();
    expect(keys).toEqual(identities.map((i) => i.keyFingerprint).sort());
    const joins = (await adminCall(second, "GET", "/v1/admin/cluster/joins")).items as any[];
    expect(joins.map((j) => j.keyFingerprint).sort()).toEqual(keys);
    for (const o of outcomes) {
      const listed = joins.find((j) => j.id === o.result!.session.joinId);
      expect(listed.pairingCode).toBe(o.result!.registration.pairingCode);
    }
  }, 180_000);

  it("killed after a registration was committed but before its answer arrived: the same registration is found again", async () => {
    dataDir = mkdtempSync(join(tmpdir(), "stratum-restart-"));
    const port = await freePort();
    const first = await startFounder(port);
    const minted = await adminCall(first, "POST", "/v1/admin/cluster/join-codes", {});
    // Between the machine and the founder, a relay of bytes that holds the founder's answers
    // back a little: long enough to kill the founder once it has committed, before the answer
    // leaves the relay. It relays TLS untouched (it is not a party to it).
    const relay = await startHoldingRelay(port, 400);
    const identity = await createMachineIdentity();
    const url = minted.url.replace(`127.0.0.1:${port}`, `127.0.0.1:${relay.port}`);
    const joining = registerMachine({ url, identity, release: "0.6.0", timeoutMs: 120_000 });
    await logged(first, /POST \/v1\/join\/registrations 201/);
    relay.dropHeld(); // the answer is lost with the founder
    await kill(first);
    const committed = await startFounder(port);
    const result = await joining;
    relay.close();
    // The answer did not reach the machine: it asked again, and the founder found it (200).
    expect(committed.output()).toMatch(/POST \/v1\/join\/registrations 200/);
    const joins = (await adminCall(committed, "GET", "/v1/admin/cluster/joins")).items as any[];
    expect(joins).toHaveLength(1);
    expect(result.session.joinId).toBe(joins[0].id);
    expect(result.registration.pairingCode).toBe(joins[0].pairingCode);
    // It was made by this call, its answer lost: created, and its pairing code is the one the
    // exchange that made it computed.
    expect(result.created).toBe(true);
  }, 180_000);
});

/**
 * A TCP relay to 127.0.0.1:`to` that delays each chunk from the founder by `holdMs`;
 * `dropHeld()` cuts every connection, dropping what it holds.
 */
async function startHoldingRelay(
  to: number,
  holdMs: number,
): Promise<{ port: number; dropHeld(): void; close(): void }> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  const server: Server = createTcpServer((client) => {
    const upstream = connectTcp(to, "127.0.0.1");
    const pair = { client, upstream };
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => setTimeout(() => pairs.has(pair) && client.write(d), holdMs));
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", () => setTimeout(end, holdMs));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    dropHeld: () => {
      const cut = [...pairs];
      pairs.clear();
      for (const { client, upstream } of cut) {
        client.resetAndDestroy();
        upstream.destroy();
      }
    },
    close: () => {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      server.close();
    },
  };
}
