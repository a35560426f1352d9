// The founder killed (SIGKILL) at the first KE2 and restarted, with five machines registering
// from another network namespace: they reach it over a veth link, as installers reach a founder
// across a network, not on loopback. Every machine rides the outage out within its deadline
// (docs/protocol.md#deadlines): none gives up on the refused or reset connections, and each is
// registered once. Needs root and iproute2 (test/netns.ts); it fails without them.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createTcpServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createNamespace, type Namespace } from "../netns.js";
import { startMainProcess, type MainProcess } from "../reference-server/main-process.js";
import { eventually } from "../helpers/eventually.js";

const root = new URL("../../", import.meta.url).pathname;
// A /30 of its own per process: the host's side of the link is in the shared namespace.
const subnet = `10.122.${process.pid % 250}`;
const HOST = `${subnet}.1`;
const MACHINES = `${subnet}.2`;
const VETH = `s22-rs${process.pid % 100_000}`;

let ns: Namespace | undefined;
let dataDir: string | undefined;
const founders: MainProcess[] = [];
afterAll(() => {
  for (const f of founders) if (f.child.exitCode === null) f.child.kill("SIGKILL");
  ns?.remove(); // takes the veth pair with it
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** A free port on `host`, for a founder that must come back where it was. */
async function freePort(host: string): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("a founder killed at the first KE2 and restarted, machines in another network namespace", () => {
  it("five machines registering at once over a link all register, once each, when the founder is back", async () => {
    ns = createNamespace("restart");
    execFileSync("ip", ["link", "add", VETH, "type", "veth", "peer", "name", `${VETH}n`]);
    execFileSync("ip", ["link", "set", `${VETH}n`, "netns", ns.name]);
    execFileSync("ip", ["addr", "add", `${HOST}/30`, "dev", VETH]);
    execFileSync("ip", ["link", "set", VETH, "up"]);
    ns.exec("ip", ["addr", "add", `${MACHINES}/30`, "dev", `${VETH}n`]);
    ns.exec("ip", ["link", "set", `${VETH}n`, "up"]);

    dataDir = mkdtempSync(join(tmpdir(), "stratum-restart-netns-"));
    const port = await freePort(HOST);
    const env = { STRATUM_JOIN_ADDR: `${HOST}:${port}` };
    const first = await startMainProcess(dataDir, env);
    founders.push(first);
    const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    const admin = async (f: MainProcess, method: string, path: string): Promise<any> =>
      (await fetch(`${f.adminUrl}${path}`, { method, headers: { authorization: `Bearer ${token}` } })).json();
    const minted = await admin(first, "POST", "/v1/admin/cluster/join-codes");
    expect(minted.url).toContain(`${HOST}:${port}`);

    const joining = ns.run(
      process.execPath,
      ["--import", "tsx", join(root, "test/node/fixtures/register-machines-child.ts"), minted.url, "5"],
      { timeoutMs: 170_000 },
    );
    joining.catch(() => undefined); // awaited below
    await eventually(
      () => (/POST \/v1\/join\/pake 200/.test(first.output()) ? true : undefined),
      60_000,
      "the first KE2 answered",
    );
    const killedAt = Date.now();
    const exited = new Promise((resolve) => first.child.once("exit", resolve));
    first.child.kill("SIGKILL");
    await exited;
    await new Promise((r) => setTimeout(r, 1_500)); // down for a while: connections refused
    const second = await startMainProcess(dataDir, env);
    founders.push(second);

    const outcomes = (await joining)
      .trim()
      .split("\n")
      .map(
        (line) => JSON.parse(line) as { keyFingerprint: string; joinId?: string; pairingCode?: string; error?: string },
      );
    expect(outcomes.map((o) => o.error)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    // Each machine waited the outage out rather than exit in under a second with 120 s left.
    expect(Date.now() - killedAt).toBeGreaterThan(1_500);
    const joins = (await admin(second, "GET", "/v1/admin/cluster/joins")).items as any[];
    expect(joins.map((j) => j.keyFingerprint).sort()).toEqual(outcomes.map((o) => o.keyFingerprint).sort());
    for (const o of outcomes) {
      const listed = joins.find((j) => j.id === o.joinId);
      expect(listed.pairingCode).toBe(o.pairingCode);
      expect(listed.sourceAddr).toBe(MACHINES); // over the link, not loopback
    }
  }, 200_000);
});
