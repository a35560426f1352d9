// The console example end to end, in Debian's headless Chromium (playwright-core) against a
// real reference server: the operations around approving. Revoke a join code after a
// confirmation; lose the server (stopped) and get it back (restarted on the same ports and data
// directory) with the outage told, the actions paused and every stale mark and message gone
// after; approve a machine with the keyboard alone through the dialog, which traps and restores
// focus; reject one with a reason the machine receives; sign out. The outage is looked at 1280
// and 390 px wide (test-results/console-server-lost-*.png, console-axe-operations.json).
//
// Without Debian's chromium (which `npm test` installs as root) it fails, saying how to install it.
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdminClient } from "../../src/index.js";
import { waitForRegistration } from "../../src/node/index.js";
import { checkpoint } from "./checkpoint.js";
import { ConsoleWorld, POLL } from "./harness.js";
import { inventory, vmInventory } from "./machines.js";
import { createMachineIdentity } from "../../src/node/identity.js";
import { startLogin } from "../../src/node/opaque.js";
import { sameSelectorOtherCode } from "../reference-server/helpers.js";
import { RawConnection } from "../reference-server/raw-ke1.js";

// Each step waits on polls, a joiner and Chromium; on a loaded machine that takes a while.
describe("the console example in Chromium: codes, outages and the keyboard", { timeout: 120_000 }, () => {
  const w = new ConsoleWorld("operations");
  let page: Page;
  const isFocused = (locator: Locator) => locator.evaluate((el) => el === document.activeElement);
  let code = "";

  beforeAll(async () => {
    await w.open();
    page = w.page;
    await w.signIn();
    await page.getByTestId("cluster-release").fill("0.6.0");
    const first = await w.mint(4);
    code = first.code;
    await w.mint(1); // a short-lived code, to revoke
    await w.register(first.url, "node-9", "node-9", "SN-29", inventory({ last: 29, mgmtAddress: "192.0.2.29" }));
    await w.register(first.url, "vm-a", "vm", "VM-A-0001", vmInventory("52:54:00:12:34:56", "10.0.2.15", "VMA"));
    await w.register(first.url, "vm-b", "vm", undefined, undefined);
    // node-9 is approved and never reports: the one join that runs, so the next one queues.
    const admin = createAdminClient({ baseUrl: w.server.adminUrl, token: w.server.adminToken });
    await admin.approveNodeJoin(w.machines.get("node-9")!.session.joinId);
    for (const key of ["node-9", "vm-a", "vm-b"]) await w.card(key).waitFor({ state: "visible", timeout: 20_000 });
  }, 120_000);
  afterAll(() => w.close());

  it("revokes a code after a confirmation", async () => {
    w.step();
    const rows = page.getByTestId("code-row");
    const shortLived = rows.first(); // newest first: the 1-hour code, the one shown above
    expect(await shortLived.textContent()).toContain("(shown above)");
    const codeId = (await shortLived.getAttribute("data-code-id"))!;
    await shortLived.getByTestId("revoke").click();
    const confirmDialog = page.getByTestId("confirm-dialog");
    await confirmDialog.waitFor({ state: "visible" });
    await expect.poll(() => w.focused(), POLL).toBe("confirm-cancel");
    expect(await confirmDialog.textContent()).toContain("already registered with it are kept");
    await confirmDialog.getByTestId("confirm-ok").click();
    await confirmDialog.waitFor({ state: "detached" });
    await expect.poll(() => rows.count(), POLL).toBe(1);
    expect(await page.getByTestId("codes-feedback").textContent()).toContain(`Revoked join code`);
    await expect.poll(() => page.evaluate(() => document.activeElement?.id), POLL).toBe("codes-title");
    // A revoked code is no use to anyone: it is no longer shown for copying.
    expect(await page.getByTestId("minted").isHidden()).toBe(true);
    expect(await page.getByTestId("mint-feedback").textContent()).toBe("");
    expect(w.server.store.getCode(codeId)?.revokedBy).toBe("bootstrap-admin");
  });

  it("says when the server is lost, pauses the actions, and clears it all when the server is back", async () => {
    w.step();
    const vmB = w.card("vm-b");
    // A reject whose request gets no answer: told on the card, in words.
    await page.route("**/reject", (route) => route.abort("connectionrefused"));
    await vmB.getByTestId("reject").click();
    await vmB.getByTestId("reject-reason").fill("Not a machine we ordered");
    await vmB.getByTestId("reject-confirm").click();
    const cardError = vmB.getByTestId("card-feedback");
    await expect.poll(() => cardError.textContent(), POLL).toMatch(/Could not reject vm .*did not answer/);
    expect(await cardError.textContent()).not.toMatch(/\/v1\/|\{joinId\}|NETWORK/);
    await page.unroute("**/reject");

    const restart = await w.stopServer();
    const notice = page.getByTestId("connection");
    await expect
      .poll(() => notice.textContent(), POLL)
      .toMatch(/^The server at http:\/\/127\.0\.0\.1:\d+ is not answering/);
    expect(await notice.getAttribute("role")).toBe("alert");
    await expect.poll(() => page.getByTestId("watch-state").textContent(), POLL).toBe("Not answering");
    expect(await w.card("vm-a").getByTestId("approve").isDisabled()).toBe(true);
    expect(await vmB.getByTestId("reject-confirm").isDisabled()).toBe(true);
    expect(await page.getByTestId("mint").isDisabled()).toBe(true);
    expect(await w.card("vm-a").getByTestId("join-stale").isVisible()).toBe(true);
    await checkpoint(page, "server-lost");

    await restart();
    // The page tries again after its backoff (at most 10 s) and a request's own deadline
    // (10 s), which a loaded machine can run out once before the server answers: up to twice that.
    await expect.poll(() => notice.textContent(), { ...POLL, timeout: 60_000 }).toBe("");
    expect(await page.getByTestId("watch-state").textContent()).toBe("Live");
    expect(await w.card("vm-a").getByTestId("approve").isEnabled()).toBe(true);
    expect(await w.card("vm-a").getByTestId("join-stale").isHidden()).toBe(true);
    // The stale "did not answer" on the card went with the outage.
    expect(await cardError.textContent()).toBe("");

    // The reject goes through now, with the reason typed before.
    await vmB.getByTestId("reject-confirm").click();
    await expect.poll(() => w.stateOf("vm-b"), POLL).toBe("rejected");
    expect(await vmB.getByTestId("join-explain").textContent()).toBe("Rejected: Not a machine we ordered");
    await expect.poll(() => w.focused(), POLL).toBe("join-hostname");
    const vmBMachine = w.machines.get("vm-b")!;
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
    w.step();
    const approve = w.card("vm-a").getByTestId("approve");
    await page.getByTestId("joins-sort").focus();
    for (let i = 0; i < 60 && !(await isFocused(approve)); i++) await page.keyboard.press("Tab");
    expect(await isFocused(approve)).toBe(true);
    await page.keyboard.press("Enter");
    const dialog = page.getByTestId("approve-dialog");
    await dialog.waitFor({ state: "visible" });
    await expect.poll(() => w.focused(), POLL).toBe("approve-name");
    // Shift+Tab from the first field wraps to the last control, inside the dialog.
    await page.keyboard.press("Shift+Tab");
    await expect.poll(() => w.focused(), POLL).toBe("approve-cancel");
    await page.keyboard.press("Tab");
    await expect.poll(() => w.focused(), POLL).toBe("approve-name");
    // Escape closes it and gives the focus back to the Approve button.
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    await expect.poll(() => isFocused(approve), POLL).toBe(true);

    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "visible" });
    await expect.poll(() => dialog.getByTestId("approve-preview").textContent(), POLL).toContain("ens3, 10.0.2.15");
    for (let i = 0; i < 20 && (await w.focused()) !== "approve-confirm"; i++) await page.keyboard.press("Tab");
    await expect.poll(() => w.focused(), POLL).toBe("approve-confirm");
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "hidden" });
    await expect.poll(() => w.stateOf("vm-a"), POLL).toBe("approved");
    await expect.poll(() => w.focused(), POLL).toBe("join-hostname");
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent), POLL).toBe("vm");
    // One join runs at a time: it waits, and says for what (once, not "Queued: queued").
    const waiting = (await w.card("vm-a").getByTestId("join-explain").textContent())!;
    expect(waiting).toMatch(/^Approved; \S/);
    expect(waiting).not.toMatch(/queued: queued/i);
  });

  it("fails a machine that stopped reporting, with a reason, from the keyboard; Retry queues it again", async () => {
    w.step();
    const node9 = w.card("node-9");
    const joinId = w.machines.get("node-9")!.session.joinId;
    // Approved before the others and never collected its configuration: it holds the queue.
    await expect.poll(() => w.stateOf("node-9"), POLL).toBe("delivering");
    expect(await w.stateOf("vm-a")).toBe("approved");
    expect(await node9.getByTestId("reject").isHidden()).toBe(true);
    expect(await node9.getByTestId("retry").isHidden()).toBe(true);
    expect(await w.card("vm-a").getByTestId("fail").isHidden()).toBe(true); // queued, not running

    const fail = node9.getByTestId("fail");
    const reason = node9.getByTestId("fail-reason");
    await fail.focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => w.focused(), POLL).toBe("fail-reason");
    expect(await fail.getAttribute("aria-expanded")).toBe("true");
    // Cancel closes the step and gives the focus back to Fail….
    await node9.getByTestId("fail-cancel").click();
    expect(await node9.getByTestId("fail-form").isHidden()).toBe(true);
    await expect.poll(() => isFocused(fail), POLL).toBe(true);

    // A reason is required: an empty one is refused at the field, and nothing is sent.
    await page.keyboard.press("Enter");
    await expect.poll(() => w.focused(), POLL).toBe("fail-reason");
    await page.keyboard.press("Enter");
    expect(await reason.getAttribute("aria-invalid")).toBe("true");
    expect(await node9.getByTestId("fail-reason-error").textContent()).toBe(
      "Give a reason: it is kept as the join's error.",
    );
    await checkpoint(page, "fail-reason");
    expect(w.server.cluster.getJoin(joinId).state).toBe("delivering");
    await page.keyboard.type("Powered off for a disk swap");
    expect(await reason.getAttribute("aria-invalid")).toBeNull();
    await page.keyboard.press("Enter");

    await expect.poll(() => w.stateOf("node-9"), POLL).toBe("failed");
    expect(await node9.getByTestId("join-explain").textContent()).toBe(
      "Failed by bootstrap-admin: Powered off for a disk swap. Retry queues it again with the same assignment; approve it again to change the assignment first.",
    );
    expect(await node9.getByTestId("card-feedback").textContent()).toContain(
      "Failed node-9 (" + joinId + ", pairing code ",
    );
    expect(await node9.getByTestId("card-feedback").textContent()).toContain("“Powered off for a disk swap”");
    await expect.poll(() => w.focused(), POLL).toBe("join-hostname");
    expect(await node9.getByTestId("fail").isHidden()).toBe(true);
    expect(w.server.cluster.getJoin(joinId)).toMatchObject({
      state: "failed",
      failedStep: "operator",
      failedError: "Powered off for a disk swap",
    });
    // The queue is free: vm-a, approved behind it, is delivered now.
    await expect.poll(() => w.stateOf("vm-a"), POLL).toBe("delivering");
    await checkpoint(page, "failed");

    // Retry: queued again with the assignment it had, its failure cleared.
    const assignment = w.server.cluster.getJoin(joinId).assignment;
    await node9.getByTestId("retry").click();
    await expect.poll(() => w.stateOf("node-9"), POLL).toMatch(/^(approved|delivering)$/);
    expect(await node9.getByTestId("card-feedback").textContent()).toContain("Queued node-9 (");
    expect(await node9.getByTestId("join-explain").textContent()).toMatch(/^(Approved; |Its configuration is ready)/);
    await expect.poll(() => w.focused(), POLL).toBe("join-hostname");
    expect(await node9.getByTestId("retry").isHidden()).toBe(true);
    const queued = w.server.cluster.getJoin(joinId);
    expect(queued.failedError).toBeUndefined();
    expect(queued.assignment).toEqual(assignment);
  });

  it("says in plain words when the cluster's disk is full, pauses the writes, and sends the mint again once it saves", async () => {
    w.step();
    // The founder's answer while its disk is full (storage-faults.ts), stubbed for the mint only.
    let full = true;
    let refusals = 0;
    await page.route("**/v1/admin/cluster/join-codes", async (route) => {
      if (route.request().method() !== "POST" || !full) return route.fallback();
      refusals++;
      await route.fulfill({
        status: 503,
        headers: {
          "content-type": "application/problem+json",
          "retry-after": "1",
          "access-control-allow-origin": "*",
          "access-control-expose-headers": "Retry-After, X-Request-Id",
        },
        body: JSON.stringify({
          type: "https://stratum.example/problems/storage-unavailable",
          title: "Storage unavailable",
          status: 503,
          code: "STORAGE_UNAVAILABLE",
          detail: "The founder cannot write its state (its disk is full); nothing was changed. Retry later.",
          requestId: "req-disk-full",
        }),
      });
    });
    const rows = page.getByTestId("code-row");
    const before = await rows.count();
    const notice = page.getByTestId("storage");
    const mint = page.getByTestId("mint");
    const failVmA = w.card("vm-a").getByTestId("fail");
    await mint.click();
    await expect
      .poll(() => notice.textContent(), POLL)
      .toContain("The cluster's disk is full: nothing can be saved until space is freed on the founder.");
    expect(await notice.getAttribute("role")).toBe("alert");
    expect(await notice.textContent()).not.toMatch(/STORAGE_UNAVAILABLE|503/);
    // The writes pause; reading does not: the list stays live.
    expect(await mint.isDisabled()).toBe(true);
    expect(await failVmA.isDisabled()).toBe(true);
    expect(await rows.first().getByTestId("revoke").isDisabled()).toBe(true);
    expect(await page.getByTestId("watch-state").textContent()).toBe("Live");
    // It tries again, Retry-After apart, by itself.
    await expect.poll(() => refusals, POLL).toBeGreaterThanOrEqual(2);
    await checkpoint(page, "disk-full");

    // Space is freed: the next try saves, the notice goes and the writes resume.
    full = false;
    await expect.poll(() => rows.count(), POLL).toBe(before + 1);
    await expect.poll(() => notice.textContent(), POLL).toBe("");
    expect(await page.getByTestId("mint-feedback").textContent()).toContain("Minted join code");
    expect(await mint.isEnabled()).toBe(true);
    expect(await failVmA.isEnabled()).toBe(true);

    // Stop retrying: the mint is given up, said in plain words at its form, and nothing is paused.
    full = true;
    await mint.click();
    const stop = notice.getByTestId("storage-stop");
    await stop.click();
    await expect
      .poll(() => page.getByTestId("mint-feedback").textContent(), POLL)
      .toContain(
        "Could not mint a join code: the cluster's disk is full, so nothing was saved. Free space on the founder, then try again.",
      );
    expect(await notice.textContent()).toBe("");
    expect(await mint.isEnabled()).toBe(true);
    await expect.poll(() => w.focused(), POLL).toBe("mint-title");
    expect(await rows.count()).toBe(before + 1);
    await page.unroute("**/v1/admin/cluster/join-codes");
  });

  it("shows each code's attempts with where they came from, and a burned code as burned", async () => {
    w.step();
    const admin = createAdminClient({ baseUrl: w.server.adminUrl, token: w.server.adminToken });
    // Three guesses at one code from one address, each ended unproven (its connection closed).
    const guessed = await admin.mintJoinCode();
    const identity = await createMachineIdentity();
    for (let i = 0; i < 3; i++) {
      const c = await RawConnection.open({
        host: "127.0.0.1",
        port: w.server.joinPort,
        identity,
        localAddress: "127.22.5.9",
      });
      await c.ke1s([guessed.joinCode.selector], (await startLogin(sameSelectorOtherCode(guessed.code))).ke1);
      c.close();
    }
    await expect
      .poll(async () => (await admin.listJoinCodes()).items.find((c) => c.id === guessed.joinCode.id)?.attempts, POLL)
      .toBe(3);
    // Another, burned by a sweep (written as the founder writes a burn).
    const burned = (await admin.mintJoinCode()).joinCode.id;
    const store = w.server.store;
    store.tx(() => {
      store.addAttemptSource(burned, "2001:db8:1:2::/64", 10, Date.now());
      store.setAttempts(burned, 10);
      store.revokeCode(burned, "system:too-many-attempts", Date.now());
    });
    // The list is read again after a mint made in the console (the two above were made behind it).
    await page.getByTestId("mint").click();
    const row = (id: string) => page.locator(`[data-testid="code-row"][data-code-id="${id}"]`);
    await expect
      .poll(() => row(guessed.joinCode.id).getByTestId("code-attempts").textContent(), POLL)
      .toBe("3 attempts that did not prove it, from 127.22.5.9 (3)");
    expect(await row(guessed.joinCode.id).getByTestId("revoke").count()).toBe(1);
    expect(await row(burned).getByTestId("code-burned").textContent()).toContain("Burned");
    expect(await row(burned).getByTestId("code-attempts").textContent()).toContain("from 2001:db8:1:2::/64 (10)");
    expect(await row(burned).getByTestId("revoke").count()).toBe(0);
  });

  it("signs out: the watch stops and nothing of the code stays on the page", async () => {
    w.step();
    await page.getByTestId("sign-out").click();
    await page.getByTestId("sign-in-form").waitFor({ state: "visible" });
    await expect.poll(() => w.focused(), POLL).toBe("token");
    const text = (await page.locator("body").textContent())!;
    expect(text).not.toContain(code);
    expect(await page.getByTestId("joins").locator("li").count()).toBe(0);
    // A poll already on the wire at sign-out is logged when it closes: count after it settled,
    // then over more than one poll interval.
    const listCalls = () => w.serverLog.filter((line) => line.includes(" GET /v1/admin/cluster/joins ")).length;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const polls = listCalls();
    expect(polls).toBeGreaterThan(3);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(listCalls()).toBe(polls);
    expect(w.pageErrors).toEqual([]);
  });
});
