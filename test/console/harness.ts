/**
 * What the console's browser tests share: the built page served on loopback, a reference
 * server (port 0, a temp data directory, restartable on the same ports and data), Debian's
 * Chromium through playwright-core, the steps an operator takes every time (sign in, mint),
 * machines registering with the Node joiner, and a guard that makes the steps after a failed
 * one fail at once instead of timing out one by one.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { expect, onTestFailed } from "vitest";
import type { Inventory } from "../../src/index.js";
import {
  createMachineIdentity,
  registerMachine,
  type JoinSession,
  type MachineIdentity,
} from "../../src/node/index.js";
import { startReferenceServer, type ReferenceServer } from "../../examples/reference-server/server.js";
import { buildConsole, serveStatic } from "./build-console.js";
import { expectInstalled } from "../machine/tools.js";
import { CHROMIUM_ARGS } from "./driver.js";
import { saveAxeLog, SHOTS, WIDTHS } from "./checkpoint.js";

export { CHROMIUM } from "./driver.js";
/** Page updates come from polls (1.5 s apart) and a loaded CI machine is slow: wait generously. */
export const POLL = { timeout: 20_000, interval: 100 };

/** A machine that registered. */
export interface Machine {
  hostname: string;
  identity: MachineIdentity;
  session: JoinSession;
}

/** The page, the server and the machines of one test file. */
export class ConsoleWorld {
  server!: ReferenceServer;
  page!: Page;
  readonly serverLog: string[] = [];
  readonly pageErrors: string[] = [];
  readonly machines = new Map<string, Machine>();
  private browser: Browser | undefined;
  private site: Awaited<ReturnType<typeof serveStatic>> | undefined;
  private readonly outDir = mkdtempSync(join(tmpdir(), "stratum-console-e2e-"));
  private readonly dataDir = mkdtempSync(join(tmpdir(), "stratum-console-ref-"));
  private failed: string | undefined;

  constructor(private readonly run: string) {}

  /** Builds the page, starts the server and Chromium, and opens the page (1280 px wide). */
  async open(): Promise<void> {
    const executablePath = expectInstalled("chromium")!;
    [, this.server] = await Promise.all([buildConsole(this.outDir), this.startServer()]);
    this.site = await serveStatic(this.outDir);
    this.browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    const context = await this.browser.newContext({ viewport: WIDTHS[0] });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(this.site.url).origin });
    this.page = await context.newPage();
    this.page.on("pageerror", (error) => this.pageErrors.push(error.message));
    this.page.on("console", (message) => {
      // The refusals the tests provoke (401, 400, 409, no answer) are logged by the browser itself.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource"))
        this.pageErrors.push(`console: ${message.text()}`);
    });
    await this.page.goto(this.site.url);
  }

  async close(): Promise<void> {
    saveAxeLog(this.run);
    await this.browser?.close();
    await this.site?.close();
    await this.server?.close();
    for (const dir of [this.outDir, this.dataDir]) rmSync(dir, { recursive: true, force: true });
  }

  /** Stops the server, and returns a start of a new one on the same ports and data directory. */
  async stopServer(): Promise<() => Promise<void>> {
    const adminAddr = `127.0.0.1:${new URL(this.server.adminUrl).port}`;
    const joinAddr = `127.0.0.1:${this.server.joinPort}`;
    await this.server.close();
    return async () => {
      this.server = await this.startServer(adminAddr, joinAddr);
    };
  }

  /**
   * Starts a test step: fails at once when an earlier step failed (the steps build on each
   * other), and on this step's failure saves a screenshot and prints the page's errors and the
   * server's last log lines.
   */
  step(): void {
    expect(this.failed, `an earlier step failed: ${this.failed}`).toBeUndefined();
    onTestFailed(async ({ task }) => {
      this.failed ??= task.name;
      mkdirSync(SHOTS, { recursive: true });
      const shot = `console-${this.run}-failed.png`;
      await this.page.screenshot({ path: join(SHOTS, shot), fullPage: true }).catch(() => {});
      console.error(
        `console e2e failed; page errors: ${JSON.stringify(this.pageErrors)}; screenshot test-results/${shot}; server log tail:\n${this.serverLog.slice(-20).join("\n")}`,
      );
    });
  }

  /** Signs in with the server's admin token. */
  async signIn(): Promise<void> {
    await this.page.getByTestId("api-url").fill(this.server.adminUrl);
    await this.page.getByLabel("API token").fill(this.server.adminToken);
    await this.page.getByTestId("sign-in").click();
    await this.page.getByTestId("console").waitFor({ state: "visible" });
  }

  /** Mints a code from the page; returns the code and URL it shows. */
  async mint(hours = 4): Promise<{ code: string; url: string }> {
    const page = this.page;
    const before = await page.getByTestId("code-row").count();
    await page.getByTestId("ttl-hours").fill(String(hours));
    await page.getByTestId("mint").click();
    // Not expect.poll: this also runs in a beforeAll, outside any test.
    await page.waitForFunction(
      (count) => document.querySelectorAll('[data-testid="code-row"]').length === count,
      before + 1,
      { timeout: POLL.timeout },
    );
    return {
      code: (await page.getByTestId("join-code").textContent())!,
      url: (await page.getByTestId("join-url").textContent())!,
    };
  }

  /** A machine registers with the Node joiner, from `url`, on the cluster's release. */
  async register(
    url: string,
    key: string,
    hostname: string,
    serial: string | undefined,
    inventory: Inventory | undefined,
  ) {
    const identity = await createMachineIdentity();
    const result = await registerMachine({
      url,
      identity,
      release: "0.6.0",
      hostname,
      ...(serial ? { systemSerial: serial } : {}),
      ...(inventory ? { inventory } : {}),
    });
    expect(result.created).toBe(true);
    this.machines.set(key, { hostname, identity, session: result.session });
  }

  /** The card of a registered machine. */
  card(key: string): Locator {
    return this.page.locator(`[data-testid="join"][data-join-id="${this.machines.get(key)!.session.joinId}"]`);
  }

  /** A card's join state (`data-state`, the API's word). */
  stateOf(key: string): Promise<string | null> {
    return this.card(key).getAttribute("data-state");
  }

  /** The focused element's test id, or its id. */
  focused(): Promise<string> {
    return this.page.evaluate(
      () => document.activeElement?.getAttribute("data-testid") ?? document.activeElement?.id ?? "",
    );
  }

  private startServer(adminAddr = "127.0.0.1:0", joinAddr = "127.0.0.1:0"): Promise<ReferenceServer> {
    return startReferenceServer({
      dataDir: this.dataDir,
      adminAddr,
      joinAddr,
      log: (line) => this.serverLog.push(line),
      timing: { tickMs: 50, listenerCloseGraceMs: 50 },
    });
  }
}
