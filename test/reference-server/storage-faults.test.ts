// A full disk: every write of the founder (a SQLite transaction, a durable file) fails while it
// is full, and the answer is 503 STORAGE_UNAVAILABLE with Retry-After (which the SDK retries),
// never 500 INTERNAL; once space is back the same process carries on, nothing half-written.
//
// The disk is a real one: a 16 MiB tmpfs mounted in a private mount namespace (`unshare`),
// with the reference server running inside it (fixtures/full-disk-server.ts), so SQLite meets
// the file system's ENOSPC exactly as on a full data disk. `max_page_count` would only make
// SQLite pretend; a tmpfs also fails the CA rotation's file writes. It needs root or
// unprivileged user namespaces (CI runs as root); without either the test fails, it does not skip.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReferenceServer } from "../../examples/reference-server/server.js";
import { isStorageFull } from "../../examples/reference-server/storage-faults.js";
import { createAdminClient, StratumApiError } from "../../src/index.js";
import { TestJoiner, admin, type AdminAnswer } from "./helpers.js";

const root = new URL("../../", import.meta.url).pathname;

/** The fixture server in its namespace, and the lines it says. */
interface Child {
  process: ChildProcess;
  lines: Interface;
  stderr: string[];
  /** The server as the helpers use it: its URLs, token and join port. */
  server: ReferenceServer;
  /** Sends a command and waits for its one-line answer. */
  command(line: string): Promise<string>;
}

async function startInTmpfs(dir: string): Promise<Child> {
  // As root a mount namespace is enough; otherwise a user namespace gives the right to mount.
  const unshare = process.getuid?.() === 0 ? ["--mount"] : ["--mount", "--map-root-user"];
  const script = 'mount -t tmpfs -o size=16m tmpfs "$1" && exec "$2" --import tsx "$3" "$1"';
  const child = spawn(
    "unshare",
    [
      ...unshare,
      "sh",
      "-c",
      script,
      "sh",
      dir,
      process.execPath,
      join(root, "test/reference-server/fixtures/full-disk-server.ts"),
    ],
    { cwd: root, stdio: ["pipe", "pipe", "pipe"] },
  );
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (line) => stderr.push(line));
  const lines = createInterface({ input: child.stdout! });
  const iterator = lines[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const { value, done } = await iterator.next();
    clearTimeout(timer);
    if (done) throw new Error(`the fixture server ended: ${stderr.join("\n")}`);
    return value as string;
  };
  const started = JSON.parse(await next()) as { adminUrl: string; adminToken: string; joinPort: number };
  const server = { ...started } as unknown as ReferenceServer;
  return {
    process: child,
    lines,
    stderr,
    server,
    command: async (line) => {
      child.stdin!.write(`${line}\n`);
      return next();
    },
  };
}

