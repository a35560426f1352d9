/**
 * How many more machines the cluster can take, above the machine list, from the founder's own
 * count (the join list's `capacity`): control-plane nodes against the most it takes and how
 * many more can be approved, the waiting slots, and the registrations they turned away. When
 * the cluster is full, the waiting machines can never be approved as things stand: the notice
 * says so and offers to expire them (they may register again later) or reject them, all at once.
 * @module
 */

import type { JoinCapacity, NodeJoin } from "@stratum/join";
import { confirmAction } from "./confirm-dialog.js";
import { h, nowrapIds } from "./dom.js";
import { canExpire } from "./format.js";
import { formatAgo } from "./time.js";

/** What the notice asks of the page. */
export interface CapacityActions {
  /** Expires one waiting join. */
  expire(join: NodeJoin): Promise<unknown>;
  /** Rejects one waiting join with `reason`. */
  reject(join: NodeJoin, reason: string): Promise<unknown>;
  /** The API's base URL, for a failure's wording. */
  apiUrl(): string;
}

/** The reason a bulk rejection gives every machine, which each is shown. */
export const FULL_REJECTION = "The cluster is full: it takes no more control-plane nodes.";

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** The capacity in words: "1 member and 2 approved, at most 5: 2 more can be approved." */
export function capacityInWords(capacity: JoinCapacity): string {
  const cp = capacity.controlPlane;
  const approved = cp.approved ? ` and ${cp.approved} approved` : "";
  const more =
    cp.remaining === 0 ? "none more can be approved" : `${plural(cp.remaining, "more machine")} can be approved`;
  return `Control plane: ${plural(cp.members, "member")}${approved}, at most ${cp.max}: ${more}. Waiting: ${capacity.waiting.count} of ${capacity.waiting.max} slots taken.`;
}

/** The notice; updated from every answer of the join list. */
export class CapacityNotice {
  readonly element = h("section", { class: "capacity", "data-testid": "capacity", "aria-label": "Capacity" });
  private readonly text = h("p", { "data-testid": "capacity-text", tabindex: "-1" });
  private readonly refused = h("p", { class: "refused", "data-testid": "capacity-refused", hidden: "" });
  private readonly full = h("div", { class: "capacity-full", "data-testid": "capacity-full", hidden: "" });
  private capacity: JoinCapacity | undefined;
  private waiting: NodeJoin[] = [];
  private writable = true;

  constructor(private readonly actions: CapacityActions) {
    this.element.append(this.text, this.refused, this.full);
    this.element.hidden = true;
  }

  /** The capacity the founder answered, and the joins that wait for a decision now. */
  show(capacity: JoinCapacity | undefined, joins: readonly NodeJoin[], now: number): void {
    this.capacity = capacity;
    this.waiting = joins.filter((j) => canExpire(j.state));
    this.render(now);
  }

  /** Pauses the bulk actions (server unreachable, disk full). */
  setWritable(writable: boolean): void {
    this.writable = writable;
    for (const button of this.full.querySelectorAll("button")) button.disabled = !writable;
  }

  /** Re-renders the age of the last refusal. */
  tick(now: number): void {
    if (this.capacity?.waiting.refused) this.renderRefused(this.capacity, now);
  }

  private render(now: number): void {
    const capacity = this.capacity;
    this.element.hidden = capacity === undefined;
    if (!capacity) return;
    const words = capacityInWords(capacity);
    if (this.text.textContent !== words) this.text.textContent = words;
    this.renderRefused(capacity, now);
    const stuck = capacity.controlPlane.remaining === 0 ? this.waiting.length : 0;
    this.full.hidden = stuck === 0;
    if (stuck === 0) {
      this.full.replaceChildren();
      return;
    }
    const said = `The cluster is full: the ${plural(stuck, "waiting machine")} cannot be approved until a place is free. Expire them to free their waiting slots (they may register again later), or reject them for good.`;
    if (this.full.dataset.said === said) return;
    this.full.dataset.said = said;
    const expire = h("button", { type: "button", "data-testid": "capacity-expire" }, `Expire ${stuck}…`);
    const reject = h(
      "button",
      { type: "button", class: "danger", "data-testid": "capacity-reject" },
      `Reject ${stuck}…`,
    );
    expire.disabled = reject.disabled = !this.writable;
    expire.addEventListener("click", () => void this.bulk("expire", expire));
    reject.addEventListener("click", () => void this.bulk("reject", reject));
    this.full.replaceChildren(h("p", {}, said), h("div", { class: "actions" }, expire, reject));
  }

  private renderRefused(capacity: JoinCapacity, now: number): void {
    const { refused, max, lastRefusedAt } = capacity.waiting;
    this.refused.hidden = refused === 0;
    if (refused === 0) return;
    const last = formatAgo(lastRefusedAt, now);
    const text = `${plural(refused, "registration was", "registrations were")} turned away because all ${max} waiting slots were taken${last ? ` (the last ${last})` : ""}. Those machines stop trying after a minute or two: once a slot is free, run their register again.`;
    if (this.refused.textContent !== text) this.refused.replaceChildren(nowrapIds(text));
  }

  /** Expires or rejects every waiting machine, one call each, after a confirmation naming them. */
  private async bulk(kind: "expire" | "reject", button: HTMLButtonElement): Promise<void> {
    const joins = [...this.waiting];
    const names = joins.map((j) => `${j.hostname || "unnamed"} (${j.id})`);
    await confirmAction({
      title:
        kind === "expire"
          ? `Expire ${plural(joins.length, "waiting machine")}?`
          : `Reject ${plural(joins.length, "waiting machine")}?`,
      body: [
        kind === "expire"
          ? "Their waiting slots are freed at once; each may register again later with a live join code."
          : `Their keys are refused from then on; each is shown: “${FULL_REJECTION}”`,
        names.join(", "),
      ],
      confirmLabel: kind === "expire" ? `Expire ${joins.length}` : `Reject ${joins.length}`,
      action: kind === "expire" ? "expire the waiting machines" : "reject the waiting machines",
      apiUrl: this.actions.apiUrl(),
      run: async () => {
        // One at a time: a refusal stops there, with the rest still waiting, and is shown.
        for (const join of joins)
          await (kind === "expire" ? this.actions.expire(join) : this.actions.reject(join, FULL_REJECTION));
      },
      restore: () => (button.isConnected ? button : this.text),
    });
  }
}
