// The console example end to end, in Debian's headless Chromium (playwright-core) against a
// real reference server, as an operator approves machines: sign in (a wrong token first), mint
// a code (a refused endpoint first), four machines register with the Node joiner (two "vm"
// twins, one without inventory) and their cards tell them apart; approve one with an edited
// assignment and follow its install to `joined`; approve another whose default the founder
// refuses, fix the marked fields and approve again. Every main state is looked at 1280 and
// 390 px wide: no horizontal overflow, a screenshot, and axe-core with no serious or critical
// violation (test-results/console-*.png, test-results/console-axe-approvals.json).
// console-operations.e2e.test.ts walks codes, outages and the keyboard.
//
// Without Debian's chromium (which `npm test` installs as root) it fails, saying how to install it.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseJoinCode, parsePairingCode, type Assignment } from "../../src/index.js";
import { reportProgress, waitForRegistration } from "../../src/node/index.js";
import { checkpoint } from "./checkpoint.js";
import { ConsoleWorld, POLL } from "./harness.js";
import { inventory, vmInventory } from "./machines.js";

// Each step waits on polls, a joiner and Chromium; on a loaded machine that takes a while.
describe("the console example in Chromium: approving machines", { timeout: 120_000 }, () => {
  const w = new ConsoleWorld("approvals");
  let page: Page;
  let code = "";
  let url = "";

  /** The bodies the page sent to approval-preview, the founder's answers, and the requests the page aborted. */
  const previewRequests: { assignment?: Record<string, unknown> }[] = [];
  const previewAnswers: Assignment[] = [];
  const abortedPreviews: string[] = [];
  /** The HTTP status of every preview answer: a refusal comes with 200, so the browser logs no failed request. */
  const previewStatuses: number[] = [];
  /** The join list requests the page made: whether each was a long poll (waitSeconds and If-None-Match). */
  const listRequests: { longPoll: boolean }[] = [];

  beforeAll(async () => {
    await w.open();
    page = w.page;
    const isPreview = (url: string) => url.endsWith("/approval-preview");
    page.on("request", (request) => {
      if (isPreview(request.url()) && request.method() === "POST") previewRequests.push(request.postDataJSON());
      const url = new URL(request.url());
      if (url.pathname === "/v1/admin/cluster/joins" && request.method() === "GET")
        listRequests.push({
          longPoll: url.searchParams.has("waitSeconds") && request.headers()["if-none-match"] !== undefined,
        });
    });
    page.on("requestfailed", (request) => {
      if (isPreview(request.url())) abortedPreviews.push(request.failure()?.errorText ?? "");
    });
    page.on("response", (response) => {
      if (isPreview(response.url())) previewStatuses.push(response.status());
      if (isPreview(response.url()) && response.status() === 200)
        void response.json().then((body: { assignment?: Assignment }) => {
          if (body.assignment) previewAnswers.push(body.assignment);
        });
    });
  }, 120_000);
  afterAll(() => w.close());

  it("signs in: a wrong token is told at the token field, which gets the focus", async () => {
    w.step();
    await page.getByTestId("api-url").fill(w.server.adminUrl);
    await checkpoint(page, "signed-out");
    await page.getByLabel("API token").fill("not-a-token");
    await page.getByTestId("sign-in").click();
    await expect.poll(() => page.locator("#token-error").textContent(), POLL).toMatch(/API token was not accepted/);
    expect(await page.getByTestId("token").getAttribute("aria-invalid")).toBe("true");
    await expect.poll(() => w.focused(), POLL).toBe("token");

    await page.getByLabel("API token").fill(w.server.adminToken);
    expect(await page.getByTestId("token").getAttribute("aria-invalid")).toBeNull(); // edited: no longer marked
    await page.getByTestId("sign-in").click();
    await page.getByTestId("console").waitFor({ state: "visible" });
    expect(await page.getByTestId("signed-in-as").textContent()).toBe(`Signed in to ${w.server.adminUrl}`);
    await expect.poll(() => page.evaluate(() => document.activeElement?.id), POLL).toBe("mint-title");
  });

  it("mints: a refused endpoint is marked at its field; the code comes with copy buttons, a command and a countdown", async () => {
    w.step();
    await page.getByTestId("endpoint").fill("not a host!");
    await page.getByTestId("mint").click();
    await expect.poll(() => page.locator("#endpoint-error").textContent(), POLL).not.toBe("");
    expect(await page.getByTestId("endpoint").getAttribute("aria-invalid")).toBe("true");
    await expect.poll(() => w.focused(), POLL).toBe("endpoint");
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
    expect(url).toBe(`stratum-join://${w.server.joinEndpoint}/${code}`);
    // Each group of the code is kept whole; the page wraps only between groups.
    expect(await page.getByTestId("join-code").locator(".group").allTextContents()).toEqual(code.split("-"));
    const command = (await page.getByTestId("join-command").textContent())!;
    expect(command).toBe(`stratum-join register --url '${url}' --identity /var/lib/stratum-join --release '0.6.0'`);
    await page.getByTestId("copy-command").click();
    // The copy is asynchronous (the Clipboard API): wait for the button to say it is done.
    await expect.poll(() => page.getByTestId("copy-command").textContent(), POLL).toBe("Copied");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(command);
    await page.getByTestId("copy-code").click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText()), POLL).toBe(code);
    // Local time with its zone, and a countdown.
    expect(await page.getByTestId("join-expires").textContent()).toMatch(
      /\d.*[A-Z+][A-Z0-9:+-]* \(in\s(4\sh|3\sh 59\smin)\)$/,
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
    expect(await page.getByTestId("code-countdown").textContent()).toMatch(/^in\s(4\sh|3\sh 59\smin)$/);
  });

  it("lists four machines so that twins are told apart, with age, expiry, serial, key, MACs and no noise", async () => {
    w.step();
    await w.register(url, "node-2", "node-2", "SN-22", inventory({ last: 22, mgmtAddress: "192.0.2.22" }));
    // A clone of node-2's network: its default management address is the one node-2 will hold.
    await w.register(
      url,
      "node-3",
      "node-3",
      "SN-23",
      inventory({ last: 23, mgmtAddress: "192.0.2.22", secondAddress: "198.51.100.23", dataDiskHoldsData: true }),
    );
    await w.register(url, "vm-a", "vm", "VM-A-0001", vmInventory("52:54:00:12:34:56", "10.0.2.15", "VMA"));
    await w.register(url, "vm-b", "vm", undefined, undefined);
    // vm-b reports what a machine booted with a dead RTC battery reports (test/cli/clock-skew
    // runs such a joiner under libfaketime): its clock a year ahead of the founder's, no NTP.
    const vmB = w.machines.get("vm-b")!.session.joinId;
    const store = w.server.cluster.store;
    store.tx(() =>
      store.patchJoin(vmB, { inventory: { clock: { offsetSeconds: -31_536_000, ntpSynchronized: false } } }),
    );

    for (const [key, machine] of w.machines) {
      const row = w.card(key);
      await row.waitFor({ state: "visible", timeout: 20_000 });
      // The code the page shows is the one the machine computed itself.
      expect(parsePairingCode((await row.getByTestId("pairing-code").textContent())!)).toBe(
        parsePairingCode(machine.session.pairingCode),
      );
      expect(await row.getByTestId("join-hostname").textContent()).toBe(machine.hostname);
      expect(await w.stateOf(key)).toBe("pending");
      expect(await row.getByTestId("join-state").textContent()).toBe("Waiting for approval");
      const who = (await row.getByTestId("join-who").textContent())!;
      expect(who).toContain(machine.session.joinId);
      expect(who).toMatch(/key\s[0-9A-F]{2}(:[0-9A-F]{2}){3}…/);
      expect(await row.getByTestId("join-times").textContent()).toMatch(/^Registered (just now|\d+\ss ago)/);
      expect(await row.getByTestId("join-explain").textContent()).toMatch(/Unless approved, it expires in\s\d+\s(d|h)/);
    }
    const twinA = (await w.card("vm-a").getByTestId("join-who").textContent())!;
    const twinB = (await w.card("vm-b").getByTestId("join-who").textContent())!;
    expect(twinA).toMatch(/serial\sVM-A-0001/);
    expect(twinA).toContain("MAC 52:54:00:12:34:56");
    expect(twinA).not.toBe(twinB);
    const hardware = (await w.card("node-2").getByTestId("join-hardware").textContent())!;
    expect(hardware).toContain("AMD EPYC 7313P, 16 cores, 32 threads");
    expect(hardware).toContain("128 GiB");
    expect(hardware).toContain("nvme1n1, 3.8 TB, blank");
    expect(hardware).toContain("enp2s0f0: 58:47:ca:70:12:22, link up, 25 Gb/s");
    expect(hardware).not.toMatch(/ifb0|\blo\b/);
    // Only the machine whose clock is off says so, in words.
    await expect
      .poll(() => w.card("vm-b").getByTestId("join-clock").textContent(), POLL)
      .toBe("Its clock is 1 year ahead of the founder's (not synchronised by NTP): fix it.");
    expect(await w.card("vm-b").getByTestId("join-clock").isVisible()).toBe(true);
    for (const key of ["node-2", "node-3", "vm-a"])
      expect(await w.card(key).getByTestId("join-clock").isVisible(), key).toBe(false);
    const bare = (await w.card("vm-b").getByTestId("join-hardware").textContent())!;
    expect(bare).toBe("Hardwarenot reported by the machine");
    expect(bare).not.toContain("Memory");
    await expect
      .poll(() => page.getByTestId("joins-counts").textContent(), POLL)
      .toBe("4 machines: 4 waiting for approval");
    await expect
      .poll(() => page.getByTestId("code-row").first().textContent(), POLL)
      .toContain("4 machines registered");

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

  it("watches the list with the founder's long poll, so a machine shows up at once rather than at the next poll", () => {
    // Signing in and the watch's first answer fetch the list plainly; from then on every request
    // waits on the founder for a change (a plain poll every POLL_MS would show it late).
    const first = listRequests.findIndex((r) => r.longPoll);
    expect(first).toBeGreaterThan(0);
    expect(listRequests.slice(first).every((r) => r.longPoll)).toBe(true);
  });

  it("approves node-2 with an edited assignment as the founder previewed it, and follows its install to joined", async () => {
    w.step();
    const node2 = w.machines.get("node-2")!;
    await w.card("node-2").getByTestId("approve").click();
    const dialog = page.getByTestId("approve-dialog");
    await dialog.waitFor({ state: "visible" });
    await expect.poll(() => w.focused(), POLL).toBe("approve-name");
    // What the dialog shows is the founder's own preview: its defaults fill the fields left to it.
    await expect
      .poll(() => dialog.getByTestId("approve-preview").textContent(), POLL)
      .toContain("Managementenp87s0, 192.0.2.22");
    expect(await dialog.getByTestId("approve-preview").textContent()).toContain("VM uplinkenp87s0, bridged, VLAN 100");
    expect(await dialog.getByTestId("approve-mgmtAddress").inputValue()).toBe("192.0.2.22");
    expect(await dialog.getByTestId("approve-name").inputValue()).toBe("node-2");
    // The system disk is shown, not offered; the blank data disk becomes a Ceph OSD (no wipe to confirm).
    expect(await dialog.textContent()).toContain("nvme0n1, 512 GB: system disk");
    await dialog.getByTestId("approve-disk-nvme1n1-choice").selectOption("ceph-osd");
    expect(await dialog.getByTestId("approve-disk-nvme1n1-confirm").isHidden()).toBe(true);

    // An edit while the founder's answer to the last one is still out: that request is aborted,
    // approving waits for the answer to the edit, and only that answer is shown.
    await page.route("**/approval-preview", async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await route.continue().catch(() => {}); // aborted by the page meanwhile
    });
    await dialog.getByTestId("approve-name").fill("node-2-draft");
    await expect.poll(() => previewRequests.at(-1)?.assignment?.name, POLL).toBe("node-2-draft");
    const asked = previewRequests.length;
    expect(await dialog.getByTestId("approve-confirm").isDisabled()).toBe(true);
    expect(await dialog.getByTestId("approve-preview-pending").isVisible()).toBe(true);
    await dialog.getByTestId("approve-name").fill("rack2-node-2");
    await expect.poll(() => abortedPreviews.length, POLL).toBeGreaterThan(0);
    await page.unroute("**/approval-preview");
    await expect.poll(() => dialog.getByTestId("approve-preview").textContent(), POLL).toContain("Namerack2-node-2"); // the answer to the last edit, not an earlier one
    expect(await dialog.getByTestId("approve-preview").textContent()).toContain("nvme1n1 becomes a Ceph OSD");
    expect(previewRequests.length).toBe(asked + 1);
    expect(previewRequests.at(-1)).toMatchObject({ assignment: { name: "rack2-node-2" } });
    // Fields left to the founder are not sent: it fills them itself.
    expect(previewRequests.at(-1)!.assignment).not.toHaveProperty("mgmt");
    expect(await dialog.getByTestId("approve-confirm").isEnabled()).toBe(true);
    await expect.poll(() => previewAnswers.at(-1)?.name, POLL).toBe("rack2-node-2");
    const previewed = previewAnswers.at(-1)!;
    expect(previewed).toMatchObject({ name: "rack2-node-2", mgmt: { interface: "enp87s0", address: "192.0.2.22" } });
    await checkpoint(page, "approve-dialog");

    await dialog.getByTestId("approve-confirm").click();
    await dialog.waitFor({ state: "hidden" });
    await expect.poll(() => w.stateOf("node-2"), POLL).toMatch(/approved|delivering/);
    // Focus on the card's heading (its Approve button is gone); the message names it unambiguously.
    await expect.poll(() => w.focused(), POLL).toBe("join-hostname");
    const success = (await w.card("node-2").getByTestId("card-feedback").textContent())!;
    expect(success).toContain(`Approved node-2 (${node2.session.joinId}, pairing code ${node2.session.pairingCode})`);
    // What the founder assigned, as it answered: the edited name, the node id, the address.
    expect(success).toMatch(/it becomes rack2-node-2, node n-[0-9a-z]+; 192\.0\.2\.22 on enp87s0\./);
    // The founder applied exactly what it previewed.
    const stored = w.server.cluster.getJoin(node2.session.joinId);
    expect(stored.assignment).toEqual(previewed);
    expect(stored.assignment?.disks).toEqual([
      expect.objectContaining({ key: "eui.0000000000000122", role: "ceph-osd" }),
    ]);

    // Delivering, in words.
    await waitForRegistration(node2.session, node2.identity, {
      until: "delivering",
      timeoutMs: 20_000,
      waitSeconds: 5,
    });
    await expect.poll(() => w.stateOf("node-2"), POLL).toBe("delivering");
    expect(await w.card("node-2").getByTestId("join-explain").textContent()).toMatch(
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
    await expect.poll(() => w.stateOf("node-2"), POLL).toBe("installing");
    await expect
      .poll(() => w.card("node-2").getByTestId("join-explain").textContent(), POLL)
      .toMatch(/^Installing, step 3 of 3: Joining the OpenBao raft, \d+\ss elapsed\.$/);
    expect(await w.card("node-2").getByTestId("join-steps").locator("li").allTextContents()).toEqual([
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
    await expect.poll(() => w.stateOf("node-2"), POLL).toBe("joined");
    // Said politely, naming the machine.
    await expect
      .poll(() => page.getByTestId("joins-changes").textContent(), POLL)
      .toContain(
        `node-2 (${node2.session.joinId}, pairing code ${node2.session.pairingCode}) joined the cluster as node n-`,
      );
    expect(await page.getByTestId("joins-changes").getAttribute("aria-live")).toBe("polite");
    expect(await w.card("node-2").getByTestId("join-explain").textContent()).toMatch(/^Joined the cluster as node n-/);
    // "Approved …; the card follows its install" is over: the outcome replaced it.
    expect(await w.card("node-2").getByTestId("card-feedback").textContent()).toBe("");
    await checkpoint(page, "joined");
  });

  it("shows the founder's refusals from its preview on the fields they name before approving, and approves once fixed (390 px)", async () => {
    w.step();
    await page.setViewportSize({ width: 390, height: 844 });
    const node3 = w.machines.get("node-3")!;
    await w.card("node-3").getByTestId("approve").click();
    const dialog = page.getByTestId("approve-dialog");
    await dialog.waitFor({ state: "visible" });
    const address = dialog.getByTestId("approve-mgmtAddress");
    const addressError = page.locator("#approve-mgmtAddress-error");
    const status = dialog.getByTestId("approve-preview-status");
    // node-3 is a clone of node-2's network: its first card holds node-2's address. The
    // founder's default skips an address another node holds: the other card's, at once.
    await expect
      .poll(() => dialog.getByTestId("approve-preview").textContent(), POLL)
      .toContain("Managementenp2s0f0, 198.51.100.23");
    expect(await address.inputValue()).toBe("198.51.100.23");
    expect(await address.getAttribute("aria-invalid")).toBeNull();
    // The first card chosen by hand: the preview refuses it on the address field before
    // anything is approved, naming the member that holds the address.
    await dialog.getByTestId("approve-mgmtInterface").selectOption("enp87s0");
    await expect.poll(() => address.getAttribute("aria-invalid"), POLL).toBe("true");
    expect(await addressError.textContent()).toMatch(/192\.0\.2\.22 is already held by member rack2-node-2 \(n-/);
    expect(await status.textContent()).toContain("The cluster would refuse these choices");
    expect(await dialog.getByTestId("approve-preview").textContent()).toBe("");
    expect(await dialog.getByTestId("approve-feedback").textContent()).toBe("");
    expect(await w.focused()).toBe("approve-name"); // a preview never moves the focus

    // Back on the other card: the founder picks that card's address again.
    await dialog.getByTestId("approve-mgmtInterface").selectOption("enp2s0f0");
    await expect.poll(() => address.inputValue(), POLL).toBe("198.51.100.23");
    await expect.poll(() => address.getAttribute("aria-invalid"), POLL).toBeNull();
    await expect
      .poll(() => dialog.getByTestId("approve-preview").textContent(), POLL)
      .toContain("Managementenp2s0f0, 198.51.100.23");
    // The disk holds data: its wipe confirmation appears, and the founder wants it typed.
    await dialog.getByTestId("approve-disk-nvme1n1-choice").selectOption("ceph-osd");
    const confirm = dialog.getByTestId("approve-disk-nvme1n1-confirm");
    await confirm.waitFor({ state: "visible" });
    await expect.poll(() => confirm.getAttribute("aria-invalid"), POLL).toBe("true");
    expect(await page.locator("#approve-disk-nvme1n1-confirm-error").textContent()).toContain("holds data");

    // An edit that collides: an address another machine holds, told on the field before approving.
    await address.fill("192.0.2.22");
    await expect.poll(() => addressError.textContent(), POLL).toContain("192.0.2.22 is already held");
    expect(await address.getAttribute("aria-invalid")).toBe("true");
    expect(await confirm.getAttribute("aria-invalid")).toBe("true");
    await checkpoint(page, "approve-refused", 390);

    // Approving anyway gets the same refusal from the approval, and the focus goes to the first field.
    await dialog.getByTestId("approve-confirm").click();
    await expect.poll(() => dialog.getByTestId("approve-feedback").textContent(), POLL).toContain("Could not approve");
    const summary = (await dialog.getByTestId("approve-feedback").textContent())!;
    expect(summary).toContain("Could not approve node-3: the cluster refused this assignment. Fix the marked fields");
    expect(summary).toContain("Reference: code JOIN_APPROVAL_REFUSED");
    expect(await dialog.isVisible()).toBe(true);
    await expect.poll(() => w.focused(), POLL).toBe("approve-mgmtAddress");
    expect(await addressError.textContent()).toContain("192.0.2.22 is already held");

    // Fix: the address emptied (the card's own again, the founder's choice), and the typed key.
    await address.fill("");
    await confirm.fill("eui.0000000000000123");
    await expect
      .poll(() => dialog.getByTestId("approve-preview").textContent(), POLL)
      .toContain("nvme1n1 becomes a Ceph OSD (wiped)");
    expect(await dialog.getByTestId("approve-preview").textContent()).toContain("Managementenp2s0f0, 198.51.100.23");
    expect(await confirm.getAttribute("aria-invalid")).toBeNull();
    expect(await address.getAttribute("aria-invalid")).toBeNull();
    expect(await status.textContent()).toBe("");
    await expect.poll(() => previewAnswers.at(-1)?.disks?.[0]?.confirm, POLL).toBe("eui.0000000000000123");
    const previewed = previewAnswers.at(-1)!;
    await dialog.getByTestId("approve-confirm").click();
    await dialog.waitFor({ state: "hidden" });
    await expect.poll(() => w.stateOf("node-3"), POLL).toMatch(/approved|delivering/);
    const stored = w.server.cluster.getJoin(node3.session.joinId);
    expect(stored.assignment).toEqual(previewed);
    expect(stored.assignment?.mgmt).toMatchObject({ interface: "enp2s0f0", address: "198.51.100.23" });
    expect(stored.assignment?.disks).toEqual([
      expect.objectContaining({ role: "ceph-osd", confirm: "eui.0000000000000123" }),
    ]);
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(w.pageErrors).toEqual([]);
    // The refused previews were answers, not failed requests ("Failed to load resource" in the
    // browser's log, which Lighthouse counts against best practices).
    expect(previewStatuses.length).toBeGreaterThan(3);
    expect(previewStatuses.filter((status) => status !== 200)).toEqual([]);
  });
});
