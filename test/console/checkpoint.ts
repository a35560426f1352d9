/**
 * The checkpoint every main state of the console goes through, at a desktop and a phone
 * width: no horizontal overflow, a screenshot under test-results/, and axe-core (injected into
 * the page) with no serious or critical violation. Each run's axe-core record is written to
 * test-results/console-axe-<run>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { expect } from "vitest";

/** Where screenshots and the axe-core record go. */
export const SHOTS = fileURLToPath(new URL("../../test-results/", import.meta.url));
/** The widths every checkpoint is looked at: a desktop, and a phone (390 px, an iPhone 12-15). */
export const WIDTHS = [
  { width: 1280, height: 900 },
  { width: 390, height: 844 },
] as const;

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");

/** One checkpoint's axe-core outcome at one width: every violation's rule, impact and node count. */
export interface AxeRecord {
  state: string;
  width: number;
  violations: { id: string; impact: string | null; nodes: number }[];
}

/** Every checkpoint of this test file's run. */
export const axeLog: AxeRecord[] = [];

/** Writes the axe-core record of the run to test-results/console-axe-<run>.json. */
export function saveAxeLog(run: string): void {
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(join(SHOTS, `console-axe-${run}.json`), `${JSON.stringify(axeLog, null, 2)}\n`);
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
