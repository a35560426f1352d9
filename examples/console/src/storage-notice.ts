/**
 * The notice while the founder's disk is full: what it means in plain words, that the writes
 * are paused and what was asked is sent again by itself, the countdown to the next try, and a
 * way to stop trying. Hidden otherwise.
 * @module
 */

import { diskFullText, type DiskFull } from "./disk-full.js";
import { byTestId, h } from "./dom.js";

/** The page's full-disk notice (`data-testid="storage"` in index.html, an alert region from the start). */
export class StorageNotice {
  private readonly element = byTestId<HTMLDivElement>("storage");
  private state: DiskFull | undefined;

  /**
   * `stop` gives up on the writes waiting for space; `fallback` is where the focus goes after
   * when no stopped action took it (the Stop button it was on is gone).
   */
  constructor(
    private readonly stop: () => void,
    private readonly fallback: () => HTMLElement | null,
  ) {}

  /** Shows the disk full, or hides the notice (`undefined`). */
  show(state: DiskFull | undefined, now: number): void {
    const was = this.state;
    this.state = state;
    if (!state) {
      this.element.replaceChildren();
      return;
    }
    if (was) {
      this.tick(now);
      return;
    }
    const stop = h("button", { type: "button", "data-testid": "storage-stop" }, "Stop retrying");
    stop.addEventListener("click", () => {
      this.stop();
      // The stopped writes settle first (each may focus its own form); then the focus is checked.
      window.setTimeout(() => {
        if (!document.activeElement || document.activeElement === document.body) this.fallback()?.focus();
      }, 0);
    });
    this.element.replaceChildren(
      h("p", { "data-testid": "storage-text" }, h("strong", {}, diskFullText(state, now))),
      h(
        "p",
        {},
        "Approving, rejecting, failing, retrying, minting and revoking are paused until it saves again; what you asked is sent again by itself, nothing is lost.",
      ),
      stop,
    );
  }

  /** Moves the countdown, in place: the alert is not read out again for the clock. */
  tick(now: number): void {
    const text = this.element.querySelector('[data-testid="storage-text"] strong');
    if (this.state && text) text.textContent = diskFullText(this.state, now);
  }
}
