// A machine whose clock is wrong still joins (docs/protocol.md#founder-time): the real CLI, a
// process of the real entry, under libfaketime (Debian's `faketime`, which `npm test` installs as root)
// against a reference server on loopback with the true time, over real TLS. A year ahead,
// three years behind, and 1 January 2000 (a dead RTC battery): `check`, `register` and a later
// `status` (a new process, pinned to the CA, judging its leaf by the offset the session kept)
// all succeed, and the founder sees the offset in the join's inventory.
//
// Without faketime this file fails (it never skips): the behaviour it proves needs it.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run.js";
import { demoInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { expectInstalled, requirement } from "../machine/tools.js";
import { buildCli, removeCli } from "./process.js";

const FAKETIME = requirement("faketime").proof.path!;
const DAY_S = 86_400;

let h: TestServer;
let cli: string;
let tmp: string;
let url: string;
let inventoryFile: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "stratum-clock-skew-"));
  [h, cli] = await Promise.all([startTestServer({ timing: { tickMs: 100 } }), buildCli()]);
  url = (await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint })).url;
  inventoryFile = join(tmp, "inventory.json");
  writeFileSync(inventoryFile, JSON.stringify(demoInventory));
}, 60_000);
afterAll(async () => {
  await h?.dispose();
  rmSync(tmp, { recursive: true, force: true });
  if (cli) removeCli(cli);
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `node cli args…` under `faketime fakeArgs…`, the join URL in the environment (never in argv). */
function underFaketime(fakeArgs: readonly string[], args: readonly string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(FAKETIME, [...fakeArgs, process.execPath, cli, ...args], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/",
        // faketime reads an absolute time in the local zone: UTC, so 2000-01-01 is that day.
        TZ: "UTC",
        STRATUM_JOIN_URL: url,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** The founder's time minus the faked one, in seconds, for each setting (the true clock is the founder's). */
const SETTINGS = [
  { name: "one year ahead", args: ["-f", "+1y"], offsetSeconds: () => -365 * DAY_S },
  { name: "three years behind", args: ["-f", "-3y"], offsetSeconds: () => 3 * 365 * DAY_S },
  {
    name: "1 January 2000",
    args: ["2000-01-01 00:00:00"],
    offsetSeconds: () => Math.round((Date.now() - Date.parse("2000-01-01T00:00:00Z")) / 1000),
  },
] as const;

// A margin for the time between faketime's start and the PAKE answer (Node's start, Argon2).
const MARGIN_S = 120;

describe("the CLI with a wrong clock, under libfaketime", { timeout: 180_000 }, () => {
  it("faketime is installed (Debian package faketime; `npm test` installs it as root)", async () => {
    expectInstalled("faketime");
    // And it fakes this Node's clock: the premise of every test below.
    const run = await underFaketime(["2000-01-01 00:00:00"], ["--version"]);
    expect(run.code, run.stderr).toBe(0);
    const probe = await new Promise<string>((resolve, reject) => {
      const child = spawn(FAKETIME, ["2000-01-01 00:00:00", process.execPath, "-e", "console.log(Date.now())"], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", TZ: "UTC" },
      });
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
      child.on("error", reject);
      child.on("close", () => resolve(out));
    });
    expect(Math.abs(Number(probe) - Date.parse("2000-01-01T00:00:00Z"))).toBeLessThan(60_000);
  });

  for (const setting of SETTINGS) {
    it(`${setting.name}: check, register and status succeed; the founder sees the offset`, async () => {
      const expected = setting.offsetSeconds();
      const dir = join(tmp, setting.name.replace(/\W+/g, "-"));

      const check = await underFaketime(setting.args, ["check", "--release", "0.6.0", "--json"]);
      expect(check.code, check.stderr).toBe(0);
      const checked = JSON.parse(check.stdout) as { clockOffsetSeconds: number };
      expect(Math.abs(checked.clockOffsetSeconds - expected)).toBeLessThan(MARGIN_S);
      expect(check.stderr).toMatch(/warning:.*this machine's clock is \d+ years? (behind|ahead of) the founder's/);

      const register = await underFaketime(setting.args, [
        "register",
        "--identity",
        dir,
        "--release",
        "0.6.0",
        "--inventory",
        inventoryFile,
        "--json",
      ]);
      expect(register.code, register.stderr).toBe(0);
      const registered = JSON.parse(register.stdout) as { joinId: string; state: string; clockOffsetSeconds: number };
      expect(registered.state).toBe("pending");
      expect(Math.abs(registered.clockOffsetSeconds - expected)).toBeLessThan(MARGIN_S);
      expect(register.stderr).toMatch(/warning:.*this machine's clock is .*set the clock \(NTP\)/);

      // A later call, in a new process, pinned to the CA: the session's offset judges the leaf.
      const status = await underFaketime(setting.args, ["status", "--identity", dir, "--json"]);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ joinId: registered.joinId, state: "pending" });

      // The founder's view of the join carries the offset the machine measured.
      const founderJoin = await h.admin.getNodeJoin(registered.joinId);
      const clock = founderJoin.inventory?.clock;
      expect(clock?.offsetSeconds).toBe(registered.clockOffsetSeconds);
      expect(founderJoin.inventory?.nics).toEqual(demoInventory.nics); // the rest of the inventory as sent
      console.log(`clock skew: ${setting.name}: the founder sees offsetSeconds ${clock?.offsetSeconds}`);
    });
  }

  it("admin joins warns of each machine whose clock is off, and shows it on the join", async () => {
    const run = async (args: string[]) => {
      let stdout = "";
      let stderr = "";
      const code = await runCli(["admin", ...args, "--api", h.server.adminUrl, "--token", h.server.adminToken], {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: (t: string) => (stderr += t) },
        env: { NO_COLOR: "1" },
        isTTY: false,
      });
      return { code, stdout, stderr };
    };
    const list = await run(["joins"]);
    expect(list.code, list.stderr).toBe(0);
    const warnings = list.stderr.split("\n").filter((line) => line.startsWith("warning:"));
    expect(warnings).toHaveLength(SETTINGS.length);
    expect(list.stderr).toMatch(/the machine's clock is 1 year ahead of the founder's: fix it/);
    expect(list.stderr).toMatch(/the machine's clock is 3 years behind the founder's: fix it/);
    expect(list.stderr).toMatch(/the machine's clock is (26|27) years behind the founder's: fix it/);
    const joins = await h.admin.listNodeJoins();
    const one = await run(["joins", joins.items[0]!.id]);
    expect(one.stdout).toMatch(
      / {2}clock {10}the machine's clock is \d+ years? (behind|ahead of) the founder's: fix it/,
    );
  });
});
