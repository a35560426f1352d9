// An operator admitting a batch, in Chromium (Playwright) and in Firefox ESR (Puppeteer over
// WebDriver BiDi), each against its own reference server with sixteen machines waiting, twins
// among them: the capacity said before anything is refused, a seventeenth machine turned away
// and counted, a machine found by its pairing code and approved from the keyboard, twins
// approved with the founder's distinct defaults, a silent join holding the queue failed from
// the notice that names it, the capacity reached and the machines it cannot take expired at
// once, and what was approved shown on the cards. The main states are looked at 1280 and
// 390 px wide: no horizontal overflow, axe-core with no serious violation, a screenshot
// (test-results/console-batch-<browser>-<state>-<width>.png).
//
// One founder and one browser per walk, shared by its steps; the page is built once.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { startReferenceServer, type ReferenceServer } from "../../examples/reference-server/server.js";
import type { Inventory } from "../../src/index.js";
import {
  createMachineIdentity,
  registerMachine,
  reportProgress,
  type JoinSession,
  type MachineIdentity,
} from "../../src/node/index.js";
import { buildConsole, serveStatic } from "./build-console.js";
import { checkpoint, saveAxeLog, SHOTS, WIDTHS } from "./checkpoint.js";
import { expectInstalled } from "../machine/tools.js";
import { openBrowser, type BrowserName, type BrowserPage } from "./driver.js";
import { inventory, vmInventory } from "./machines.js";

const POLL = { timeout: 20_000, interval: 100 };

/** The page, built once for both walks. */
let site: Awaited<ReturnType<typeof serveStatic>> | undefined;
const outDir = mkdtempSync(join(tmpdir(), "stratum-console-batch-"));
beforeAll(async () => {
  await buildConsole(outDir);
  site = await serveStatic(outDir);
}, 120_000);
afterAll(async () => {
  await site?.close();
  rmSync(outDir, { recursive: true, force: true });
});

interface Machine {
  key: string;
  hostname: string;
  identity: MachineIdentity;
  session: JoinSession;
}

/**
 * The batch: six identical VMs called `vm` (their own MACs and addresses), two clones whose first
 * card holds the same address (their second cards differ), and eight more nodes: sixteen.
 */
function batch(): { key: string; hostname: string; serial?: string; inventory: Inventory }[] {
  const vms = Array.from({ length: 6 }, (_, i) => ({
    key: `vm-${i + 1}`,
    hostname: "vm",
    serial: `VM-${1000 + i}`,
    inventory: vmInventory(`52:54:00:00:10:${String(10 + i)}`, `10.0.2.${20 + i}`, `VM${i}`),
  }));
  const clones = [31, 32].map((last) => ({
    key: `clone-${last}`,
    hostname: "clone",
    serial: `SN-${last}`,
    inventory: inventory({ last, mgmtAddress: "192.0.2.50", secondAddress: `198.51.100.${last}` }),
  }));
  const nodes = Array.from({ length: 8 }, (_, i) => ({
    key: `node-${i + 1}`,
    hostname: `rack1-node-${i + 1}`,
    serial: `SN-${40 + i}`,
    inventory: inventory({ last: 40 + i, mgmtAddress: `192.0.2.${60 + i}` }),
  }));
  return [...vms, ...clones, ...nodes];
}

/** A walk in one browser: its founder, its page, its machines, and a guard that fails the steps after a failed one. */
class Walk {
  server!: ReferenceServer;
  page!: BrowserPage;
  readonly machines = new Map<string, Machine>();
  url = "";
  private failed: string | undefined;
  private readonly dataDir = mkdtempSync(join(tmpdir(), "stratum-console-batch-ref-"));

  constructor(readonly browser: BrowserName) {}

  async open(): Promise<void> {
    expectInstalled(this.browser === "chromium" ? "chromium" : "firefox-esr");
    [this.server, this.page] = await Promise.all([
      startReferenceServer({
        dataDir: this.dataDir,
        adminAddr: "127.0.0.1:0",
        joinAddr: "127.0.0.1:0",
        log: () => undefined,
        // A join silent for 1.5 s is flagged, so the stuck one shows without a ten-minute wait.
        timing: { tickMs: 50, listenerCloseGraceMs: 50, stallAfterMs: 1500 },
      }),
      openBrowser(this.browser, WIDTHS[0]),
    ]);
    await this.page.goto(site!.url);
  }