let dir: string;
let child: Child;
beforeAll(async () => {
  const probe = spawnSync(
    "unshare",
    process.getuid?.() === 0 ? ["--mount", "true"] : ["--mount", "--map-root-user", "true"],
  );
  if (probe.status !== 0)
    throw new Error(`this test needs a mount namespace (root, or unprivileged user namespaces): ${probe.stderr}`);
  dir = mkdtempSync(join(tmpdir(), "stratum-full-"));
  child = await startInTmpfs(dir);
}, 90_000);
afterAll(async () => {
  if (child) {
    child.process.stdin!.write("free\nclose\n");
    await new Promise((resolve) => child.process.once("exit", resolve));
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function expectStorageUnavailable(answer: AdminAnswer): void {
  expect(answer.status).toBe(503);
  expect(answer.headers.get("content-type")).toBe("application/problem+json");
  expect(answer.headers.get("retry-after")).toBe("30");
  expect(answer.body).toMatchObject({ code: "STORAGE_UNAVAILABLE", status: 503, requestId: expect.any(String) });
}

describe("a full disk", () => {
  it("answers 503 STORAGE_UNAVAILABLE on both listeners, and recovers by itself once space is back", async () => {
    const { server } = child;
    // Before: a code and a machine that upgrades itself (its progress reports are writes).
    const minted = await admin(server, "POST", "/v1/admin/cluster/join-codes", {
      body: {},
      operationId: "mintJoinCode",
    });
    expect(minted.status).toBe(201);
    const joiner = await TestJoiner.create(server);
    const registered = await joiner.register(minted.body.code, { release: "0.5.0", selfUpgrade: true });
    expect(registered.response.status).toBe(201);
    const joinId = (registered.response.json as { joinId: string }).joinId;
    const upgrading = { steps: [{ name: "upgrade", title: "Upgrading", status: "running" }], log: ["fetching"] };

    expect(Number((await child.command("fill")).split(" ")[1])).toBeGreaterThan(0);

    // The admin API: a mint, a decision, a CA rotation (a durable file write) all refused, retryable.
    expectStorageUnavailable(
      await admin(server, "POST", "/v1/admin/cluster/join-codes", { body: {}, operationId: "mintJoinCode" }),
    );
    expectStorageUnavailable(
      await admin(server, "POST", `/v1/admin/cluster/joins/${joinId}/reject`, {
        body: { reason: "x" },
        operationId: "rejectNodeJoin",
      }),
    );
    expectStorageUnavailable(
      await admin(server, "POST", "/v1/admin/cluster/ca-rotations", { operationId: "rotateClusterCa" }),
    );
    // The SDK sees a code to branch on and a Retry-After, so its watchers wait and retry.
    const client = createAdminClient({ baseUrl: server.adminUrl, token: server.adminToken });
    const error = await client.mintJoinCode().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error).toMatchObject({ status: 503, code: "STORAGE_UNAVAILABLE", retryAfter: 30 });
    // Reads still work.
    expect((await admin(server, "GET", "/v1/admin/cluster/joins", { operationId: "listNodeJoins" })).status).toBe(200);

    // The join listener: a progress report cannot be recorded.
    const report = await joiner.progress(joinId, upgrading);
    expect(report.status).toBe(503);
    expect(report.headers["retry-after"]).toBe("30");
    expect(report.json).toMatchObject({ code: "STORAGE_UNAVAILABLE" });

    expect(await child.command("free")).toBe("freed");

    // The same process, no restart: every call that was refused now works.
    const after = await admin(server, "POST", "/v1/admin/cluster/join-codes", {
      body: {},
      operationId: "mintJoinCode",
    });
    expect(after.status).toBe(201);
    expect((await joiner.progress(joinId, upgrading)).status).toBe(200);
    expect(
      (await admin(server, "POST", "/v1/admin/cluster/ca-rotations", { operationId: "rotateClusterCa" })).status,
    ).toBe(200);
    // Nothing of the refused calls was half-written: two codes (before and after), a log line per accepted report.
    const codes = await admin(server, "GET", "/v1/admin/cluster/join-codes");
    expect(codes.body.items.map((c: { id: string }) => c.id).sort()).toEqual(
      [minted.body.joinCode.id, after.body.joinCode.id].sort(),
    );
    const join = await admin(server, "GET", `/v1/admin/cluster/joins/${joinId}`);
    expect(join.body).toMatchObject({ state: "needs-upgrade", logTail: ["fetching"] });
    // The operator finds the cause in the log; no 500 anywhere.
    expect(child.stderr.some((l) => l.includes("storage full"))).toBe(true);
    expect(child.stderr.some((l) => / 500 /.test(l))).toBe(false);
    await joiner.close();
  }, 120_000);
});

describe("what counts as a full disk", () => {
  it("SQLite's SQLITE_FULL, and ENOSPC or EDQUOT from the file system, also as a cause", () => {
    for (const code of ["SQLITE_FULL", "ENOSPC", "EDQUOT"])
      expect(isStorageFull(Object.assign(new Error("x"), { code }))).toBe(true);
    expect(isStorageFull(new Error("wrapped", { cause: Object.assign(new Error("x"), { code: "ENOSPC" }) }))).toBe(
      true,
    );
    for (const code of ["SQLITE_BUSY", "EACCES", "EIO", undefined])
      expect(isStorageFull(Object.assign(new Error("x"), { code }))).toBe(false);
  });
});
