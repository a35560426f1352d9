// The console example end to end, in Debian's headless Chromium (playwright-core) against a
// real reference server: sign in (a wrong token first), mint a code (text, URL, QR code), two
// machines register with the Node joiner, the page shows their pairing codes, one is approved
// and reaches `joined`, the other is rejected with a reason; screenshots are saved
// (test-results/console-pending.png, test-results/console-joined.png).
//
// Skipped, with a message, only on a developer machine without /usr/bin/chromium; in CI
// (`CI` set, as .ci/run does after installing chromium) it runs and fails without it.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { parseJoinCode, parsePairingCode, type Inventory } from "../../src/index.js";
import { createMachineIdentity, registerMachine, reportProgress, waitForRegistration } from "../../src/node/index.js";
import { startReferenceServer, type ReferenceServer } from "../../examples/reference-server/server.js";
import { buildConsole, serveStatic } from "./build-console.js";

const CHROMIUM = "/usr/bin/chromium";
// No outside network here: without these Chromium keeps dialling Google services and floods
// the log with refused connections.
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** Page updates come from polls (1.5 s apart) and a loaded CI machine is slow: wait generously. */
const POLL = { timeout: 15_000, interval: 100 };
const SHOTS = fileURLToPath(new URL("../../test-results/", import.meta.url));

const runnable = existsSync(CHROMIUM) || Boolean(process.env.CI);
if (!runnable) {
  console.warn(`console e2e skipped: ${CHROMIUM} is missing (apt-get install chromium); CI runs it`);
}

/** A small machine the way collectInventory reports one: a system disk, a blank data disk, two NICs. */
function inventory(last: number): Inventory {
  return {
    uefi: true,
    cpu: { model: "AMD EPYC 7313P", sockets: 1, cores: 16, threads: 32, virtualization: "svm" },
    memoryBytes: 128 * 2 ** 30,
    osDiskLayout: "compute-tail",
    disks: [
      {
        name: "nvme0n1",
        path: "/dev/nvme0n1",
        byId: [`/dev/disk/by-id/nvme-SYSTEM_${last}`],
        wwn: `eui.00000000000000${last}`,
        sizeBytes: 512_110_190_592,
        mountpoints: ["/", "/boot/efi"],
        holders: [{ kind: "partition-table", device: "nvme0n1", detail: "gpt" }],
      },
      {
        name: "nvme1n1",
        path: "/dev/nvme1n1",
        byId: [`/dev/disk/by-id/nvme-DATA_${last}`],
        wwn: `eui.00000000000001${last}`,
        sizeBytes: 3_840_755_982_336,
        mountpoints: [],
        holders: [],
      },
    ],
    nics: [
      {
        name: "enp87s0",
        mac: `58:47:ca:70:11:${last}`,
        operState: "up",
        link: "up",
        speedMbps: 1000,
        mtu: 1500,
        addresses: [`192.0.2.${last}/24`],
        wireless: false,
      },
      {
        name: "enp2s0f0",
        mac: `58:47:ca:70:12:${last}`,
        operState: "up",
        link: "up",
        speedMbps: 25000,
        mtu: 9000,
        addresses: [],
        wireless: false,
      },
    ],
  };
}

