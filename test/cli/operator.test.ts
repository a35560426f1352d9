// An operator admitting a batch from the CLI, as a person sees it: in a pseudo-terminal 80
// columns wide (`script`) and in a pipe, against a reference server. A mistyped command or flag
// gets "did you mean"; a registration turned away by a full waiting list, or held by an
// upgrade, says so on a line per wait, in a pipe too; `--timeout` while the founder answers is
// still waiting (exit 18), not a firewall problem; `admin joins` with the founder down names
// the call as the API does; no doubled words; notes wrap between words; a join an operator
// failed reads "failed by"; `check` prints its expiry in words; `admin joins` has serial and MAC.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { stripAnsi } from "../../src/cli/style.js";
import { vmInventory } from "../console/machines.js";
import { insertJoinRow } from "../reference-server/helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { writeSecretsFile } from "../node/machine-secrets.js";
import { buildCli, closedPort, inPipe, inTerminal, killAll, removeCli, screen } from "./process.js";

let cli: string;
let tmp: string;
let h: TestServer;
let url: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "stratum-cli-operator-"));
  [cli, h] = await Promise.all([
    buildCli(),
    startTestServer({ limits: { maxWaiting: 3 }, timing: { tickMs: 50, waitingFullRetrySeconds: 1 } }),
  ]);
  url = (await h.admin.mintJoinCode()).url;
});
afterEach(killAll);
afterAll(async () => {
  await h?.dispose();
  rmSync(tmp, { recursive: true, force: true });
  if (cli) removeCli(cli);
});

const api = () => ({ STRATUM_API: h.server.adminUrl, STRATUM_TOKEN: h.server.adminToken });
/** The screen lines wider than 80 columns. */
const tooWide = (lines: readonly string[]) => lines.filter((line) => [...line].length > 80);
describe("did you mean", () => {
  it("suggests the command or flag that was meant, on a terminal and in a pipe, in the CLI's own words", async () => {
    const command = inTerminal(cli, ["regster", "--release", "0.6.0"]);
    expect(await command.exited).toBe(2);
    expect(screen(command.out()).join("\n")).toContain('unknown command "regster"; did you mean register?');
    const flag = inPipe(cli, ["register", "--wiat", "joined"]);
    expect(await flag.exited).toBe(2);
    expect(flag.err()).toContain("unknown flag --wiat for register; did you mean --wait?");
    // parseArgs's own advice is for other programs.
    expect(flag.err()).not.toContain("positional argument");
    const grouped = inTerminal(cli, ["admin", "aprove", "nj-8w2k4m1p"]);
    expect(await grouped.exited).toBe(2);
    expect(screen(grouped.out()).join("\n")).toContain('unknown command "admin aprove"; did you mean admin approve?');
    const missing = inPipe(cli, ["register", "--wait"]);
    expect(await missing.exited).toBe(2);
    expect(missing.err()).toContain("--wait needs a value");
  });
});

