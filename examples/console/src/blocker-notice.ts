/**
 * A running join whose machine went silent holds every approved machine behind it (one join
 * runs at a time). It is said first, above the list, by its host name and pairing code, with
 * how many wait behind it, how long it has been silent, and Fail… right there.
 * @module
 */

import { h, nowrapIds } from "./dom.js";
import { STATE_WORDS } from "./format.js";
import type { JoinCard } from "./join-card.js";
import { formatDuration } from "./time.js";

/** The notice of the stuck join, if any. */
export class BlockerNotice {
  readonly element = h("div", { class: "blocker", "data-testid": "blocker", role: "status", hidden: "" });
  private shownFor: string | undefined;

  constructor(private readonly open: (card: JoinCard) => void) {}

  /** Shows the silent running join among `cards` (or hides the notice when none is). */
  show(cards: readonly JoinCard[], now: number): void {
    const stuck = cards.find((c) => c.join.stalled && (c.join.state === "delivering" || c.join.state === "installing"));
    if (!stuck) {
      this.element.hidden = true;
      this.element.replaceChildren();
      this.shownFor = undefined;
      return;
    }
    const join = stuck.join;
    const behind = cards.filter((c) => c.join.state === "approved").length;
    const since = Date.parse(join.lastSeenAt ?? join.deliveredAt ?? "");
    const silent = Number.isNaN(since) ? undefined : formatDuration(Math.max(0, now - since));
    const text = `${join.hostname || "An unnamed machine"} (${join.id}, pairing code ${join.pairingCode}) is silent: ${STATE_WORDS[join.state].toLowerCase()}${silent ? `, nothing heard for ${silent}` : ""}. ${behind ? `${behind} approved ${behind === 1 ? "machine waits" : "machines wait"} behind it. ` : ""}Fail it if it will not report again; Retry queues it again later.`;
    const message = this.element.querySelector<HTMLElement>('[data-testid="blocker-text"]');
    if (this.shownFor === join.id && message) {
      // The clock moved: the text changes in place, so the status is not read out again.
      if (message.textContent !== text) message.replaceChildren(nowrapIds(text));
      return;
    }
    this.shownFor = join.id;
    const fail = h(
      "button",
      { type: "button", class: "danger", "data-testid": "blocker-fail" },
      `Fail ${join.hostname || join.id}…`,
    );
    fail.addEventListener("click", () => this.open(stuck));
    this.element.replaceChildren(
      h("p", { "data-testid": "blocker-text" }, nowrapIds(text)),
      h("div", { class: "actions" }, fail),
    );
    this.element.hidden = false;
  }
}
