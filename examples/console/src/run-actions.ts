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
import { ReasonForm } from "./reason-form.js";

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
  readonly failButton: HTMLButtonElement;
  readonly retryButton = h("button", { type: "button", class: "primary", "data-testid": "retry" }, "Retry");
  /** The form that asks for the reason. */
  readonly form: HTMLFormElement;
  private readonly fail: ReasonForm;
  private busy: "fail" | "retry" | undefined;
  private blocked = false;

  constructor(
    private readonly card: RunActionCard,
    private readonly calls: RunActionCalls,
  ) {
    const id = card.join.id;
    // An empty reason is told in the page's own words, at the field.
    this.fail = new ReasonForm(
      {
        name: "fail",
        ids: { form: `fail-form-${id}`, reason: `fail-reason-${id}`, hint: `fail-hint-${id}` },
        button: "Fail…",
        label: "Reason for failing the join",
        hint: "Only for a machine that will not report again. The join stops at once and the next approved machine can start; this reason is kept as its error. Retry queues it again.",
        confirm: "Fail the join",
        busy: "Failing…",
        missing: { message: "Give a reason: it is kept as the join's error.", id: `fail-reason-error-${id}` },
      },
      (reason) => void this.submitFail(reason),
    );
    this.failButton = this.fail.button;
    this.form = this.fail.form;
    this.retryButton.addEventListener("click", () => void this.submitRetry());
  }

  /** Follows the join's state: Fail… while it runs, Retry once it failed. */
  update(join: NodeJoin): void {
    if (!canFail(join.state)) this.fail.close();
    this.refresh();
  }

  /** Opens the Fail form with the focus in its reason (the stuck-join notice's "Fail…"). */
  openFail(): void {
    if (canFail(this.card.join.state)) this.fail.open();
  }

  /** Pauses the actions (the server does not answer, its disk is full) or resumes them. */
  setBlocked(blocked: boolean): void {
    this.blocked = blocked;
    this.refresh();
  }

  private async submitFail(reason: string): Promise<void> {
    if (this.busy || this.blocked) return;
    const join = this.card.join;
    await this.run("fail", async () => {
      const failed = await this.calls.fail(join, reason);
      this.card.update(failed, Date.now());
      this.fail.close();
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
      if (action === "fail") this.fail.focusReason();
    } finally {
      this.busy = undefined;
      this.refresh();
    }
  }

  private refresh(): void {
    const state = this.card.join.state;
    this.retryButton.hidden = !canRetry(state);
    const blocked = this.blocked || this.busy !== undefined;
    this.retryButton.disabled = blocked;
    this.fail.render(canFail(state), blocked, this.busy === "fail");
    this.retryButton.textContent = this.busy === "retry" ? "Retrying…" : "Retry";
  }
}