describe.runIf(runnable)("the console example in Chromium", () => {
  let dataDir: string;
  let outDir: string;
  let server: ReferenceServer;
  let site: Awaited<ReturnType<typeof serveStatic>>;
  let browser: Browser;
  let page: Page;
  const serverLog: string[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: .ci/run installs it with apt-get`).toBe(true);
    outDir = mkdtempSync(join(tmpdir(), "stratum-console-e2e-"));
    dataDir = mkdtempSync(join(tmpdir(), "stratum-console-ref-"));
    const [, started] = await Promise.all([
      buildConsole(outDir),
      startReferenceServer({
        dataDir,
        adminAddr: "127.0.0.1:0",
        joinAddr: "127.0.0.1:0",
        log: (line) => serverLog.push(line),
        timing: { tickMs: 50, listenerCloseGraceMs: 50 },
      }),
    ]);
    server = started;
    site = await serveStatic(outDir);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on("pageerror", (error) => pageErrors.push(error.message));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await site?.close();
    await server?.close();
    for (const dir of [outDir, dataDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("mints, shows each machine's pairing code, approves one to joined and rejects the other", async () => {
    // What the page and the server looked like when it went wrong, for a CI log.
    onTestFailed(async () => {
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, "console-failed.png"), fullPage: true }).catch(() => {});
      console.error(
        `console e2e failed; page errors: ${JSON.stringify(pageErrors)}; screenshot test-results/console-failed.png; server log tail:\n${serverLog.slice(-30).join("\n")}`,
      );
    });
    await page.goto(site.url);
    await page.getByTestId("api-url").fill(server.adminUrl);

    // A wrong token: refused at the form, with the API's code in the status area.
    await page.getByTestId("token").fill("not-a-token");
    await page.getByTestId("sign-in").click();
    await expect.poll(() => page.getByTestId("status").textContent(), POLL).toContain("UNAUTHORIZED");
    expect(await page.getByTestId("sign-in-form").isVisible()).toBe(true);

    await page.getByLabel("API token").fill(server.adminToken);
    await page.getByTestId("sign-in").click();
    await page.getByTestId("console").waitFor({ state: "visible" });
    expect(await page.getByTestId("sign-in-form").isHidden()).toBe(true);
    expect(await page.getByTestId("signed-in-as").textContent()).toBe(`Signed in to ${server.adminUrl}`);

    // A mint the API refuses: its code and the field it names, in the status area.
    await page.getByLabel("Endpoint (optional)").fill("not a host!");
    await page.getByTestId("mint").click();
    await expect.poll(() => page.getByTestId("status").textContent(), POLL).toContain("INVALID_INPUT");
    expect(await page.getByTestId("status-fields").textContent()).toMatch(/^endpoint: /);
    expect(await page.getByTestId("minted").isHidden()).toBe(true);
    await page.getByLabel("Endpoint (optional)").fill("");

    // Mint: the code, the URL and a QR code with dark and light modules.
    await page.getByTestId("mint").click();
    await page.getByTestId("minted").waitFor({ state: "visible" });
    const code = (await page.getByTestId("join-code").textContent())!;
    const url = (await page.getByTestId("join-url").textContent())!;
    expect(parseJoinCode(code).formatted).toBe(code);
    expect(url).toBe(`stratum-join://${server.joinEndpoint}/${code}`);
    const qr = await page.getByTestId("join-qr").evaluate((canvas: HTMLCanvasElement) => {
      const { data } = canvas.getContext("2d")!.getImageData(0, 0, canvas.width, canvas.height);
      let dark = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i]! < 128) dark++;
      return { width: canvas.width, height: canvas.height, darkShare: dark / (data.length / 4) };
    });
    expect(qr.width).toBeGreaterThanOrEqual(100);
    expect(qr.height).toBe(qr.width);
    expect(qr.darkShare).toBeGreaterThan(0.2);
    expect(qr.darkShare).toBeLessThan(0.8);

    // Two machines register with the joiner, from the URL the page shows.
    const machines = await Promise.all(
      (
        [
          ["node-2", 22],
          ["node-3", 23],
        ] as const
      ).map(async ([hostname, last]) => {
        const identity = await createMachineIdentity();
        const result = await registerMachine({
          url,
          identity,
          release: "0.6.0",
          hostname,
          systemSerial: `SN-${last}`,
          inventory: inventory(last),
        });
        expect(result.created).toBe(true);
        return { hostname, identity, ...result };
      }),
    );
    const [approved, rejected] = machines as [(typeof machines)[0], (typeof machines)[0]];

    const card = (joinId: string) => page.locator(`[data-testid="join"][data-join-id="${joinId}"]`);
    for (const machine of machines) {
      const row = card(machine.session.joinId);
      await row.waitFor({ state: "visible", timeout: 15_000 });
      // The code the page shows is the one the machine computed itself.
      const shown = (await row.getByTestId("pairing-code").textContent())!;
      expect(parsePairingCode(shown)).toBe(parsePairingCode(machine.session.pairingCode));
      expect(await row.getByTestId("join-hostname").textContent()).toBe(machine.hostname);
      expect(await row.getByTestId("join-state").textContent()).toBe("pending");
      const hardware = (await row.getByTestId("join-hardware").textContent())!;
      expect(hardware).toContain("AMD EPYC 7313P, 16 cores, 32 threads");
      expect(hardware).toContain("128 GiB");
      expect(hardware).toContain("nvme1n1 3.8 TB");
      expect(hardware).toContain("enp2s0f0 (up, 25 Gb/s)");
      expect(hardware).toContain("0.6.0");
    }
    expect(await page.getByTestId("joins-empty").isHidden()).toBe(true);
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, "console-pending.png"), fullPage: true });

    // Approve one with the default assignment; the joiner is delivered and reports the join done.
    await card(approved.session.joinId).getByTestId("approve").click();
    await expect.poll(() => page.getByTestId("status").textContent(), POLL).toMatch(/Approved node-2 as n-/);
    await waitForRegistration(approved.session, approved.identity, {
      until: "delivering",
      timeoutMs: 20_000,
      waitSeconds: 5,
    });
    const done = await reportProgress(approved.session, approved.identity, {
      steps: [{ name: "join", title: "Joining the cluster", status: "done" }],
      log: ["joined"],
    });
    expect(done.state).toBe("joined");
    await expect.poll(() => card(approved.session.joinId).getByTestId("join-state").textContent(), POLL).toBe("joined");
    expect(await card(approved.session.joinId).getByTestId("approve").isHidden()).toBe(true);

    // Reject the other, with a reason typed into the card's own form.
    const other = card(rejected.session.joinId);
    await other.getByTestId("reject").click();
    await other.getByLabel("Reason for rejecting").fill("Not a machine we ordered");
    await other.getByTestId("reject-confirm").click();
    await expect.poll(() => other.getByTestId("join-state").textContent(), POLL).toBe("rejected");
    expect(await other.getByTestId("join-explain").textContent()).toBe("Rejected: Not a machine we ordered");
    expect(await other.getByTestId("reject-form").isHidden()).toBe(true);
    await expect(
      waitForRegistration(rejected.session, rejected.identity, { until: "joined", timeoutMs: 10_000, waitSeconds: 1 }),
    ).rejects.toMatchObject({
      code: "REGISTRATION_ENDED",
    });

    await page.screenshot({ path: join(SHOTS, "console-joined.png"), fullPage: true });

    // Sign out: the watch stops and nothing of the code stays on the page.
    await page.getByTestId("sign-out").click();
    await page.getByTestId("sign-in-form").waitFor({ state: "visible" });
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
  }, 120_000);
});
