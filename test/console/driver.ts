/**
 * One page API over two browsers, so a walk is written once and run in both: Debian's
 * Chromium through Playwright (CDP) and Debian's Firefox ESR through Puppeteer over WebDriver
 * BiDi. Only what the walks use: navigation, clicks, typing, keys, `evaluate`, the viewport,
 * screenshots, a script tag, and the page's errors. Neither library downloads a browser.
 */
import { chromium as playwrightChromium } from "playwright-core";
import puppeteer from "puppeteer-core";
import type { CheckpointView } from "./checkpoint.js";

export const CHROMIUM = "/usr/bin/chromium";
export const FIREFOX = "/usr/bin/firefox-esr";

/** The browsers a walk runs in. */
export type BrowserName = "chromium" | "firefox";

/** Where each browser is; a walk in a missing one is skipped on a developer's machine, never in CI. */
export const BROWSERS: Record<BrowserName, string> = { chromium: CHROMIUM, firefox: FIREFOX };

/** No outside network here: without these Chromium keeps dialling Google services and floods the log. */
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

/** A page in one of the browsers. */
export interface BrowserPage extends CheckpointView {
  readonly name: BrowserName;
  /** Uncaught errors and `console.error` lines of the page. */
  readonly errors: string[];
  goto(url: string): Promise<void>;
  /** Clicks the first element matching a CSS selector. */
  click(selector: string): Promise<void>;
  /** Types `value` into the field matching a CSS selector, replacing what it held. */
  fill(selector: string, value: string): Promise<void>;
  /** Presses a key (`n`, `Enter`, `Tab`) on what has the focus. */
  press(key: string): Promise<void>;
  /** Runs `fn(arg)` in the page. */
  evaluateWith<A, R>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
  close(): Promise<void>;
}

/** Launches `name` headless with one page of `size`. */
export async function openBrowser(name: BrowserName, size: { width: number; height: number }): Promise<BrowserPage> {
  return name === "chromium" ? openChromium(size) : openFirefox(size);
}

/** Whether a console line is one the browser logs by itself for a refused request (not the page's). */
const networkNoise = (text: string): boolean => text.startsWith("Failed to load resource");

async function openChromium(size: { width: number; height: number }): Promise<BrowserPage> {
  const browser = await playwrightChromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: size });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (m) => {
    if (m.type() === "error" && !networkNoise(m.text())) errors.push(`console: ${m.text()}`);
  });
  return {
    name: "chromium",
    errors,
    goto: async (url) => void (await page.goto(url)),
    click: (selector) => page.locator(selector).first().click(),
    fill: (selector, value) => page.locator(selector).first().fill(value),
    press: (key) => page.keyboard.press(key),
    evaluate: (fn) => page.evaluate(fn),
    evaluateWith: (fn, arg) => page.evaluate(fn as never, arg) as never,
    setViewport: (s) => page.setViewportSize(s),
    screenshot: async (path, fullPage) => void (await page.screenshot({ path, fullPage })),
    addScript: async (path) => void (await page.addScriptTag({ path })),
    close: () => browser.close(),
  };
}

async function openFirefox(size: { width: number; height: number }): Promise<BrowserPage> {
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    headless: true,
    protocol: "webDriverBiDi",
    // No outside network here: Firefox's own updates, telemetry and suggestions stay off.
    extraPrefsFirefox: {
      "app.update.enabled": false,
      "browser.safebrowsing.malware.enabled": false,
      "browser.safebrowsing.phishing.enabled": false,
      "datareporting.policy.dataSubmissionEnabled": false,
      "network.captive-portal-service.enabled": false,
      "network.connectivity-service.enabled": false,
    },
  });
  const page = await browser.newPage();
  await page.setViewport(size);
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error instanceof Error ? error.message : String(error)));
  page.on("console", (m) => {
    if (m.type() === "error" && !networkNoise(m.text())) errors.push(`console: ${m.text()}`);
  });
  return {
    name: "firefox",
    errors,
    goto: async (url) => void (await page.goto(url)),
    click: (selector) => page.locator(selector).click(),
    fill: async (selector, value) => {
      if (value !== "") return page.locator(selector).fill(value);
      // Puppeteer's fill types nothing for an empty value: the field is cleared as a person
      // would (select all, delete), so the page hears its input event.
      await page.locator(selector).click({ count: 3 });
      await page.keyboard.press("Backspace");
    },
    press: (key) => page.keyboard.press(key as Parameters<typeof page.keyboard.press>[0]),
    evaluate: (fn) => page.evaluate(fn) as never,
    evaluateWith: (fn, arg) => page.evaluate(fn as (a: unknown) => unknown, arg) as never,
    setViewport: (s) => page.setViewport(s),
    screenshot: async (path, fullPage) => void (await page.screenshot({ path, fullPage })),
    addScript: async (path) => void (await page.addScriptTag({ path })),
    close: () => browser.close(),
  };
}
