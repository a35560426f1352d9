// The CLI takes a join to `joined` (progress, the inventory sent by default), and what it
// prints: paths never redacted, each state once, network errors that name the request, the
// host and the cause, a file given as --identity, and a next step after every error. Run
// in-process with captured output against a reference server on loopback.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdminClient, StratumApiError, StratumError } from "../../src/index.js";
import { JoinProtocolError, type StratumErrorCode } from "../../src/errors/index.js";
import { EXIT_CODE_TABLE, exitCodeFor, exitCodeForCode, runCli } from "../../src/cli/run.js";
import { Output } from "../../src/cli/output.js";
import { demoInventory } from "../helpers/inventory.js";
import { type TestServer } from "../helpers/reference-server.js";
import { startUnsealingHarness, writeSecretsFile } from "../node/machine-secrets.js";
import { startSwtpm, type Swtpm } from "../node/swtpm.js";
import { closedPort } from "./process.js";
import { expectDocumentedResult } from "./json-results.js";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

async function cli(
  args: string[],
  options: { env?: Record<string, string>; isTTY?: boolean; stdin?: AsyncIterable<string> } = {},
): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: options.env ?? {},
    isTTY: options.isTTY ?? false,
    ...(options.stdin ? { stdin: options.stdin } : {}),
  });
  const json = args.includes("--json") ? JSON.parse(stdout) : undefined;
  if (json !== undefined && code === 0) expectDocumentedResult(args, json);
  return { code, stdout, stderr, json };
}

let tmp: string;
let h: TestServer;
let admin: string[];
let url: string;
const env = () => ({ STRATUM_TOKEN: h.server.adminToken });

let tpm: Swtpm;
beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "stratum-cli-progress-"));
  [h, tpm] = await Promise.all([startUnsealingHarness({ timing: { tickMs: 100 } }), startSwtpm()]);
  admin = ["--api", h.server.adminUrl];
  url = (await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint })).url;
});
afterAll(async () => {
  await Promise.all([h?.dispose(), tpm?.stop()]);
  rmSync(tmp, { recursive: true, force: true });
});

/**
 * Flags that make this machine distinct from the others of the test: its own host name and
 * an inventory with its own address (all of them run on this one host, and the default
 * approval refuses a name or an address another member holds).
 */
let machines = 0;
function distinct(name: string): string[] {
  const file = join(tmp, `${name}.inventory.json`);
  const nic = { ...demoInventory.nics[0]!, addresses: [`192.0.2.${20 + ++machines}/24`] };
  writeFileSync(file, JSON.stringify({ ...demoInventory, nics: [nic] }));
  return ["--hostname", name, "--inventory", file];
}

/** A machine registered (with `args`), approved with the defaults, and waiting with its delivery. */
async function deliveredMachine(name: string, args: string[] = []): Promise<{ dir: string; joinId: string; run: Run }> {
  const dir = join(tmp, name);
  const first = await cli(["register", "--url", url, "--identity", dir, "--release", "0.6.0", ...args, "--json"]);
  expect(first.code, first.stdout + first.stderr).toBe(0);
  const approved = await cli(["admin", "approve", first.json.joinId, ...admin, "--json"], { env: env() });
  expect(approved.code, JSON.stringify(approved.json)).toBe(0);
  const run = await cli(
    [
      "register",
      "--url",
      url,
      "--identity",
      dir,
      "--release",
      "0.6.0",
      "--wait",
      "delivering",
      "--timeout",
      "20",
      "--secrets",
      writeSecretsFile(join(tmp, `${name}-homes`)),
      "--json",
    ],
    { env: { TPM2TOOLS_TCTI: tpm.tcti } },
  );
  expect(run.code, run.stdout + run.stderr).toBe(0);
  return { dir, joinId: first.json.joinId, run };
}

