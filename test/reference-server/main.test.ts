// The command: `tsx examples/reference-server/main.ts` configured by environment, printing
// where it listens and the admin token once, stopping cleanly on SIGTERM and SIGINT.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), "stratum-main-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Started {
  child: ChildProcess;
  output: () => string;
  adminUrl: string;
}

async function start(env: Record<string, string> = {}): Promise<Started> {
  const child = spawn(process.execPath, ["--import", "tsx", "examples/reference-server/main.ts"], {
    cwd: root,
    env: {
      ...process.env,
      STRATUM_DATA_DIR: dataDir,
      STRATUM_ADMIN_ADDR: "127.0.0.1:0",
      STRATUM_JOIN_ADDR: "127.0.0.1:0",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const deadline = Date.now() + 20_000;
  while (!/admin token .*\n/.test(out)) {
    if (child.exitCode !== null) throw new Error(`exited: ${out}`);
    if (Date.now() > deadline) throw new Error(`no start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const adminUrl = /admin API\s+(\S+)/.exec(out)![1]!;
  return { child, output: () => out, adminUrl };
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });
}

describe("npm run reference-server", () => {
  it("starts, prints where it listens and the token once, and stops on SIGTERM", async () => {
    const first = await start();
    const text = first.output();
    expect(first.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(text).toMatch(/join listener\s+127\.0\.0\.1:\d+ \(closed until a join code is minted\)/);
    const token = /admin token\s+(stratum_\S+)/.exec(text)![1]!;
    expect(statSync(join(dataDir, "admin-token")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, "stratum.db")).mode & 0o777).toBe(0o600);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    const members = await fetch(`${first.adminUrl}/v1/admin/cluster/members`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(members.status).toBe(200);
    first.child.kill("SIGTERM");
    expect(await exited(first.child)).toBe(0);
    expect(first.output()).toContain("SIGTERM: stopping");
    // The request was logged, without the token.
    expect(first.output()).toMatch(/admin 127\.0\.0\.1 GET \/v1\/admin\/cluster\/members 200/);
    expect(first.output().split(token).length).toBe(2); // printed once, at the start

    const second = await start();
    expect(second.output()).not.toContain(token);
    expect(second.output()).toContain(`admin token     in ${join(dataDir, "admin-token")}`);
    const again = await fetch(`${second.adminUrl}/v1/admin/cluster/members`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(again.status).toBe(200);
    second.child.kill("SIGINT");
    expect(await exited(second.child)).toBe(0);
  });

  it("takes the token from STRATUM_ADMIN_TOKEN", async () => {
    const started = await start({ STRATUM_ADMIN_TOKEN: "stratum_from-the-environment" });
    expect(started.output()).toContain("admin token     from STRATUM_ADMIN_TOKEN");
    const answer = await fetch(`${started.adminUrl}/v1/admin/cluster/networks`, {
      headers: { authorization: "Bearer stratum_from-the-environment" },
    });
    expect(answer.status).toBe(200);
    started.child.kill("SIGTERM");
    expect(await exited(started.child)).toBe(0);
  });
});
