/**
 * What the console's browser tests share: Debian's Chromium through playwright-core, the
 * machines that register (inventories shaped as collectInventory reports them), and the
 * checkpoint every main state of the page goes through at a desktop and a phone width: no
 * horizontal overflow, a full-page screenshot under test-results/, and axe-core with no
 * serious or critical violation.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { expect } from "vitest";
import type { Inventory, Nic } from "../../src/index.js";

export const CHROMIUM = "/usr/bin/chromium";
// No outside network here: without these Chromium keeps dialling Google services and floods
// the log with refused connections.
export const CHROMIUM_ARGS = [
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
export const POLL = { timeout: 20_000, interval: 100 };
/** Where screenshots and the axe-core record go. */
export const SHOTS = fileURLToPath(new URL("../../test-results/", import.meta.url));
/** The widths every checkpoint is looked at: a desktop, and a phone (390 px, an iPhone 12-15). */
export const WIDTHS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
] as const;

/** Runs on a machine with Chromium, and always in CI (where a missing Chromium fails the run). */
export const runnable = existsSync(CHROMIUM) || Boolean(process.env.CI);
if (!runnable) console.warn(`console e2e skipped: ${CHROMIUM} is missing (apt-get install chromium); CI runs it`);

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** One checkpoint's axe-core outcome at one width: every violation's rule, impact and node count. */
export interface AxeRecord {
  state: string;
  width: number;
  violations: { id: string; impact: string | null; nodes: number }[];
}

/** Every checkpoint of a run, written to test-results/console-axe.json at the end. */
export const axeLog: AxeRecord[] = [];

/** Writes the axe-core record of the run. */
export function saveAxeLog(): void {
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(join(SHOTS, "console-axe.json"), `${JSON.stringify(axeLog, null, 2)}\n`);
}

/**
 * Looks at the page in its current state at each width: no horizontal overflow, a screenshot
 * (`test-results/console-<state>-<width>.png`), axe-core with no serious or critical
 * violation. Leaves the page at `restoreWidth`.
 */
export async function checkpoint(page: Page, state: string, restoreWidth = 1280): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  for (const size of WIDTHS) {
    await page.setViewportSize(size);
    // Two frames: the resize's layout and anything a resize observer changed.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    const { scrollWidth, innerWidth, wide } = await page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      // What sticks out, for the failure message.
      wide: [...document.querySelectorAll<HTMLElement>("body *")]
        .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
        .slice(0, 5)
        .map((el) => `${el.tagName.toLowerCase()}.${el.className}[${el.dataset.testid ?? ""}]`),
    }));
    expect(scrollWidth, `${state} at ${size.width} px overflows: ${wide.join(", ")}`).toBeLessThanOrEqual(innerWidth);
    await screenshot(page, join(SHOTS, `console-${state}-${size.width}.png`), size);
    const violations = await axe(page);
    axeLog.push({
      state,
      width: size.width,
      violations: violations.map(({ id, impact, nodes }) => ({ id, impact, nodes: nodes.length })),
    });
    const grave = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    expect(
      grave.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join("; ")}`),
      `${state} at ${size.width} px`,
    ).toEqual([]);
  }
  const back = WIDTHS.find((w) => w.width === restoreWidth) ?? WIDTHS[0];
  await page.setViewportSize(back);
}

/**
 * A full-page screenshot; with a modal dialog open, the viewport made as tall as the dialog
 * instead (a full-page shot would show the dialog and its backdrop at the viewport's first
 * screen only), so the whole dialog is in the picture as on a tall screen.
 */
async function screenshot(page: Page, path: string, size: { width: number; height: number }): Promise<void> {
  const dialogHeight = await page.evaluate(() => document.querySelector("dialog[open]")?.scrollHeight);
  if (dialogHeight === undefined) {
    await page.screenshot({ path, fullPage: true });
    return;
  }
  await page.setViewportSize({ width: size.width, height: Math.max(size.height, dialogHeight + 60) });
  await page.screenshot({ path });
  await page.setViewportSize(size);
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** Runs axe-core (injected once per page load) on the whole document. */
async function axe(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    type Results = { violations: AxeViolation[]; passes: unknown[] };
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<Results> } }).axe;
    const result = await axe.run(document, { resultTypes: ["violations"] });
    // A run that checked nothing would pass anything: make sure the rules ran.
    if (result.passes.length < 10) throw new Error(`axe-core checked only ${result.passes.length} rules`);
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target })),
    }));
  });
}

/** What tells a machine apart, and how its disks and cards look. */
export interface MachineSpec {
  last: number;
  /** The address on its first card (the management default for a loopback registration). */
  mgmtAddress: string;
  /** An address on its second card, if any. */
  secondAddress?: string;
  /** The data disk holds a filesystem (so a role for it needs the typed wipe confirmation). */
  dataDiskHoldsData?: boolean;
}

/** A machine as collectInventory reports one: a system and a data disk, two cards, and the noise a real one reports (ifb0). */
export function inventory(spec: MachineSpec): Inventory {
  const { last } = spec;
  // collectInventory leaves loopback out; the kernel's traffic-shaping device it reports.
  const noise: Nic[] = [{ name: "ifb0", operState: "unknown", link: "unknown", mtu: 1500, addresses: [] }];
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
        holders: spec.dataDiskHoldsData ? [{ kind: "filesystem", device: "nvme1n1", detail: "ext4" }] : [],
      },
    ],
    nics: [
      ...noise,
      {
        name: "enp87s0",
        mac: `58:47:ca:70:11:${last}`,
        operState: "up",
        link: "up",
        speedMbps: 1000,
        mtu: 1500,
        addresses: [`${spec.mgmtAddress}/24`],
        wireless: false,
      },
      {
        name: "enp2s0f0",
        mac: `58:47:ca:70:12:${last}`,
        operState: "up",
        link: "up",
        speedMbps: 25000,
        mtu: 9000,
        addresses: spec.secondAddress ? [`${spec.secondAddress}/24`] : [],
        wireless: false,
      },
    ],
  };
}

/** A small VM: one virtio disk for the system, one blank, one card, and ifb0. */
export function vmInventory(mac: string, address: string, diskId: string): Inventory {
  return {
    cpu: { model: "QEMU Virtual CPU", cores: 4, threads: 4 },
    memoryBytes: 8 * 2 ** 30,
    disks: [
      {
        name: "vda",
        path: "/dev/vda",
        byId: [`/dev/disk/by-id/virtio-${diskId}-SYS`],
        sizeBytes: 40e9,
        mountpoints: ["/"],
      },
      {
        name: "vdb",
        path: "/dev/vdb",
        byId: [`/dev/disk/by-id/virtio-${diskId}-DATA`],
        sizeBytes: 100e9,
        mountpoints: [],
      },
    ],
    nics: [
      { name: "ifb0", operState: "unknown", link: "unknown", addresses: [] },
      { name: "ens3", mac, operState: "up", link: "up", addresses: [`${address}/24`] },
    ],
  };
}
