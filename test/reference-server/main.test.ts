// The command: `tsx examples/reference-server/main.ts` configured by environment, printing
// where it listens and the admin token once, stopping cleanly on SIGTERM and SIGINT.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startMainProcess } from "./main-process.js";

const dataDir = mkdtempSync(join(tmpdir(), "stratum-main-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });
}

describe("npm run reference-server", () => {
  it("starts, prints where it listens and the token once, and stops on SIGTERM", async () => {
    const first = await startMainProcess(dataDir);
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

    const second = await startMainProcess(dataDir);
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
    const started = await startMainProcess(dataDir, { STRATUM_ADMIN_TOKEN: "stratum_from-the-environment" });
    expect(started.output()).toContain("admin token     from STRATUM_ADMIN_TOKEN");
    const answer = await fetch(`${started.adminUrl}/v1/admin/cluster/networks`, {
      headers: { authorization: "Bearer stratum_from-the-environment" },
    });
    expect(answer.status).toBe(200);
    started.child.kill("SIGTERM");
    expect(await exited(started.child)).toBe(0);
  });
});
