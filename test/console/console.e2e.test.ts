// The console example end to end, in Debian's headless Chromium (playwright-core) against a
// real reference server, as an operator uses it: sign in (a wrong token first), mint codes,
// four machines register with the Node joiner (two "vm" twins, one without inventory), the
// cards tell them apart; approve one with an edited assignment and follow it to `joined`;
// approve another whose default the founder refuses, fix the marked fields and approve again;
// revoke a code; lose the server and get it back on the same port and data directory; approve
// one with the keyboard alone; reject one with a reason the machine receives. Every main
// state is looked at 1280 and 390 px wide: no horizontal overflow, a screenshot under
// test-results/, and axe-core with no serious or critical violation (test-results/console-axe.json).
//
// Skipped, with a message, only on a developer machine without /usr/bin/chromium; in CI
// (`CI` set, as .ci/run does after installing chromium) it runs and fails without it.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { parseJoinCode, parsePairingCode, type Inventory } from "../../src/index.js";
import {
  createMachineIdentity,
  registerMachine,
  reportProgress,
  waitForRegistration,
  type JoinSession,
  type MachineIdentity,
} from "../../src/node/index.js";
import { startReferenceServer, type ReferenceServer } from "../../examples/reference-server/server.js";
import { buildConsole, serveStatic } from "./build-console.js";
import {
  checkpoint,
  CHROMIUM,
  CHROMIUM_ARGS,
  inventory,
  POLL,
  runnable,
  saveAxeLog,
  SHOTS,
  vmInventory,
} from "./harness.js";

interface Machine {
  hostname: string;
  identity: MachineIdentity;
  session: JoinSession;
}