describe("progress: the joiner's steps take the join to joined", () => {
  it("register sends this machine's inventory by default, so the default approval works; paths are not redacted", async () => {
    const { dir, joinId, run } = await deliveredMachine("m-default");
    const join_ = await h.admin.getNodeJoin(joinId);
    expect(join_.inventory?.nics?.length).toBeGreaterThan(0);
    expect(join_.assignment?.mgmt?.interface).toBeTruthy();
    // The delivery's files are listed by role, nodeKey among them, and each secret's
    // destination by field: the values are paths and names.
    expect(run.json.delivery.files.nodeKey).toBe(join(dir, "delivery", "node.key"));
    const homes = join(tmp, "m-default-homes");
    expect(run.json.delivery.secrets.adminPassword).toEqual([
      { kind: "env", path: join(homes, "etc", "controlplane.env"), name: "STRATUM_IAM_ADMIN_PASSWORD" },
      { kind: "file", path: join(homes, "etc", "bootstrap-credentials.txt") },
    ]);
    expect(run.stdout).not.toContain("[redacted]");
    const status = await cli(
      ["status", "--identity", dir, "--write-delivery", "--secrets", join(homes, "secrets.json"), "--json"],
      { env: { TPM2TOOLS_TCTI: tpm.tcti } },
    );
    expect(status.json.delivery.files.nodeKey).toBe(join(dir, "delivery", "node.key"));
    expect(status.json.delivery.secrets.openBaoUnsealKey).toEqual([
      { kind: "tpm", path: join(homes, "var", "openbao-unseal.sealed") },
    ]);
    expect(status.stdout).not.toContain("PRIVATE KEY");
    // Done: the founder delivers one join at a time, and the next tests' machines wait for this one.
    expect(
      (await cli(["progress", "--identity", dir, "--step", "join", "--status", "done", "--json"])).json.state,
    ).toBe("joined");
  });

  it("--no-inventory sends no hardware (the default approval is then refused); --inventory FILE sends the file", async () => {
    const none = await cli([
      "register",
      "--url",
      url,
      "--identity",
      join(tmp, "m-none"),
      "--release",
      "0.6.0",
      "--no-inventory",
      "--json",
    ]);
    expect(none.code).toBe(0);
    // No hardware: only the clock, which every registration reports (docs/protocol.md#founder-time).
    const bare = (await h.admin.getNodeJoin(none.json.joinId)).inventory;
    expect(Object.keys(bare ?? {})).toEqual(["clock"]);
    expect(Math.abs(bare!.clock!.offsetSeconds!)).toBeLessThan(60);
    const refused = await cli(["admin", "approve", none.json.joinId, ...admin, "--json"], { env: env() });
    expect(refused.code).toBe(13);
    const file = join(tmp, "inventory.json");
    writeFileSync(file, JSON.stringify(demoInventory));
    const given = await cli([
      "register",
      "--url",
      url,
      "--identity",
      join(tmp, "m-file"),
      "--release",
      "0.6.0",
      "--inventory",
      file,
      "--json",
    ]);
    expect((await h.admin.getNodeJoin(given.json.joinId)).inventory?.nics?.[0]?.name).toBe("enp1s0");
    for (const both of [
      ["--inventory", file, "--no-inventory"],
      ["--no-inventory", "--collect-inventory"],
    ]) {
      const run = await cli(["register", "--url", url, "--identity", join(tmp, "m-x"), "--release", "0.6.0", ...both]);
      expect(run.code, both.join(" ")).toBe(2);
    }
  });

  it("a running step with a log file makes it installing, log lines from stdin reach the console, join done makes it joined", async () => {
    const { dir, joinId } = await deliveredMachine("m-progress", distinct("m-progress"));
    const log = join(tmp, "install.log");
    writeFileSync(log, "partitioning nvme1n1\r\nformatting nvme1n1\n");
    const running = await cli([
      "progress",
      "--identity",
      dir,
      "--step",
      "storage",
      "--status",
      "running",
      "--log",
      log,
      "--json",
    ]);
    expect(running.code, running.stdout).toBe(0);
    expect(running.json).toMatchObject({
      joinId,
      state: "installing",
      step: { name: "storage", title: "Preparing the disks", status: "running" },
      logLines: 2,
    });
    async function* stdin() {
      yield "mounting /var/lib/da";
      yield "ta\nwriting fstab\nlast line without a newline";
    }
    const streamed = await cli(["progress", "--identity", dir, "--step", "storage", "--status", "done", "--log", "-"], {
      stdin: stdin(),
    });
    expect(streamed.code, streamed.stderr).toBe(0);
    expect(streamed.stdout).toContain("reported step storage done with 3 log lines");
    const viewed = await h.admin.getNodeJoin(joinId);
    expect(viewed.logTail).toEqual([
      "partitioning nvme1n1",
      "formatting nvme1n1",
      "mounting /var/lib/data",
      "writing fstab",
      "last line without a newline",
    ]);
    expect(viewed.steps).toEqual([expect.objectContaining({ name: "storage", status: "done" })]);

    const done = await cli(["progress", "--identity", dir, "--step", "join", "--status", "done"]);
    expect(done.code, done.stderr).toBe(0);
    // The new state, once.
    expect(done.stdout.match(/state joined/g)).toHaveLength(1);
    expect((await h.admin.getNodeJoin(joinId)).state).toBe("joined");
    const status = await cli(["status", "--identity", dir, "--json"]);
    expect(status.json.state).toBe("joined");
    // Over: the founder takes no more reports, and says why.
    const late = await cli(["progress", "--identity", dir, "--step", "join", "--status", "done", "--json"]);
    expect(late.code).toBe(13);
    expect(late.json.error.code).toBe("JOIN_STATE_CONFLICT");
  });

  it("a failed step makes the join failed, with its message; bad flags exit 2, a directory without a saved join exits 15", async () => {
    const { dir, joinId } = await deliveredMachine("m-failed", distinct("m-failed"));
    const failed = await cli([
      "progress",
      "--identity",
      dir,
      "--step",
      "storage",
      "--status",
      "failed",
      "--title",
      "Disks",
      "--message",
      "no disk for data",
      "--json",
    ]);
    expect(failed.code).toBe(0);
    expect(failed.json.state).toBe("failed");
    expect(await h.admin.getNodeJoin(joinId)).toMatchObject({
      state: "failed",
      failedStep: "storage",
      failedStepTitle: "Disks",
      failedError: "no disk for data",
    });
    expect((await cli(["progress", "--identity", dir, "--step", "join", "--status", "finished"])).code).toBe(2);
    expect((await cli(["progress", "--identity", dir, "--status", "done"])).code).toBe(2);
    const empty = join(tmp, "m-empty");
    mkdirSync(empty);
    const none = await cli(["progress", "--identity", empty, "--step", "join", "--status", "done", "--json"]);
    expect(none.json.error.code).toBe("JOIN_SESSION_MISSING");
  });
});

