/**
 * A running or failed join's actions on its card. "Fail…" ends a join that runs (`delivering`,
 * `installing`) but whose machine will not report again, behind a step that asks for the
 * reason (kept as its error, shown on its card and to the machine), which frees the one-at-a-
 * time queue for the next machine. "Retry" queues a failed join again with the assignment it
 * had. Feedback goes to the card's own spot, the focus where the operator can go on.
 * @module
 */

import type { NodeJoin } from "@stratum/join";
import { h } from "./dom.js";
import type { FeedbackSpot } from "./feedback.js";
import { canFail, canRetry, machineName } from "./format.js";
import { describeFailure } from "./messages.js";

/** What the actions ask of the page. */
export interface RunActionCalls {
  /** Fails a running join with `reason`; resolves with the failed join or rejects with the SDK's error. */
  fail(join: NodeJoin, reason: string): Promise<NodeJoin>;
  /** Queues a failed join again; resolves with the queued join or rejects with the SDK's error. */
  retry(join: NodeJoin): Promise<NodeJoin>;
  /** The API's base URL, for a failure's wording. */
  apiUrl(): string;
}

/** The card the actions sit on. */
export interface RunActionCard {
  readonly join: NodeJoin;
  readonly feedback: FeedbackSpot;
  /** Shows the join an action answered with. */
  update(join: NodeJoin, now: number): void;
  focusHeading(): void;
}

/** The Fail… and Retry buttons of one card, and the form that asks for the reason. */
export class RunActions {
  readonly failButton = h(
    "button",
    { type: "button", class: "danger", "data-testid": "fail", "aria-expanded": "false" },
    "Fail…",
  );
  readonly retryButton = h("button", { type: "button", class: "primary", "data-testid": "retry" }, "Retry");
  // novalidate: an empty reason is told in the page's own words, at the field.
  readonly form = h("form", { class: "fail-form", "data-testid": "fail-form", hidden: "", novalidate: "" });
  private readonly reasonError = h("p", { class: "field-error", "data-testid": "fail-reason-error", hidden: "" });
  private readonly reason: HTMLInputElement;
  private readonly confirm = h(
    "button",
    { type: "submit", class: "danger solid", "data-testid": "fail-confirm" },
    "Fail the join",
  );
  private busy: "fail" | "retry" | undefined;
  private blocked = false;

  constructor(
    private readonly card: RunActionCard,
    private readonly calls: RunActionCalls,
  ) {
    const id = card.join.id;
    this.reason = h("input", {
      id: `fail-reason-${id}`,
      name: "reason",
      type: "text",
      required: "",
      maxlength: "1000",
      autocomplete: "off",
      "data-testid": "fail-reason",
      "aria-describedby": `fail-hint-${id} fail-reason-error-${id}`,
    });
    this.reasonError.id = `fail-reason-error-${id}`;
    const cancel = h("button", { type: "button", "data-testid": "fail-cancel" }, "Cancel");
    this.form.id = `fail-form-${id}`;
    this.form.append(
      h("label", { for: this.reason.id }, "Reason for failing the join"),
      h(
        "p",
        { class: "hint", id: `fail-hint-${id}` },
        "Only for a machine that will not report again. The join stops at once and the next approved machine can start; this reason is kept as its error. Retry queues it again.",
      ),
      this.reason,
      this.reasonError,
      h("div", { class: "row" }, this.confirm, cancel),
    );
    this.failButton.setAttribute("aria-controls", this.form.id);
    this.failButton.addEventListener("click", () => this.toggle(true));
    cancel.addEventListener("click", () => {
      this.toggle(false);
      this.failButton.focus();
    });
    this.reason.addEventListener("input", () => this.markReason(false));
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.submitFail();
    });
    this.retryButton.addEventListener("click", () => void this.submitRetry());
  }

  /** Follows the join's state: Fail… while it runs, Retry once it failed. */
  update(join: NodeJoin): void {
    if (!canFail(join.state)) this.toggle(false);
    this.refresh();
  }

  /** Pauses the actions (the server does not answer, its disk is full) or resumes them. */
  setBlocked(blocked: boolean): void {
    this.blocked = blocked;
    this.refresh();
  }

  private async submitFail(): Promise<void> {
    const reason = this.reason.value.trim();
    if (!reason) {
      this.markReason(true);
      this.reason.focus();
      return;
    }
    if (this.busy || this.blocked) return;
    const join = this.card.join;
    await this.run("fail", async () => {
      const failed = await this.calls.fail(join, reason);
      this.card.update(failed, Date.now());
      this.toggle(false);
      this.card.feedback.success(
        `Failed ${machineName(failed)}: “${reason}”. The next approved machine can start; Retry queues this one again.`,
      );
    });
  }

  private async submitRetry(): Promise<void> {
    if (this.busy || this.blocked) return;
    const join = this.card.join;
    await this.run("retry", async () => {
      const queued = await this.calls.retry(join);
      this.card.update(queued, Date.now());
      this.card.feedback.success(
        `Queued ${machineName(queued)} again with the assignment it had. The card follows its install.`,
      );
    });
  }

  /** Runs one action: busy meanwhile, the focus on the card's heading after, the failure told on the card. */
  private async run(action: "fail" | "retry", body: () => Promise<void>): Promise<void> {
    const join = this.card.join;
    this.busy = action;
    this.refresh();
    try {
      await body();
      this.card.focusHeading();
    } catch (error) {
      const verb = action === "fail" ? "fail the join of" : "retry";
      this.card.feedback.failure(
        describeFailure(error, { action: `${verb} ${machineName(join)}`, apiUrl: this.calls.apiUrl() }),
      );
      // Failing: back to the reason, to send again or cancel. Retrying: the focus stays on Retry.
      if (action === "fail") this.reason.focus();
    } finally {
      this.busy = undefined;
      this.refresh();
    }
  }

  private toggle(open: boolean): void {
    if (this.form.hidden === !open) return;
    this.form.hidden = !open;
    this.failButton.setAttribute("aria-expanded", String(open));
    if (open) this.reason.focus();
    else {
      this.reason.value = "";
      this.markReason(false);
    }
  }

  private markReason(missing: boolean): void {
    if (missing) this.reason.setAttribute("aria-invalid", "true");
    else this.reason.removeAttribute("aria-invalid");
    this.reasonError.textContent = missing ? "Give a reason: it is kept as the join's error." : "";
    this.reasonError.hidden = !missing;
  }

  private refresh(): void {
    const state = this.card.join.state;
    this.failButton.hidden = !canFail(state);
    this.retryButton.hidden = !canRetry(state);
    const blocked = this.blocked || this.busy !== undefined;
    this.failButton.disabled = blocked;
    this.retryButton.disabled = blocked;
    this.confirm.disabled = blocked;
    this.confirm.textContent = this.busy === "fail" ? "Failing…" : "Fail the join";
    this.retryButton.textContent = this.busy === "retry" ? "Retrying…" : "Retry";
  }
}