describe.runIf(runnable)("the console example in Chromium", () => {
  let dataDir: string;
  let outDir: string;
  let server: ReferenceServer;
  let site: Awaited<ReturnType<typeof serveStatic>>;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const serverLog: string[] = [];
  const pageErrors: string[] = [];
  const machines = new Map<string, Machine>();
  let code = "";
  let url = "";

  const startServer = (adminAddr = "127.0.0.1:0", joinAddr = "127.0.0.1:0") =>
    startReferenceServer({
      dataDir,
      adminAddr,
      joinAddr,
      log: (line) => serverLog.push(line),
      timing: { tickMs: 50, listenerCloseGraceMs: 50 },
    });
  const card = (key: string): Locator =>
    page.locator(`[data-testid="join"][data-join-id="${machines.get(key)!.session.joinId}"]`);
  const stateOf = (key: string) => card(key).getAttribute("data-state");
  const focusedTestId = () =>
    page.evaluate(() => document.activeElement?.getAttribute("data-testid") ?? document.activeElement?.id ?? "");

  beforeAll(async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: .ci/run installs it with apt-get`).toBe(true);
    outDir = mkdtempSync(join(tmpdir(), "stratum-console-e2e-"));
    dataDir = mkdtempSync(join(tmpdir(), "stratum-console-ref-"));
    [, server] = await Promise.all([buildConsole(outDir), startServer()]);
    site = await serveStatic(outDir);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(site.url).origin });
    page = await context.newPage();
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("console", (message) => {
      // The refusals this walk provokes (401, 400, 409, no answer) are logged by the browser itself.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource"))
        pageErrors.push(`console: ${message.text()}`);
    });
  }, 120_000);

  afterAll(async () => {
    saveAxeLog();
    await browser?.close();
    await site?.close();
    await server?.close();
    for (const dir of [outDir, dataDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  // The steps build on each other: after a failure, the rest fail at once rather than time out.
  let failed: string | undefined;
  const onFailure = (): void => {
    expect(failed, `an earlier step failed: ${failed}`).toBeUndefined();
    onTestFailed(async ({ task }) => {
      failed ??= task.name;
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, "console-failed.png"), fullPage: true }).catch(() => {});
      console.error(
        `console e2e failed; page errors: ${JSON.stringify(pageErrors)}; screenshot test-results/console-failed.png; server log tail:\n${serverLog.slice(-20).join("\n")}`,
      );
    });
  };

  async function register(key: string, hostname: string, serial: string | undefined, inv: Inventory | undefined) {
    const identity = await createMachineIdentity();
    const result = await registerMachine({
      url,
      identity,
      release: "0.6.0",
      hostname,
      ...(serial ? { systemSerial: serial } : {}),
      ...(inv ? { inventory: inv } : {}),
    });
    expect(result.created).toBe(true);
    machines.set(key, { hostname, identity, session: result.session });
  }

  it("signs in: a wrong token is told at the token field, which gets the focus", async () => {
    onFailure();
    await page.goto(site.url);
    await page.getByTestId("api-url").fill(server.adminUrl);
    await checkpoint(page, "signed-out");
    await page.getByLabel("API token").fill("not-a-token");
    await page.getByTestId("sign-in").click();
    await expect.poll(() => page.locator("#token-error").textContent(), POLL).toMatch(/API token was not accepted/);
    expect(await page.getByTestId("token").getAttribute("aria-invalid")).toBe("true");
    expect(await focusedTestId()).toBe("token");

    await page.getByLabel("API token").fill(server.adminToken);
    expect(await page.getByTestId("token").getAttribute("aria-invalid")).toBeNull(); // edited: no longer marked
    await page.getByTestId("sign-in").click();
    await page.getByTestId("console").waitFor({ state: "visible" });
    expect(await page.getByTestId("signed-in-as").textContent()).toBe(`Signed in to ${server.adminUrl}`);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("mint-title");
  });

  it("mints: a refused endpoint is marked at its field; the code comes with copy buttons, a command and a countdown", async () => {
    onFailure();
    await page.getByTestId("endpoint").fill("not a host!");
    await page.getByTestId("mint").click();
    await expect.poll(() => page.locator("#endpoint-error").textContent(), POLL).not.toBe("");
    expect(await page.getByTestId("endpoint").getAttribute("aria-invalid")).toBe("true");
    expect(await focusedTestId()).toBe("endpoint");
    const refusal = (await page.getByTestId("mint-feedback").textContent())!;
    expect(refusal).toContain("Could not mint a join code: some values are not valid");
    expect(refusal).not.toMatch(/\/v1\/|\{codeId\}/);
    expect(await page.getByTestId("minted").isHidden()).toBe(true);
    // Dismissible.
    await page.getByTestId("mint-feedback").getByTestId("dismiss").click();
    expect(await page.getByTestId("mint-feedback").textContent()).toBe("");

    await page.getByTestId("endpoint").fill("");
    await page.getByTestId("cluster-release").fill("0.6.0");
    await page.getByTestId("mint").click();
    await page.getByTestId("minted").waitFor({ state: "visible" });
    code = (await page.getByTestId("join-code").textContent())!;
    url = (await page.getByTestId("join-url").textContent())!;
    expect(parseJoinCode(code).formatted).toBe(code);
    expect(url).toBe(`stratum-join://${server.joinEndpoint}/${code}`);
    // Each group of the code is kept whole; the page wraps only between groups.
    expect(await page.getByTestId("join-code").locator(".group").allTextContents()).toEqual(code.split("-"));
    const command = (await page.getByTestId("join-command").textContent())!;
    expect(command).toBe(`stratum-join register --url '${url}' --identity /var/lib/stratum-join --release '0.6.0'`);
    await page.getByTestId("copy-command").click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(command);
    expect(await page.getByTestId("copy-command").textContent()).toBe("Copied");
    await page.getByTestId("copy-code").click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(code);
    // Local time with its zone, and a countdown.
    expect(await page.getByTestId("join-expires").textContent()).toMatch(
      /\d.*[A-Z+][A-Z0-9:+-]* \(in (4\sh|3\sh 59\smin)\)$/,
    );
    const qr = await page.getByTestId("join-qr").evaluate((canvas: HTMLCanvasElement) => {
      const { data } = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height);
      let dark = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i]! < 128) dark++;
      return { width: canvas.width, darkShare: dark / (data.length / 4) };
    });
    expect(qr.width).toBeGreaterThanOrEqual(100);
    expect(qr.darkShare).toBeGreaterThan(0.2);
    expect(qr.darkShare).toBeLessThan(0.8);
    await expect.poll(() => page.getByTestId("code-row").count(), POLL).toBe(1);
    expect(await page.getByTestId("code-countdown").textContent()).toMatch(/^in (4\sh|3\sh 59\smin)$/);

    // A second, short-lived code, to revoke later.
    await page.getByTestId("ttl-hours").fill("1");
    await page.getByTestId("mint").click();
    await expect.poll(() => page.getByTestId("code-row").count(), POLL).toBe(2);
  });

  it("lists four machines so that twins are told apart, with age, expiry, serial, key, MACs and no noise", async () => {
    onFailure();
    await register("node-2", "node-2", "SN-22", inventory({ last: 22, mgmtAddress: "192.0.2.22" }));
    // A clone of node-2's network: its default management address is the one node-2 will hold.
    await register(
      "node-3",
      "node-3",
      "SN-23",
      inventory({ last: 23, mgmtAddress: "192.0.2.22", secondAddress: "198.51.100.23", dataDiskHoldsData: true }),
    );
    await register("vm-a", "vm", "VM-A-0001", vmInventory("52:54:00:12:34:56", "10.0.2.15", "VMA"));
    await register("vm-b", "vm", undefined, undefined);

    for (const [key, machine] of machines) {
      const row = card(key);
      await row.waitFor({ state: "visible", timeout: 20_000 });
      // The code the page shows is the one the machine computed itself.
      expect(parsePairingCode((await row.getByTestId("pairing-code").textContent())!)).toBe(
        parsePairingCode(machine.session.pairingCode),
      );
      expect(await row.getByTestId("join-hostname").textContent()).toBe(machine.hostname);
      expect(await stateOf(key)).toBe("pending");
      expect(await row.getByTestId("join-state").textContent()).toBe("Waiting for approval");
      const who = (await row.getByTestId("join-who").textContent())!;
      expect(who).toContain(machine.session.joinId);
      expect(who).toMatch(/key [0-9A-F]{2}(:[0-9A-F]{2}){3}…/);
      expect(await row.getByTestId("join-times").textContent()).toMatch(/^Registered (just now|\d+\ss ago)/);
      expect(await row.getByTestId("join-explain").textContent()).toMatch(/Expires in \d+\s(d|h)/);
    }
    const twinA = (await card("vm-a").getByTestId("join-who").textContent())!;
    const twinB = (await card("vm-b").getByTestId("join-who").textContent())!;
    expect(twinA).toContain("serial VM-A-0001");
    expect(twinA).toContain("MAC 52:54:00:12:34:56");
    expect(twinA).not.toBe(twinB);
    const hardware = (await card("node-2").getByTestId("join-hardware").textContent())!;
    expect(hardware).toContain("AMD EPYC 7313P, 16 cores, 32 threads");
    expect(hardware).toContain("128 GiB");
    expect(hardware).toContain("nvme1n1, 3.8 TB, blank");
    expect(hardware).toContain("enp2s0f0: 58:47:ca:70:12:22, link up, 25 Gb/s");
    expect(hardware).not.toMatch(/ifb0|\blo\b/);
    const bare = (await card("vm-b").getByTestId("join-hardware").textContent())!;
    expect(bare).toBe("Hardwarenot reported by the machine");
    expect(bare).not.toContain("Memory");
    await expect
      .poll(() => page.getByTestId("joins-counts").textContent(), POLL)
      .toBe("4 machines: 4 waiting for approval");
    // Newest first: the machines registered with the first code minted, now second in the list.
    await expect.poll(() => page.getByTestId("code-row").last().textContent(), POLL).toContain("4 machines registered");

    // Filter and sort.
    await page.getByTestId("joins-filter").selectOption("joined");
    expect(await page.getByTestId("joins-filtered").isVisible()).toBe(true);
    expect(await page.locator('[data-testid="join"]:visible').count()).toBe(0);
    await page.getByTestId("joins-filter").selectOption("pending");
    expect(await page.locator('[data-testid="join"]:visible').count()).toBe(4);
    await page.getByTestId("joins-sort").selectOption("name");
    expect(await page.getByTestId("join-hostname").allTextContents()).toEqual(["node-2", "node-3", "vm", "vm"]);
    await page.getByTestId("joins-filter").selectOption("all");
    await page.getByTestId("joins-sort").selectOption("newest");
    await checkpoint(page, "pending");
  });

  it("approves node-2 with an edited assignment, and follows its install to joined", async () => {
    onFailure();
    const node2 = machines.get("node-2")!;
    await card("node-2").getByTestId("approve").click();
    const dialog = page.getByTestId("approve-dialog");
    await dialog.waitFor({ state: "visible" });
    expect(await focusedTestId()).toBe("approve-name");
    await expect
      .poll(() => dialog.getByTestId("approve-preview").textContent(), POLL)
      .toContain("Managementenp87s0, 192.0.2.22");
    expect(await dialog.getByTestId("approve-preview").textContent()).toContain("VM uplinkenp87s0, bridged, VLAN 100");
    expect(await dialog.getByTestId("approve-mgmtAddress").inputValue()).toBe("192.0.2.22");
    // The system disk is shown, not offered; the blank data disk becomes a Ceph OSD (no wipe to confirm).
    expect(await dialog.textContent()).toContain("nvme0n1, 512 GB: system disk");
    await dialog.getByTestId("approve-disk-nvme1n1-choice").selectOption("ceph-osd");
    expect(await dialog.getByTestId("approve-disk-nvme1n1-confirm").isHidden()).toBe(true);
    await dialog.getByTestId("approve-name").fill("rack2-node-2");
    await expect
      .poll(() => dialog.getByTestId("approve-preview").textContent(), POLL)
      .toContain("nvme1n1 becomes a Ceph OSD");
    expect(await dialog.getByTestId("approve-preview").textContent()).toContain("Namerack2-node-2");
    await checkpoint(page, "approve-dialog");

    await dialog.getByTestId("approve-confirm").click();
    await dialog.waitFor({ state: "hidden" });
    await expect.poll(() => stateOf("node-2"), POLL).toMatch(/approved|delivering/);
    // Focus on the card's heading (its Approve button is gone); the message names it unambiguously.
    expect(await page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("join-hostname");
    const success = (await card("node-2").getByTestId("card-feedback").textContent())!;
    expect(success).toContain(`Approved node-2 (${node2.session.joinId}, pairing code ${node2.session.pairingCode})`);
    expect(success).toMatch(/it becomes node n-/);
    const stored = server.cluster.getJoin(node2.session.joinId);
    expect(stored.assignment?.name).toBe("rack2-node-2");
    expect(stored.assignment?.disks).toEqual([
      expect.objectContaining({ key: "eui.0000000000000122", role: "ceph-osd" }),
    ]);

    // Delivering, in words.
    await waitForRegistration(node2.session, node2.identity, {
      until: "delivering",
      timeoutMs: 20_000,
      waitSeconds: 5,
    });
    await expect.poll(() => stateOf("node-2"), POLL).toBe("delivering");
    expect(await card("node-2").getByTestId("join-explain").textContent()).toMatch(
      /configuration is ready; waiting for the machine/,
    );

    // Installing: step N of M, the step list, the time elapsed.
    const at = new Date().toISOString();
    await reportProgress(node2.session, node2.identity, {
      steps: [
        { name: "storage", title: "Preparing disks", status: "done", at },
        { name: "join/patroni", title: "Joining the Postgres cluster", status: "done", at },
        { name: "join/raft-openbao", title: "Joining the OpenBao raft", status: "running", at },
      ],
      log: ["joining"],
    });
    await expect.poll(() => stateOf("node-2"), POLL).toBe("installing");
    await expect
      .poll(() => card("node-2").getByTestId("join-explain").textContent(), POLL)
      .toMatch(/^Installing, step 3 of 3: Joining the OpenBao raft, \d+\ss elapsed\.$/);
    expect(await card("node-2").getByTestId("join-steps").locator("li").allTextContents()).toEqual([
      "Preparing disks done",
      "Joining the Postgres cluster done",
      expect.stringMatching(/^Joining the OpenBao raft running, for \d+\ss$/),
    ]);
    await checkpoint(page, "installing");

    const done = await reportProgress(node2.session, node2.identity, {
      steps: [{ name: "join", title: "Joining the cluster", status: "done" }],
      log: ["joined"],
    });
    expect(done.state).toBe("joined");
    await expect.poll(() => stateOf("node-2"), POLL).toBe("joined");
    // Said politely, naming the machine.
    await expect
      .poll(() => page.getByTestId("joins-changes").textContent(), POLL)
      .toContain(
        `node-2 (${node2.session.joinId}, pairing code ${node2.session.pairingCode}) joined the cluster as node n-`,
      );
    expect(await page.getByTestId("joins-changes").getAttribute("aria-live")).toBe("polite");
    expect(await card("node-2").getByTestId("join-explain").textContent()).toMatch(/^Joined the cluster as node n-/);
    await checkpoint(page, "joined");
  });

  it("shows the founder's refusal on the fields it names, keeps the dialog open, and approves once fixed (390 px)", async () => {
    onFailure();
    await page.setViewportSize({ width: 390, height: 844 });
    const node3 = machines.get("node-3")!;
    await card("node-3").getByTestId("approve").click();
    const dialog = page.getByTestId("approve-dialog");
    await dialog.waitFor({ state: "visible" });
    await expect.poll(() => dialog.getByTestId("approve-preview").textContent(), POLL).toContain("enp87s0, 192.0.2.22");
    await dialog.getByTestId("approve-disk-nvme1n1-choice").selectOption("ceph-osd");
    // The disk holds data: its wipe confirmation appears, left empty for now.
    await dialog.getByTestId("approve-disk-nvme1n1-confirm").waitFor({ state: "visible" });
    await dialog.getByTestId("approve-confirm").click();

    const address = dialog.getByTestId("approve-mgmtAddress");
    await expect.poll(() => address.getAttribute("aria-invalid"), POLL).toBe("true");
    expect(await page.locator("#approve-mgmtAddress-error").textContent()).toContain("192.0.2.22 is already held");
    const confirm = dialog.getByTestId("approve-disk-nvme1n1-confirm");
    expect(await confirm.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator("#approve-disk-nvme1n1-confirm-error").textContent()).toContain("holds data");
    expect(await dialog.isVisible()).toBe(true);
    expect(await focusedTestId()).toBe("approve-mgmtAddress");
    const summary = (await dialog.getByTestId("approve-feedback").textContent())!;
    expect(summary).toContain("Could not approve node-3: the cluster refused this assignment. Fix the marked fields");
    expect(summary).toContain("Reference: code JOIN_APPROVAL_REFUSED");
    await checkpoint(page, "approve-refused", 390);

    // Fix: the management link on the other card (its address follows), and the typed key.
    await dialog.getByTestId("approve-mgmtInterface").selectOption("enp2s0f0");
    expect(await address.inputValue()).toBe("198.51.100.23");
    await confirm.fill("eui.0000000000000123");
    expect(await confirm.getAttribute("aria-invalid")).toBeNull();
    await dialog.getByTestId("approve-confirm").click();
    await dialog.waitFor({ state: "hidden" });
    await expect.poll(() => stateOf("node-3"), POLL).toMatch(/approved|delivering/);
    const stored = server.cluster.getJoin(node3.session.joinId);
    expect(stored.assignment?.mgmt).toMatchObject({ interface: "enp2s0f0", address: "198.51.100.23" });
    expect(stored.assignment?.disks).toEqual([
      expect.objectContaining({ role: "ceph-osd", confirm: "eui.0000000000000123" }),
    ]);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it("revokes a code after a confirmation", async () => {
    onFailure();
    const rows = page.getByTestId("code-row");
    const shortLived = rows.first(); // newest first: the 1-hour code, the one shown above
    expect(await shortLived.textContent()).toContain("(shown above)");
    const codeId = (await shortLived.getAttribute("data-code-id"))!;
    await shortLived.getByTestId("revoke").click();
    const confirmDialog = page.getByTestId("confirm-dialog");
    await confirmDialog.waitFor({ state: "visible" });
    expect(await focusedTestId()).toBe("confirm-cancel");
    expect(await confirmDialog.textContent()).toContain("already registered with it are kept");
    await confirmDialog.getByTestId("confirm-ok").click();
    await confirmDialog.waitFor({ state: "detached" });
    await expect.poll(() => rows.count(), POLL).toBe(1);
    expect(await page.getByTestId("codes-feedback").textContent()).toContain(`Revoked join code`);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("codes-title");
    // A revoked code is no use to anyone: it is no longer shown for copying.
    expect(await page.getByTestId("minted").isHidden()).toBe(true);
    expect(server.store.getCode(codeId)?.revokedBy).toBe("bootstrap-admin");
  });

  it("says when the server is lost, pauses the actions, and clears it all when the server is back", async () => {
    onFailure();
    const vmB = card("vm-b");
    // A reject whose request gets no answer: told on the card, in words.
    await page.route("**/reject", (route) => route.abort("connectionrefused"));
    await vmB.getByTestId("reject").click();
    await vmB.getByTestId("reject-reason").fill("Not a machine we ordered");
    await vmB.getByTestId("reject-confirm").click();
    const cardError = vmB.getByTestId("card-feedback");
    await expect.poll(() => cardError.textContent(), POLL).toMatch(/Could not reject vm .*did not answer/);
    expect(await cardError.textContent()).not.toMatch(/\/v1\/|\{joinId\}|NETWORK/);
    await page.unroute("**/reject");

    const adminPort = new URL(server.adminUrl).port;
    const joinPort = server.joinPort;
    await server.close();
    const notice = page.getByTestId("connection");
    await expect
      .poll(() => notice.textContent(), POLL)
      .toMatch(/^The server at http:\/\/127\.0\.0\.1:\d+ is not answering/);
    expect(await notice.getAttribute("role")).toBe("alert");
    await expect.poll(() => page.getByTestId("watch-state").textContent(), POLL).toBe("Not answering");
    expect(await card("vm-a").getByTestId("approve").isDisabled()).toBe(true);
    expect(await vmB.getByTestId("reject-confirm").isDisabled()).toBe(true);
    expect(await page.getByTestId("mint").isDisabled()).toBe(true);
    expect(await card("vm-a").getByTestId("join-stale").isVisible()).toBe(true);
    await checkpoint(page, "server-lost");

    server = await startServer(`127.0.0.1:${adminPort}`, `127.0.0.1:${joinPort}`);
    await expect.poll(() => notice.textContent(), { ...POLL, timeout: 30_000 }).toBe("");
    expect(await page.getByTestId("watch-state").textContent()).toBe("Live");
    expect(await card("vm-a").getByTestId("approve").isEnabled()).toBe(true);
    expect(await card("vm-a").getByTestId("join-stale").isHidden()).toBe(true);
    // The stale "did not answer" on the card went with the outage.
    expect(await cardError.textContent()).toBe("");

    // The reject goes through now, with the reason typed before.
    await vmB.getByTestId("reject-confirm").click();
    await expect.poll(() => stateOf("vm-b"), POLL).toBe("rejected");
    expect(await vmB.getByTestId("join-explain").textContent()).toBe("Rejected: Not a machine we ordered");
    expect(await focusedTestId()).toBe("join-hostname");
    const vmBMachine = machines.get("vm-b")!;
    await expect(
      waitForRegistration(vmBMachine.session, vmBMachine.identity, {
        until: "joined",
        timeoutMs: 10_000,
        waitSeconds: 1,
      }),
    ).rejects.toMatchObject({
      code: "REGISTRATION_ENDED",
      registration: { state: "rejected", reason: "Not a machine we ordered" },
    });
  });

  it("approves a machine with the keyboard alone; the dialog traps and restores focus", async () => {
    onFailure();
    const approve = card("vm-a").getByTestId("approve");
    const isFocused = (locator: Locator) => locator.evaluate((el) => el === document.activeElement);
    await page.getByTestId("joins-sort").focus();
    for (let i = 0; i < 60 && !(await isFocused(approve)); i++) await page.keyboard.press("Tab");
    expect(await isFocused(approve)).toBe(true);
    await page.keyboard.press("Enter");
    const dialog = page.getByTestId("approve-dialog");
    await dialog.waitFor({ state: "visible" });
    expect(await focusedTestId()).toBe("approve-name");
    // Shift+Tab from the first field wraps to the last control, inside the dialog.
    await page.keyboard.press("Shift+Tab");
    expect(await focusedTestId()).toBe("approve-cancel");
    await page.keyboard.press("Tab");
    expect(await focusedTestId()).toBe("approve-name");
    // Escape closes it and gives the focus back to the Approve button.
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    expect(await isFocused(approve)).toBe(true);

    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "visible" });
    await expect.poll(() => dialog.getByTestId("approve-preview").textContent(), POLL).toContain("ens3, 10.0.2.15");
    for (let i = 0; i < 20 && (await focusedTestId()) !== "approve-confirm"; i++) await page.keyboard.press("Tab");
    expect(await focusedTestId()).toBe("approve-confirm");
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "hidden" });
    await expect.poll(() => stateOf("vm-a"), POLL).toBe("approved");
    expect(await focusedTestId()).toBe("join-hostname");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("vm");
    // One join runs at a time: it waits, and says for what (once, not "Queued: queued").
    const waiting = (await card("vm-a").getByTestId("join-explain").textContent())!;
    expect(waiting).toMatch(/^Approved; \S/);
    expect(waiting).not.toMatch(/queued: queued/i);
  });

  it("signs out: the watch stops and nothing of the code stays on the page", async () => {
    onFailure();
    await page.getByTestId("sign-out").click();
    await page.getByTestId("sign-in-form").waitFor({ state: "visible" });
    expect(await focusedTestId()).toBe("token");
    const text = (await page.locator("body").textContent())!;
    expect(text).not.toContain(code);
    expect(await page.getByTestId("joins").locator("li").count()).toBe(0);
    // A poll already on the wire at sign-out is logged when it closes: count after it settled,
    // then over more than one poll interval.
    const listCalls = () => serverLog.filter((line) => line.includes(" GET /v1/admin/cluster/joins ")).length;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const polls = listCalls();
    expect(polls).toBeGreaterThan(3);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(listCalls()).toBe(polls);
    expect(pageErrors).toEqual([]);
  });
});