describe("output fixes", () => {
  it("register --wait prints each state once (the state of the registration is not repeated by the wait)", async () => {
    const run = await cli([
      "register",
      "--url",
      url,
      "--identity",
      join(tmp, "m-once"),
      "--release",
      "0.6.0",
      "--wait",
      "pending",
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.match(/state pending/g)).toHaveLength(1);
  });

  it("--identity naming a file says it is not a directory (exit 15), not EEXIST", async () => {
    const file = join(tmp, "a-file");
    writeFileSync(file, "x");
    for (const args of [
      ["register", "--url", url, "--identity", file, "--release", "0.6.0", "--no-inventory"],
      ["status", "--identity", file],
      ["progress", "--identity", file, "--step", "join", "--status", "done"],
    ]) {
      const run = await cli([...args, "--json"]);
      expect(run.code, args[0]).toBe(15);
      expect(run.json.error).toMatchObject({
        code: "FILE_ERROR",
        message: expect.stringContaining("is not a directory"),
      });
      expect(run.stdout).not.toContain("EEXIST");
    }
  });

  it("an admin call that gets no answer names the method, the real path, the host and the cause, never the token", async () => {
    const port = await closedPort();
    const api = `http://127.0.0.1:${port}`;
    const list = await cli(["admin", "joins", "--api", api, "--token", "sekret-token", "--json"]);
    expect(list.code).toBe(9);
    expect(list.json.error.message).toMatch(
      new RegExp(`GET /v1/admin/cluster/joins to 127\\.0\\.0\\.1:${port} got no answer: ECONNREFUSED`),
    );
    const approve = await cli(["admin", "approve", "nj-8w2k4m1p", "--api", api, "--token", "sekret-token"]);
    expect(approve.code).toBe(9);
    expect(approve.stderr).toContain(`POST /v1/admin/cluster/joins/nj-8w2k4m1p/approve to 127.0.0.1:${port}`);
    expect(approve.stderr).toContain("ECONNREFUSED");
    expect(approve.stderr).not.toContain("{joinId}");
    expect(approve.stderr).toMatch(/→ Check that the founder's admin API runs at the address named above/);
    expect(list.stdout + approve.stderr).not.toContain("sekret-token");
  });

  it("an admin call that times out names the request and the host, never the token", async () => {
    // A server that accepts and never answers.
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as { port: number };
    try {
      const client = createAdminClient({ baseUrl: `http://127.0.0.1:${port}`, token: "sekret-token", timeoutMs: 300 });
      const error = await client.retryNodeJoin("nj-4f7k2q9m").catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "TIMEOUT" });
      expect((error as Error).message).toBe(
        `POST /v1/admin/cluster/joins/nj-4f7k2q9m/retry to 127.0.0.1:${port} got no answer within 300 ms`,
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("a wrong token or a missing one names --token-file and STRATUM_TOKEN", async () => {
    const wrong = await cli(["admin", "joins", ...admin, "--token", "not-the-token"]);
    expect(wrong.code).toBe(12);
    const missing = await cli(["admin", "joins", ...admin]);
    expect(missing.code).toBe(2);
    for (const run of [wrong, missing]) {
      expect(run.stderr).toMatch(/→ .*--token-file FILE.*STRATUM_TOKEN/);
    }
  });
});

describe("exit codes and next steps", () => {
  it("maps the new problem and error codes", () => {
    expect(exitCodeForCode("JOIN_CODE_BUSY")).toBe(8);
    expect(exitCodeForCode("STORAGE_UNAVAILABLE")).toBe(8);
    expect(exitCodeForCode("JOIN_BINDING_FAILED")).toBe(10);
    expect(exitCodeForCode("CONNECTION_INTERCEPTED")).toBe(10);
    expect(exitCodeForCode("UNSUPPORTED_MEDIA_TYPE")).toBe(1);
    const problem = (status: number, code: string) => new StratumApiError(status, { code, title: code });
    // The code wins over the status: a 401 that is a failed channel binding is an attack, not a token.
    expect(exitCodeFor(problem(401, "JOIN_BINDING_FAILED"))).toBe(10);
    expect(exitCodeFor(problem(503, "JOIN_CODE_BUSY"))).toBe(8);
    expect(exitCodeFor(problem(503, "STORAGE_UNAVAILABLE"))).toBe(8);
    expect(exitCodeFor(problem(415, "UNSUPPORTED_MEDIA_TYPE"))).toBe(1);
    expect(exitCodeFor(new JoinProtocolError("CONNECTION_INTERCEPTED" as never, "relayed"))).toBe(10);
  });

  it("every error code of the table is followed by what to do next", () => {
    for (const row of EXIT_CODE_TABLE) {
      for (const code of row.codes.filter((c) => /^[A-Z_]+$/.test(c) && c !== "ABORTED")) {
        let stderr = "";
        const out = new Output(
          {
            stdout: { write: () => undefined },
            stderr: { write: (t: string) => (stderr += t) },
            env: {},
            isTTY: false,
          },
          false,
        );
        expect(
          out.error(new StratumError(code as StratumErrorCode, "what happened"), { usageOf: "admin joins" }),
          code,
        ).toBe(row.exit);
        expect(stderr, code).toMatch(/\n→ \S/);
      }
    }
  });
});
