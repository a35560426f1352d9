// `npm run demo` is the README's first command: it must reach `joined` and exit 0.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

describe("npm run demo", () => {
  it("joins one machine end to end (upgrade, approval, delivery, joined) and exits 0", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "examples/demo/main.ts"], {
      encoding: "utf8",
      timeout: 180_000,
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/state needs-upgrade/);
    expect(run.stdout).toMatch(/downloaded from the founder and verified/);
    expect(run.stdout).toMatch(/registered again on 0\.6\.0: state pending/);
    expect(run.stdout).toMatch(/is joined; members:/);
    // The pairing code shows on both sides, and they agree.
    const codes = [...run.stdout.matchAll(/console ([0-9A-Z]{3}-[0-9A-Z]{3}) = machine ([0-9A-Z]{3}-[0-9A-Z]{3})/g)];
    expect(codes).toHaveLength(1);
    expect(codes[0]![1]).toBe(codes[0]![2]);
  }, 200_000);
});
