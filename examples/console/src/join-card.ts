/**
 * One machine's card in the join list: who it is, its pairing code, its hardware, and the
 * approve and reject actions its state allows.
 * @module
 */

import type { NodeJoin } from "@stratum/join";
import { canApprove, canReject, explainState, summarizeHardware } from "./format.js";

/** What a card asks of the page; each resolves once the API answered (or rejects with its error). */
export interface JoinActions {
  approve(join: NodeJoin): Promise<void>;
  reject(join: NodeJoin, reason: string): Promise<void>;
}

/** Makes an element with attributes and text or children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

/**
 * A card, created once per join and then updated in place: re-creating it on every poll would
 * throw away a reason being typed into the reject form, and the focus with it.
 */
export class JoinCard {
  readonly element: HTMLLIElement;
  private join: NodeJoin;
  private busy = false;
  private readonly title = h("h3", { "data-testid": "join-hostname" });
  private readonly state = h("span", { class: "state", "data-testid": "join-state" });
  private readonly pairing = h("span", { class: "pairing-code", "data-testid": "pairing-code" });
  private readonly explain = h("p", { class: "explain", "data-testid": "join-explain" });
  private readonly hardware = h("dl", { class: "hardware", "data-testid": "join-hardware" });
  private readonly approveButton = h(
    "button",
    { type: "button", class: "primary", "data-testid": "approve" },
    "Approve",
  );
  private readonly rejectButton = h(
    "button",
    { type: "button", class: "danger", "data-testid": "reject", "aria-expanded": "false" },
    "Reject…",
  );
  private readonly rejectForm = h("form", { class: "reject-form", "data-testid": "reject-form" });
  private readonly reasonInput: HTMLInputElement;

  constructor(
    join: NodeJoin,
    private readonly actions: JoinActions,
  ) {
    this.join = join;
    const pairingLabelId = `pairing-${join.id}`;
    const reasonId = `reason-${join.id}`;
    this.pairing.setAttribute("aria-labelledby", pairingLabelId);
    this.reasonInput = h("input", {
      id: reasonId,
      name: "reason",
      type: "text",
      required: "",
      maxlength: "1000",
      autocomplete: "off",
      "data-testid": "reject-reason",
    });
    this.rejectForm.hidden = true;
    this.rejectForm.append(
      h("label", { for: reasonId }, "Reason for rejecting"),
      this.reasonInput,
      h("button", { type: "submit", class: "danger", "data-testid": "reject-confirm" }, "Reject"),
      h("button", { type: "button", "data-testid": "reject-cancel" }, "Cancel"),
    );
    this.rejectButton.setAttribute("aria-controls", `reject-form-${join.id}`);
    this.rejectForm.id = `reject-form-${join.id}`;

    this.element = h(
      "li",
      { class: "join", "data-testid": "join", "data-join-id": join.id, "data-created-at": join.createdAt },
      h("div", { class: "join-head" }, this.title, this.state),
      h("div", { class: "pairing" }, h("span", { id: pairingLabelId, class: "label" }, "Pairing code"), this.pairing),
      this.explain,
      this.hardware,
      h("div", { class: "actions" }, this.approveButton, this.rejectButton),
      this.rejectForm,
    );

    this.approveButton.addEventListener("click", () => void this.run(() => this.actions.approve(this.join)));
    this.rejectButton.addEventListener("click", () => this.toggleReject(true));
    this.rejectForm
      .querySelector('[data-testid="reject-cancel"]')!
      .addEventListener("click", () => this.toggleReject(false));
    this.rejectForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const reason = this.reasonInput.value.trim();
      if (!reason) return; // `required` already refuses an empty field; this refuses blanks
      void this.run(async () => {
        await this.actions.reject(this.join, reason);
        this.toggleReject(false);
      });
    });
    this.update(join);
  }

  /** Shows a newer view of the join. */
  update(join: NodeJoin): void {
    this.join = join;
    const name = join.hostname || join.id;
    this.title.textContent = name;
    this.element.dataset.state = join.state;
    this.element.setAttribute("aria-label", `${name}, ${join.state}`);
    this.state.textContent = join.state;
    this.state.className = `state state-${join.state}${join.stalled ? " stalled" : ""}`;
    this.pairing.textContent = join.pairingCode;
    const explanation = explainState(join);
    this.explain.textContent = explanation ?? "";
    this.explain.hidden = !explanation;

    const hw = summarizeHardware(join.inventory);
    const rows: [string, string][] = [
      ["CPU", hw.cpu],
      ["Memory", hw.memory],
      ["Disks", hw.disks],
      ["NICs", hw.nics],
      ["Release", join.release ?? "?"],
      ["From", join.sourceAddr ?? "?"],
    ];
    if (join.nodeId) rows.push(["Node id", join.nodeId]);
    this.hardware.replaceChildren(...rows.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));

    if (!canReject(join.state)) this.toggleReject(false);
    this.refreshButtons();
  }

  /** Runs an action with the card's buttons disabled, so a double click sends one call. */
  private async run(action: () => Promise<void>): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    this.refreshButtons();
    try {
      await action();
    } catch {
      // The page reported it in the status area; the card only has to become usable again.
    } finally {
      this.busy = false;
      this.refreshButtons();
    }
  }

  private toggleReject(open: boolean): void {
    this.rejectForm.hidden = !open;
    this.rejectButton.setAttribute("aria-expanded", String(open));
    if (open) this.reasonInput.focus();
    else this.reasonInput.value = "";
  }

  private refreshButtons(): void {
    this.approveButton.hidden = !canApprove(this.join.state);
    this.rejectButton.hidden = !canReject(this.join.state);
    this.approveButton.disabled = this.busy;
    this.rejectButton.disabled = this.busy;
    for (const button of this.rejectForm.querySelectorAll("button")) button.disabled = this.busy;
  }
}