describe("a machine that waits", () => {
  it("in a pipe, says each wait for an upgrade and for a full waiting list, and goes on when there is room", async () => {
    await h.admin.setClusterUpgrade({ inProgress: true, retryAfterSeconds: 1 });
    for (let i = 0; i < 3; i++) insertJoinRow(h.server);
    const run = inPipe(cli, ["register", "--identity", join(tmp, "busy"), "--release", "0.6.0", "--no-inventory"], {
      STRATUM_JOIN_URL: url,
    });
    await run.until((out) => out.includes("(UPGRADE_IN_PROGRESS); trying again in 1 s"), "a line per upgrade wait");
    await h.admin.setClusterUpgrade({ inProgress: false });
    await run.until(
      (out) =>
        out.includes(
          "the cluster turned the registration away for now: 3 registrations already wait for an operator's decision, the most it keeps (3); approving, rejecting or expiring one frees a slot; trying again in 1 s",
        ),
      "a line per wait for a waiting slot",
    );
    // The console's count of refusals grows as the machine is turned away.
    expect((await h.admin.listNodeJoins()).capacity?.waiting.refused).toBeGreaterThan(0);
    const waiting = (await h.admin.listNodeJoins()).items.find((j) => j.state === "pending")!;
    await h.admin.expireNodeJoin(waiting.id);
    expect(await run.exited, run.err()).toBe(0);
    expect(run.out()).toContain("PAIRING CODE");
    expect(run.out()).not.toContain("\x1b");
  });

  it("--timeout while the founder answers says it is still waiting for approval (exit 18), with no network advice", async () => {
    // Room for one more: the waiting joins of the last test are decided.
    for (const j of (await h.admin.listNodeJoins()).items.filter((x) => x.state === "pending"))
      await h.admin.rejectNodeJoin(j.id, { reason: "test batch done" });
    const run = inTerminal(
      cli,
      ["register", "--identity", "m17", "--release", "0.6.0", "--wait", "joined", "--timeout", "2"],
      {
        STRATUM_JOIN_URL: url,
      },
      { cwd: tmp },
    );
    expect(await run.exited, run.out()).toBe(18);
    const text = stripAnsi(screen(run.out()).join("\n")).replace(/\n +/g, " ");
    expect(text).toContain("STILL_WAITING: the registration did not reach joined within 2 s: the cluster answers");
    expect(text).toMatch(/still waiting for approval \(pairing code [0-9A-Z]{3}-[0-9A-Z]{3}\)/);
    expect(text).toContain("→ The cluster answers; the machine is waiting for an operator");
    expect(text).not.toMatch(/firewall|routes/);
    expect(tooWide(screen(run.out()))).toEqual([]);
  });
});

