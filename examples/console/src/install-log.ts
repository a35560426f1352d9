/**
 * A card's install log: the lines the machine sends with `stratum-join progress --log`, as
 * the founder keeps them (the last 2,000, `logTail` of `getNodeJoin`). Fetched only when the
 * operator opens it (the list carries no log), and again whenever the join changes while it is
 * open, so a running install's log follows it without polling a closed one.
 * @module
 */

import { isAbortError, type NodeJoin } from "@stratum/join";
import { h } from "./dom.js";

/** The log disclosure of one card. */
export class InstallLog {
  readonly element: HTMLDetailsElement;
  private readonly body: HTMLPreElement;
  private readonly status = h("p", { class: "muted", "data-testid": "install-log-status" });
  private controller: AbortController | undefined;
  private seen: string | undefined;

  constructor(
    id: string,
    private readonly fetch: (signal: AbortSignal) => Promise<string[]>,
  ) {
    // Focusable, so the keyboard scrolls a long log; labelled by its summary.
    this.body = h("pre", {
      class: "install-log",
      "data-testid": "install-log",
      tabindex: "0",
      "aria-labelledby": `install-log-${id}`,
    });
    this.element = h(
      "details",
      { class: "more log", "data-testid": "install-log-toggle" },
      h("summary", { id: `install-log-${id}` }, "Install log"),
      this.status,
      this.body,
    );
    this.element.addEventListener("toggle", () => {
      if (this.element.open) void this.load();
      else this.controller?.abort();
    });
  }

  /** The join changed: an open log is fetched again (new lines may have come with it). */
  update(join: NodeJoin): void {
    if (this.seen === join.updatedAt) return;
    this.seen = join.updatedAt;
    if (this.element.open) void this.load();
  }

  /** Stops a fetch in flight (the card is gone). */
  dispose(): void {
    this.controller?.abort();
  }

  private async load(): Promise<void> {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.status.textContent = this.body.textContent ? "" : "Loading the log…";
    try {
      const lines = await this.fetch(controller.signal);
      if (controller.signal.aborted) return;
      const atEnd = this.body.scrollTop + this.body.clientHeight >= this.body.scrollHeight - 4;
      this.body.textContent = lines.join("\n");
      this.status.textContent = lines.length ? `The last ${lines.length} lines the machine sent.` : "No log lines yet.";
      // Following the end, as `tail -f` does, unless the operator scrolled up to read.
      if (atEnd) this.body.scrollTop = this.body.scrollHeight;
    } catch (error) {
      if (controller.signal.aborted || isAbortError(error)) return;
      this.status.textContent = "The log could not be read; it is fetched again when the machine moves on.";
    }
  }
}
