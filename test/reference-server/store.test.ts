// The store's engine: the durability settings it relies on are in force, and a change whose
// commit returned survives the process being killed (SIGKILL, no close, no checkpoint) while
// a change that threw left nothing.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../examples/reference-server/schema.js";
import { readPragma } from "../../examples/reference-server/sqlite.js";
import { Store } from "../../examples/reference-server/store.js";

const root = new URL("../../", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "stratum-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the store's engine", () => {
  it("runs WAL, synchronous FULL, secure_delete and foreign keys, in 0600 files", () => {
    const path = join(dir, "settings.db");
    const store = new Store(path);
    try {
      store.tx(() => store.setMeta("secret", "x"));
      // The WAL holds the latest changes (secrets included) until a checkpoint: 0600 like the database.
      expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
      expect(readPragma(store.db, "journal_mode")).toBe("wal");
      expect(readPragma(store.db, "synchronous")).toBe(2);
      expect(readPragma(store.db, "secure_delete")).toBe(1);
      expect(readPragma(store.db, "foreign_keys")).toBe(1);
      expect(readPragma(store.db, "user_version")).toBe(MIGRATIONS.length);
      expect(statSync(path).mode & 0o777).toBe(0o600);
    } finally {
      store.close();
    }
  });

  it("rolls a transaction back whole when it throws, and nests inner calls in the outer one", () => {
    const store = new Store(join(dir, "rollback.db"));
    try {
      let changes = 0;
      store.on("change", () => changes++);
      expect(() =>
        store.tx(() => {
          store.setMeta("a", 1);
          store.tx(() => store.setMeta("b", 2));
          throw new Error("simulated failure");
        }),
      ).toThrow("simulated failure");
      expect(store.getMeta("a")).toBeUndefined();
      expect(store.getMeta("b")).toBeUndefined();
      store.tx(() => {
        store.setMeta("a", 1);
        store.tx(() => store.setMeta("b", null));
      });
      expect([store.getMeta("a"), store.getMeta("b"), changes]).toEqual([1, null, 1]);
    } finally {
      store.close();
    }
  });

  it("keeps every change whose commit returned when the process is killed", async () => {
    const path = join(dir, "killed.db");
    const child = spawn(process.execPath, ["--import", "tsx", "test/reference-server/fixtures/store-writer.ts", path], {
      cwd: root,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const waitFor = async (text: string): Promise<void> => {
      const deadline = Date.now() + 20_000;
      while (!out.includes(text)) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`no "${text}": ${out}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await waitFor("open\n");
    const keys = Array.from({ length: 20 }, (_, i) => `key-${i}`);
    for (const key of keys) {
      child.stdin.write(`${key}\n`);
      await waitFor(`committed ${key}\n`);
    }
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    // Killed before any close: the changes are in the WAL, not yet in the database file.
    expect(existsSync(`${path}-wal`)).toBe(true);
    const store = new Store(path);
    try {
      for (const key of keys) expect(store.getMeta(key), key).toEqual({ committed: true });
      expect(store.auditEntries().map((e) => e.target)).toEqual(keys);
    } finally {
      store.close();
    }
  });
});
