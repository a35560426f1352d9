/**
 * The compact view of the machine list: one table row per machine (pairing code, host name,
 * serial, MAC, address, state), so sixteen waiting machines fit a screen and a pairing code read
 * out is found at a glance. Each row approves in place; "Card" shows the machine's full card.
 * Rows are rebuilt from the cards' joins on every change, keeping the focus on the same button.
 * @module
 */

import { h, nowrapIds } from "./dom.js";
import { canApprove, macsOf, STATE_WORDS } from "./format.js";
import type { JoinCard } from "./join-card.js";

/** What the table asks of the list. */
export interface JoinTableActions {
  /** Opens the approve dialog for the row's machine. */
  approve(card: JoinCard): void;
  /** Shows the machine's card (switches to the card view). */
  showCard(card: JoinCard): void;
}

/** The table, inside a scrolling region of its own (a phone scrolls it, not the page). */
export class JoinTable {
  readonly element: HTMLDivElement;
  private readonly body = h("tbody");
  private online = true;
  private writable = true;

  constructor(private readonly actions: JoinTableActions) {
    const head = h(
      "tr",
      {},
      ...["Pairing code", "Machine", "Serial", "MAC", "Address", "State", "Actions"].map((t) =>
        h("th", { scope: "col" }, t),
      ),
    );
    this.element = h(
      "div",
      {
        class: "table-wrap",
        role: "region",
        "aria-label": "Machines, as a table",
        tabindex: "0",
        "data-testid": "joins-table-region",
        hidden: "",
      },
      h("table", { class: "joins-table", "data-testid": "joins-table" }, h("thead", {}, head), this.body),
    );
  }

  /** Pauses or resumes the row actions (server unreachable, disk full). */
  setBlocked(online: boolean, writable: boolean): void {
    this.online = online;
    this.writable = writable;
  }

  /** Shows `cards` in order; the focused row button keeps the focus. */
  render(cards: readonly JoinCard[]): void {
    const focused = document.activeElement;
    const keep =
      focused instanceof HTMLElement && this.body.contains(focused)
        ? { id: focused.closest("tr")?.dataset.joinId, testid: focused.dataset.testid }
        : undefined;
    this.body.replaceChildren(...cards.map((card) => this.row(card)));
    if (keep?.id) {
      const again = this.body.querySelector<HTMLElement>(
        `tr[data-join-id="${keep.id}"] [data-testid="${keep.testid ?? ""}"]`,
      );
      (again ?? this.body.querySelector<HTMLElement>(`tr[data-join-id="${keep.id}"] button`))?.focus();
    }
  }

  /** The first focusable control of a machine's row (for "next waiting machine"). */
  rowControl(joinId: string): HTMLElement | null {
    return this.body.querySelector<HTMLElement>(`tr[data-join-id="${joinId}"] button`);
  }

  private row(card: JoinCard): HTMLTableRowElement {
    const join = card.join;
    const name = `${join.hostname || "unnamed machine"} (${join.id})`;
    const cells: (Node | string)[] = [
      h("span", { class: "pairing-cell" }, join.pairingCode),
      nowrapIds(name),
      join.systemSerial ?? "",
      macsOf(join.inventory)[0] ?? "",
      join.sourceAddr ?? "",
      `${STATE_WORDS[join.state]}${join.stalled ? ", silent" : ""}${join.waitReason ? `: waiting for ${join.waitReason}` : ""}`,
    ];
    const actions = h("td", { class: "row-actions" });
    if (canApprove(join.state)) {
      const approve = h(
        "button",
        { type: "button", class: "primary", "data-testid": "row-approve", "aria-label": `Approve ${name}…` },
        "Approve…",
      );
      approve.disabled = !this.online || !this.writable;
      approve.addEventListener("click", () => this.actions.approve(card));
      actions.append(approve);
    }
    const show = h(
      "button",
      { type: "button", "data-testid": "row-card", "aria-label": `Show the card of ${name}` },
      "Card",
    );
    show.addEventListener("click", () => this.actions.showCard(card));
    actions.append(show);
    return h(
      "tr",
      {
        "data-join-id": join.id,
        "data-state": join.state,
        "data-testid": "join-row",
        class: `state-row-${join.state}`,
      },
      ...cells.map((cell, i) => h(i === 1 ? "th" : "td", i === 1 ? { scope: "row" } : {}, cell)),
      actions,
    );
  }
}
