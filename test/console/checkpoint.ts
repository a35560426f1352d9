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
 * What a checkpoint needs of a page, whichever browser drives it: Playwright's Chromium or
 * Puppeteer's Firefox (WebDriver BiDi) (see driver.ts).
 */
export interface CheckpointView {
  /** Sets the viewport. */
  setViewport(size: { width: number; height: number }): Promise<void>;
  /** Runs `fn` in the page and returns its result. */
  evaluate<R>(fn: () => R | Promise<R>): Promise<R>;
  /** Saves a screenshot, of the whole page or of the viewport. */
  screenshot(path: string, fullPage: boolean): Promise<void>;
  /** Adds a script file to the page. */
  addScript(path: string): Promise<void>;
}

/** A Playwright page as a {@link CheckpointView}. */
export function playwrightView(page: Page): CheckpointView {
  return {
    setViewport: (size) => page.setViewportSize(size),
    evaluate: (fn) => page.evaluate(fn),
    screenshot: async (path, fullPage) => void (await page.screenshot({ path, fullPage })),
    addScript: async (path) => void (await page.addScriptTag({ path })),
  };
}

/**
 * Looks at the page in its current state at each width: no horizontal overflow, a screenshot
 * (`test-results/console-<state>-<width>.png`), axe-core with no serious or critical
 * violation. Leaves the page at `restoreWidth`.
 */
export async function checkpoint(page: Page | CheckpointView, state: string, restoreWidth = 1280): Promise<void> {
  const view = "setViewportSize" in page ? playwrightView(page) : page;
  mkdirSync(SHOTS, { recursive: true });
  for (const size of WIDTHS) {
    await view.setViewport(size);
    // Two frames: the resize's layout and anything a resize observer changed.
    await view.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    const { scrollWidth, innerWidth, wide } = await view.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      // What sticks out, for the failure message.
      wide: [...document.querySelectorAll<HTMLElement>("body *")]
        .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5 && !el.closest(".table-wrap"))
        .slice(0, 5)
        .map((el) => `${el.tagName.toLowerCase()}.${el.className}[${el.dataset.testid ?? ""}]`),
    }));
    expect(scrollWidth, `${state} at ${size.width} px overflows: ${wide.join(", ")}`).toBeLessThanOrEqual(innerWidth);
    await screenshot(view, join(SHOTS, `console-${state}-${size.width}.png`), size);
    const violations = await axe(view);
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
  await view.setViewport(back);
}

/**
 * A full-page screenshot; with a modal dialog open, the viewport made as tall as the dialog
 * instead (a full-page shot would show the dialog and its backdrop at the viewport's first
 * screen only), so the whole dialog is in the picture as on a tall screen.
 */
async function screenshot(view: CheckpointView, path: string, size: { width: number; height: number }): Promise<void> {
  const dialogHeight = await view.evaluate(() => document.querySelector("dialog[open]")?.scrollHeight);
  if (dialogHeight === undefined) {
    await view.screenshot(path, true);
    return;
  }
  await view.setViewport({ width: size.width, height: Math.max(size.height, dialogHeight + 60) });
  await view.screenshot(path, false);
  await view.setViewport(size);
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** Runs axe-core (injected once per page load) on the whole document. */
async function axe(view: CheckpointView): Promise<AxeViolation[]> {
  if (!(await view.evaluate(() => "axe" in window))) await view.addScript(AXE);
  return view.evaluate(async () => {
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
