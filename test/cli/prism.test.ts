/**
 * The CLI's admin commands through Prism (`@stoplight/prism-cli proxy --errors`), a proxy that
 * holds every request and every answer to openapi.yaml: the requests the SDK's admin client
 * sends and the answers the reference server gives must both be ones the spec describes. Prism
 * answers an invalid request 422 and an invalid answer 500 (`--errors`), and logs the rest it
 * finds (an answer's status the operation does not list is a warning it lets through): any
 * violation either way, in an answer or in its log, fails the test.
 *
 * Every admin command runs, in the outcomes a script sees: mint, list and revoke codes; list
 * joins and show one; approve (with defaults, with an assignment, and refused at `role`),
 * reject, fail and retry; and a refused state change. Joins are written straight into the
 * founder's store (the PAKE is tested elsewhere).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run.js";
import { insertJoinRow } from "../reference-server/helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const PRISM = join(root, "node_modules/@stoplight/prism-cli/dist/index.js");

/** A free loopback port (Prism takes no port 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject).listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

let t: TestServer;
let prism: ChildProcess;
let prismLog = "";
let api: string;
let tmp: string;

beforeAll(async () => {
  t = await startTestServer();
  // The runner would deliver an approved join at once; held, each join stays where a test puts it.
  t.server.setUpgrade(true);
  tmp = mkdtempSync(join(tmpdir(), "stratum-prism-"));
  const port = await freePort();
  prism = spawn(
    process.execPath,
    [
      PRISM,
      "proxy",
      join(root, "openapi.yaml"),
      t.server.adminUrl,
      "--errors",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
    ],
    { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH ?? "/usr/bin:/bin", NO_COLOR: "1" } },
  );
  prism.stdout!.on("data", (d: Buffer) => (prismLog += d.toString("utf8")));
  prism.stderr!.on("data", (d: Buffer) => (prismLog += d.toString("utf8")));
  const deadline = Date.now() + 60_000;
  while (!prismLog.includes("Prism is listening")) {
    if (prism.exitCode !== null || Date.now() > deadline) throw new Error(`Prism did not start:\n${prismLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  api = `http://127.0.0.1:${port}`;
}, 90_000);

afterAll(async () => {
  prism?.kill("SIGTERM");
  await t?.dispose();
  rmSync(tmp, { recursive: true, force: true });
});

interface Run {
  code: number;
  json: any;
  stderr: string;
}

/** Runs `stratum-join admin <args> --json` against Prism, with the founder's token. */
async function admin(...args: string[]): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(["admin", ...args, "--api", api, "--json"], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { STRATUM_TOKEN: t.server.adminToken },
    isTTY: false,
  });
  return { code, json: stdout ? JSON.parse(stdout) : undefined, stderr };
}

/** The violations Prism logged, in either direction. */
const violations = (): string[] =>
  prismLog.split("\n").filter((line) => /Violation:|Request terminated with error|VIOLATIONS|UNPROCESSABLE/.test(line));

describe("the CLI's admin commands through Prism", () => {
  it("mint, list and revoke join codes", async () => {
    const minted = await admin("mint", "--endpoint", "192.0.2.240", "--ttl", "600");
    expect(minted.code, minted.stderr).toBe(0);
    const defaults = await admin("mint");
    expect(defaults.code, defaults.stderr).toBe(0);
    const codes = await admin("codes");
    expect(codes.code, codes.stderr).toBe(0);
    const id = codes.json.items?.[0]?.id ?? codes.json[0]?.id;
    expect(id).toMatch(/^jc-/);
    expect((await admin("revoke", id)).code).toBe(0);
    // Revoking again answers the code as it is; an unknown one is 404.
    expect((await admin("revoke", id)).code).toBe(0);
    expect((await admin("revoke", "jc-nosuch00")).code).not.toBe(0);
    expect(violations()).toEqual([]);
  });

  it("list joins, show one, approve with defaults, with an assignment, and refused at role", async () => {
    const plain = insertJoinRow(t.server);
    const shaped = insertJoinRow(t.server);
    const storage = insertJoinRow(t.server);
    const list = await admin("joins");
    expect(list.code, list.stderr).toBe(0);
    expect((await admin("joins", "--state", "pending")).code).toBe(0);
    const one = await admin("joins", plain);
    expect([one.code, one.json.id ?? one.json.join?.id]).toEqual([0, plain]);
    expect((await admin("approve", plain)).code).toBe(0);
    const file = join(tmp, "assignment.json");
    writeFileSync(
      file,
      JSON.stringify({
        rack: "r2",
        links: [{ name: "data", interface: "enp2s0f0", purposes: ["storage", "overlay"] }],
        disks: [{ key: "naa.5000c500a1b2c3d4", role: "compute", confirm: "naa.5000c500a1b2c3d4" }],
      }),
    );
    const approved = await admin("approve", shaped, "--assignment", file);
    expect(approved.code, approved.stderr).toBe(0);
    // Another role is asked for as the spec allows, and refused at its field (exit 13).
    writeFileSync(file, JSON.stringify({ role: "storage" }));
    const refused = await admin("approve", storage, "--assignment", file);
    expect(refused.code).toBe(13);
    expect(JSON.stringify(refused.json ?? refused.stderr)).toContain('"role"');
    expect(violations()).toEqual([]);
  });

  it("reject, fail and retry, and a state that allows none of them", async () => {
    const pending = insertJoinRow(t.server);
    expect((await admin("reject", pending, "--reason", "not ours")).code).toBe(0);
    const running = insertJoinRow(t.server, {
      state: "installing",
      nodeId: "n-prism001",
      assignment: { name: "p-1", role: "hybrid" },
    });
    expect((await admin("fail", running, "--reason", "powered off")).code).toBe(0);
    expect((await admin("retry", running)).code).toBe(0);
    // Rejected is final: a retry is 409 JOIN_STATE_CONFLICT, which the spec lists.
    const conflict = await admin("retry", pending);
    expect(conflict.code).not.toBe(0);
    expect(JSON.stringify(conflict.json ?? conflict.stderr)).toContain("JOIN_STATE_CONFLICT");
    expect(violations()).toEqual([]);
  });

  it("can fail: Prism reports a request the spec does not allow", async () => {
    // The proof that the check above can see something: a call outside the CLI, as no client
    // of the SDK would send it (a rejection without its required reason).
    const join = insertJoinRow(t.server);
    const answer = await fetch(`${api}/v1/admin/cluster/joins/${join}/reject`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.server.adminToken}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(answer.status).toBe(422);
    await new Promise((r) => setTimeout(r, 100));
    expect(violations().length).toBeGreaterThan(0);
    prismLog = "";
  });
});