  async close(): Promise<void> {
    saveAxeLog(`batch-${this.browser}`);
    await this.page?.close();
    await this.server?.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  step(): void {
    expect(this.failed, `an earlier step failed: ${this.failed}`).toBeUndefined();
    onTestFailed(async ({ task }) => {
      this.failed ??= task.name;
      await this.page.screenshot(join(SHOTS, `console-batch-${this.browser}-failed.png`), true).catch(() => undefined);
      console.error(`batch walk in ${this.browser} failed; page errors: ${JSON.stringify(this.page.errors)}`);
    });
  }

  /** The text of the first element matching `selector` ("" when none). */
  text(selector: string): Promise<string> {
    return this.page.evaluateWith((s) => document.querySelector(s)?.textContent ?? "", selector);
  }

  /** How many elements matching `selector` are shown (not inside anything hidden). */
  shown(selector: string): Promise<number> {
    return this.page.evaluateWith(
      (s) => [...document.querySelectorAll<HTMLElement>(s)].filter((el) => el.getClientRects().length > 0).length,
      selector,
    );
  }

  /** A machine's card. */
  card(key: string): string {
    return `[data-testid="join"][data-join-id="${this.machines.get(key)!.session.joinId}"]`;
  }

  state(key: string): Promise<string> {
    return this.page.evaluateWith((s) => document.querySelector(s)?.getAttribute("data-state") ?? "", this.card(key));
  }

  /** The focused element's test id. */
  focused(): Promise<string> {
    return this.page.evaluate(() => document.activeElement?.getAttribute("data-testid") ?? "");
  }

  async register(key: string, hostname: string, serial: string | undefined, inv: Inventory): Promise<Machine> {
    const identity = await createMachineIdentity();
    const result = await registerMachine({
      url: this.url,
      identity,
      release: "0.6.0",
      hostname,
      ...(serial ? { systemSerial: serial } : {}),
      inventory: inv,
    });
    const machine = { key, hostname, identity, session: result.session };
    this.machines.set(key, machine);
    return machine;
  }

  /** Approves the machine `key` from its card's dialog with the founder's defaults; returns the name it previewed. */
  async approveWithDefaults(key: string): Promise<string> {
    const dialog = '[data-testid="approve-dialog"]';
    await expect.poll(() => this.shown(dialog), POLL).toBe(1);
    await expect.poll(() => this.text(`${dialog} [data-testid="approve-preview"]`), POLL).toContain("Management");
    const name = await this.page.evaluate(
      () => document.querySelector<HTMLInputElement>('[data-testid="approve-name"]')!.value,
    );
    // Only the roles the founder takes are offered (its capacity.roles): no role to be refused.
    const roles = await this.page.evaluate(() =>
      [...document.querySelectorAll<HTMLOptionElement>('[data-testid="approve-role"] option')].map((o) => o.value),
    );
    expect(roles).toEqual(this.server.cluster.joinList().capacity.roles);
    expect(roles).toEqual(["hybrid"]);
    await expect
      .poll(
        () =>
          this.page.evaluate(
            () => document.querySelector<HTMLButtonElement>('[data-testid="approve-confirm"]')!.disabled,
          ),
        POLL,
      )
      .toBe(false);
    await this.page.click('[data-testid="approve-confirm"]');
    await expect.poll(() => this.shown(dialog), POLL).toBe(0);
    await expect.poll(() => this.state(key), POLL).toMatch(/approved|delivering/);
    return name;
  }

  /** The machine installs and joins (its progress reports). */
  async install(key: string): Promise<void> {
    const m = this.machines.get(key)!;
    await expect.poll(() => this.server.cluster.getJoin(m.session.joinId).state, POLL).toBe("delivering");
    await reportProgress(m.session, m.identity, {
      totalSteps: 2,
      steps: [{ name: "storage", title: "Preparing disks", status: "running", at: new Date().toISOString() }],
      log: [`${key}: preparing disks`],
    });
    await reportProgress(m.session, m.identity, {
      steps: [
        { name: "storage", title: "Preparing disks", status: "done" },
        { name: "join", title: "Joining the cluster", status: "done" },
      ],
      log: [`${key}: joined`],
    });
    await expect.poll(() => this.state(key), POLL).toBe("joined");
  }
}

for (const browser of ["chromium", "firefox"] as const) {
  describe(`a batch of sixteen machines in ${browser}`, { timeout: 120_000 }, () => {
    const w = new Walk(browser);
    beforeAll(() => w.open(), 120_000);
    afterAll(() => w.close());

    it("signs in, sixteen register, and the capacity is said before anything is refused", async () => {
      w.step();
      await w.page.fill('[data-testid="api-url"]', w.server.adminUrl);
      await w.page.fill('[data-testid="token"]', w.server.adminToken);
      await w.page.click('[data-testid="sign-in"]');
      await expect.poll(() => w.shown('[data-testid="console"]'), POLL).toBe(1);
      w.url = (await w.server.cluster.mintCode("test", {}, w.server.joinEndpoint)).url;
      const specs = batch();
      // Four at a time: a batch starting together, within what one code takes at once.
      for (let i = 0; i < specs.length; i += 4)
        await Promise.all(specs.slice(i, i + 4).map((s) => w.register(s.key, s.hostname, s.serial, s.inventory)));
      await expect
        .poll(() => w.text('[data-testid="joins-counts"]'), POLL)
        .toBe("16 machines: 16 waiting for approval");
      await expect
        .poll(() => w.text('[data-testid="capacity-text"]'), POLL)
        .toBe("Control plane: 1 member, at most 5: 4 more machines can be approved. Waiting: 16 of 16 slots taken.");
    });

    it("turns a seventeenth machine away, and the console counts it", async () => {
      w.step();
      const identity = await createMachineIdentity();
      await expect(
        registerMachine({ url: w.url, identity, release: "0.6.0", hostname: "late", timeoutMs: 60_000 }),
      ).rejects.toMatchObject({ code: "RATE_LIMITED", details: { waiting: 16, maxWaiting: 16 } });
      await expect
        .poll(() => w.text('[data-testid="capacity-refused"]'), POLL)
        .toMatch(/^1 registration was turned away because all 16 waiting slots were taken \(the last /);
      await checkpoint(w.page, `batch-${browser}-waiting`);
    });

    it("shows the batch as a compact table, and finds a machine by its pairing code", async () => {
      w.step();
      await w.page.click('[data-testid="view-table"]');
      await expect.poll(() => w.shown('[data-testid="join-row"]'), POLL).toBe(16);
      await checkpoint(w.page, `batch-${browser}-table`);
      await w.page.click('[data-testid="view-cards"]');
      // The person at vm-3 reads its code out; typed without the dash, in lower case.
      const code = w.machines.get("vm-3")!.session.pairingCode;
      await w.page.fill('[data-testid="joins-search"]', code.replace("-", "").toLowerCase());
      await expect.poll(() => w.shown('[data-testid="join"]'), POLL).toBe(1);
      expect(await w.text(`${w.card("vm-3")} [data-testid="pairing-code"]`)).toBe(code);
      expect(await w.text('[data-testid="joins-counts"]')).toMatch(/; 1 shown$/);
    });

    it("approves the machine found from the keyboard (n, then a), with the founder's defaults", async () => {
      w.step();
      // Out of the search field, `n` goes to the next waiting machine shown and `a` approves it.
      await w.page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      await w.page.press("n");
      await expect.poll(() => w.focused(), POLL).toBe("join-hostname");
      await w.page.press("a");
      expect(await w.approveWithDefaults("vm-3")).toBe("vm");
      await w.install("vm-3");
      await w.page.fill('[data-testid="joins-search"]', "");
      await expect.poll(() => w.shown('[data-testid="join"]'), POLL).toBe(16);
      // What was assigned is on the card: the name, the node id and the address.
      await expect
        .poll(() => w.text(`${w.card("vm-3")} [data-testid="join-assigned"]`), POLL)
        .toMatch(/^Becomes vm, node n-[0-9a-z]+; 10\.0\.2\.22 on ens3$/);
    });

    it("twins get distinct defaults: a second vm is vm-2, a clone's address skips the one its twin holds", async () => {
      w.step();
      await w.page.click(`${w.card("vm-1")} [data-testid="approve"]`);
      expect(await w.approveWithDefaults("vm-1")).toBe("vm-2");
      await w.install("vm-1");
      await w.page.click(`${w.card("clone-31")} [data-testid="approve"]`);
      expect(await w.approveWithDefaults("clone-31")).toBe("clone");
      const first = w.server.cluster.getJoin(w.machines.get("clone-31")!.session.joinId).assignment!.mgmt!;
      expect(first).toEqual({ interface: "enp87s0", address: "192.0.2.50" });
      // The first clone is delivering (its stuck install comes next): the second waits behind it.
      await w.page.click(`${w.card("clone-32")} [data-testid="approve"]`);
      expect(await w.approveWithDefaults("clone-32")).toBe("clone-2");
      const second = w.server.cluster.getJoin(w.machines.get("clone-32")!.session.joinId).assignment!.mgmt!;
      expect(second).toEqual({ interface: "enp2s0f0", address: "198.51.100.32" });
    });

    it("a silent join holding the queue is said first, by its host name, and failed from there", async () => {
      w.step();
      // clone-31 never reports: flagged silent, it holds clone-32 behind it.
      await expect.poll(() => w.text('[data-testid="blocker-text"]'), POLL).toContain("clone (");
      const stuck = w.machines.get("clone-31")!.session;
      expect(await w.text('[data-testid="blocker-text"]')).toContain(
        `clone (${stuck.joinId}, pairing code ${stuck.pairingCode}) is silent: delivering`,
      );
      expect(await w.text('[data-testid="blocker-text"]')).toContain("1 approved machine waits behind it");
      await expect
        .poll(() => w.text(`${w.card("clone-32")} [data-testid="join-explain"]`), POLL)
        .toContain(`waiting for clone (${stuck.joinId}, delivering) to finish`);
      await checkpoint(w.page, `batch-${browser}-stuck`);
      await w.page.click('[data-testid="blocker-fail"]');
      await expect.poll(() => w.focused(), POLL).toBe("fail-reason");
      await w.page.fill(`${w.card("clone-31")} [data-testid="fail-reason"]`, "powered off during the install");
      await w.page.click(`${w.card("clone-31")} [data-testid="fail-confirm"]`);
      await expect.poll(() => w.state("clone-31"), POLL).toBe("failed");
      await expect.poll(() => w.shown('[data-testid="blocker"]'), POLL).toBe(0);
      // The failed join's clock stopped with it: its step does not count on.
      await w.install("clone-32");
    });

    it("the capacity reached: the waiting machines are told why, expired at once, and the seventeenth gets in", async () => {
      w.step();
      await w.page.click(`${w.card("node-1")} [data-testid="approve"]`);
      await w.approveWithDefaults("node-1");
      await w.install("node-1");
      await expect
        .poll(() => w.text('[data-testid="capacity-text"]'), POLL)
        .toMatch(/^Control plane: 5 members, at most 5: none more can be approved\./);
      await expect
        .poll(() => w.text('[data-testid="capacity-full"]'), POLL)
        .toContain("The cluster is full: the 11 waiting machines cannot be approved");
      await expect
        .poll(() => w.text(`${w.card("node-2")} [data-testid="join-explain"]`), POLL)
        .toMatch(/^It cannot be approved now: it is waiting for a free place: the cluster is full/);
      await checkpoint(w.page, `batch-${browser}-full`);
      await w.page.click('[data-testid="capacity-expire"]');
      await expect.poll(() => w.shown('[data-testid="confirm-dialog"]'), POLL).toBe(1);
      await w.page.click('[data-testid="confirm-ok"]');
      await expect.poll(() => w.shown('[data-testid="confirm-dialog"]'), POLL).toBe(0);
      await expect.poll(() => w.text('[data-testid="capacity-text"]'), POLL).toMatch(/Waiting: 0 of 16 slots taken\.$/);
      expect(await w.state("node-2")).toBe("expired");
      // The machine turned away registers again: there is room to wait, not to join.
      const late = await w.register("late", "late", undefined, vmInventory("52:54:00:00:20:01", "10.0.2.90", "LATE"));
      await expect.poll(() => w.state("late"), POLL).toBe("pending");
      expect(late.session.joinId).toMatch(/^nj-/);
      // Every approved machine's card says what it became.
      for (const key of ["vm-3", "vm-1", "clone-32", "node-1"])
        expect(await w.text(`${w.card(key)} [data-testid="join-assigned"]`), key).toMatch(/^Becomes \S+, node n-/);
      expect(w.page.errors).toEqual([]);
    });
  });
}