describe("the operator's lists", () => {
  it("admin joins: serial and MAC columns, notes that wrap between words at 80 columns, no doubled words, 'failed by'", async () => {
    // One join delivering (its machine silent), one approved behind it, one failed by an operator.
    const running = insertJoinRow(h.server, {
      hostname: "rack7-vm",
      state: "delivering",
      deliveredAt: Date.now(),
      systemSerial: "SN-7001",
    });
    const queued = insertJoinRow(h.server, { hostname: "rack7-vm", state: "approved", systemSerial: "SN-7002" });
    const failed = insertJoinRow(h.server, { hostname: "rack7-gone", state: "installing", systemSerial: "SN-7003" });
    await h.admin.failNodeJoin(failed, { reason: "powered off for good; reinstalling" });
    const run = inTerminal(cli, ["admin", "joins"], api());
    expect(await run.exited, run.out()).toBe(0);
    const lines = screen(run.out());
    expect(tooWide(lines), lines.join("\n")).toEqual([]);
    const header = lines.find((l) => l.startsWith("ID"))!;
    // At 80 columns the address moves under the row; serial and MAC stay columns.
    expect(header).toMatch(/^ID\s+STATE\s+PAIRING\s+HOSTNAME\s+SERIAL\s+MAC$/);
    const row = lines.findIndex((l) => l.startsWith(queued));
    expect(lines[row]).toMatch(/SN-7002\s+58:47:ca:70:11:02$/);
    // The note under the row: every screen line ends on a whole word, and joined again the
    // lines are the sentence the founder wrote.
    const note = [lines[row + 1]!.trim()];
    for (let i = row + 2; lines[i]!.startsWith("    "); i++) note.push(lines[i]!.trim());
    expect(note.length).toBeGreaterThan(1);
    expect(note.join(" ")).toBe(`waiting for rack7-vm (${running}, delivering) to finish: one join runs at a time`);
    const text = lines.join("\n");
    // No doubled words ("waiting for    waiting for"); a timestamp's "2026-12-02 02:28" is not one.
    expect(text).not.toMatch(/\b([A-Za-z]\w*)\s+\1\b/);
    expect(text).toContain("failed: Failed by bootstrap-admin: powered off for good; reinstalling");
    expect(text).not.toContain("failed at operator");
    expect(text).toMatch(/capacity: \d control-plane members?/);
    expect(text).toMatch(/waiting: \d+ of 3 slots/);
    expect(text).toMatch(/^ {2}from 192\.0\.2\.\d+$/m);
    // In a pipe the lines stay whole, every column in the table.
    const piped = inPipe(cli, ["admin", "joins"], api());
    expect(await piped.exited).toBe(0);
    expect(piped.out()).toMatch(/^ID\s+STATE\s+PAIRING\s+HOSTNAME\s+SERIAL\s+MAC\s+FROM$/m);
    expect(piped.out()).toContain(
      `  waiting for rack7-vm (${running}, delivering) to finish: one join runs at a time\n`,
    );
    const one = inPipe(cli, ["admin", "joins", queued], api());
    expect(await one.exited).toBe(0);
    expect(one.out()).toMatch(new RegExp(`waiting for +rack7-vm \\(${running}, delivering\\) to finish`));
    expect(one.out()).not.toMatch(/waiting for\s+waiting for/);
  });

  it("admin joins with the founder down names the call as the API does, and says to check the admin API", async () => {
    const run = inTerminal(cli, ["admin", "joins", "--api", `http://127.0.0.1:${await closedPort()}`], {
      STRATUM_TOKEN: "t",
    });
    expect(await run.exited).toBe(9);
    const text = stripAnsi(screen(run.out()).join("\n")).replace(/\n +/g, " ");
    expect(text).toMatch(/NETWORK: GET \/v1\/admin\/cluster\/joins to 127\.0\.0\.1:\d+ got no answer: ECONNREFUSED/);
    expect(text).not.toContain("listNodeJoins");
    expect(text).toContain("→ Check that the founder's admin API runs");
  });

  it("progress and check say the state and the expiry in words: no 'installing — installing', no raw ISO time", async () => {
    const dir = join(tmp, "installer");
    const inventory = join(tmp, "inventory.json");
    writeFileSync(inventory, JSON.stringify(vmInventory("52:54:00:aa:bb:01", "10.0.2.99", "OPS")));
    const registered = inPipe(cli, ["register", "--identity", dir, "--release", "0.6.0", "--inventory", inventory], {
      STRATUM_JOIN_URL: url,
    });
    expect(await registered.exited, registered.err()).toBe(0);
    const { joinId } = JSON.parse(readFileSync(join(dir, "session.json"), "utf8")) as { joinId: string };
    // The queue is held by the joins of the test before: let this one run.
    for (const j of (await h.admin.listNodeJoins()).items)
      if (j.state === "delivering" || j.state === "installing") await h.admin.failNodeJoin(j.id, { reason: "done" });
      else if (j.state === "approved" && j.id !== joinId) await h.admin.rejectNodeJoin(j.id, { reason: "done" });
    await h.admin.approveNodeJoin(joinId);
    const delivered = inPipe(
      cli,
      // The founder's OpenBao is a single instance: every secret but the unseal key, each to its home.
      [
        "register",
        "--identity",
        dir,
        "--release",
        "0.6.0",
        "--no-inventory",
        "--wait",
        "delivering",
        "--secrets",
        writeSecretsFile(mkdtempSync(join(tmp, "homes-"))),
      ],
      {
        STRATUM_JOIN_URL: url,
      },
    );
    expect(await delivered.exited, delivered.err()).toBe(0);
    const progress = inPipe(cli, [
      "progress",
      "--identity",
      dir,
      "--step",
      "storage",
      "--status",
      "running",
      "--total-steps",
      "4",
    ]);
    expect(await progress.exited, progress.err()).toBe(0);
    expect(progress.out()).toMatch(/: state installing$/m);
    expect((await h.admin.getNodeJoin(joinId)).totalSteps).toBe(4);
    const check = inTerminal(cli, ["check", "--release", "0.6.0"], { STRATUM_JOIN_URL: url });
    expect(await check.exited, check.out()).toBe(0);
    expect(stripAnsi(screen(check.out()).join("\n"))).toMatch(
      /code expires +\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in (4 h|3 h 5\d min)\)/,
    );
  });
});
