/**
 * The approve dialog's preview: what the founder answers to `previewApproval` for the
 * operator's current choices, the complete assignment it would apply or the refusal it would
 * give. Asked again after each pause in editing (debounced), the request for an older draft
 * aborted, so an answer is only ever shown for the draft it answers.
 * @module
 */

import { isAbortError, type Approval, type Assignment } from "@stratum/join";
import { describeAssignment, type DiskDraft } from "./assignment.js";
import { h } from "./dom.js";
import { describeFailure, fieldLabel, type FailureReport } from "./messages.js";

/** How long edits settle before the preview is asked again (one call per pause in typing, not per key). */
export const PREVIEW_DEBOUNCE_MS = 250;

/** The founder's answer for one draft. */
export type PreviewOutcome =
  /** The assignment the approval would apply. */
  | { kind: "ok"; assignment: Assignment }
  /** The founder would refuse it, with field errors (409 `JOIN_APPROVAL_REFUSED`, 400 `INVALID_INPUT`). */
  | { kind: "refused"; report: FailureReport }
  /** No preview: the machine moved on, the server did not answer, … */
  | { kind: "failed"; report: FailureReport };

/** What the preview asks of the dialog. */
export interface PreviewDeps {
  /** The founder's preview of `approval` (admin client `previewApproval`). */
  fetch(approval: Approval, signal: AbortSignal): Promise<Assignment>;
  /** The API's base URL, for a failure's wording. */
  apiUrl(): string;
  /**
   * An answer arrived for the current draft; returns the field paths the dialog showed on its
   * controls (the preview lists the others).
   */
  settled(outcome: PreviewOutcome): ReadonlySet<string>;
  /** The preview started or stopped waiting: the dialog's confirm follows it. */
  changed(): void;
}

/** The preview section of the approve dialog. */
export class ApprovalPreview {
  readonly element: HTMLElement;
  private readonly list = h("dl", { class: "preview-list", "data-testid": "approve-preview" });
  private readonly notes = h("ul", { class: "preview-notes" });
  private readonly pending = h(
    "p",
    { class: "preview-pending", "data-testid": "approve-preview-pending", hidden: "" },
    "Asking the cluster…",
  );
  // Polite: a refusal is read out once the operator pauses, not on every key.
  private readonly status = h("div", {
    class: "preview-status",
    role: "status",
    "data-testid": "approve-preview-status",
  });
  private disks: readonly DiskDraft[] = [];
  private signal: AbortSignal = AbortSignal.abort();
  private timer: number | undefined;
  private inflight: AbortController | undefined;
  private wanted: string | undefined;
  private answer: { key: string; outcome: PreviewOutcome } | undefined;

  constructor(private readonly deps: PreviewDeps) {
    this.element = h(
      "section",
      { class: "preview", "aria-labelledby": "preview-title" },
      h("h3", { id: "preview-title" }, "What the cluster will apply"),
      this.pending,
      this.status,
      this.list,
      this.notes,
    );
  }

  /** Starts afresh for a dialog opened on a machine; `signal` ends every request when it closes. */
  reset(signal: AbortSignal, disks: readonly DiskDraft[]): void {
    this.stop();
    this.signal = signal;
    this.disks = disks;
    this.wanted = undefined;
    this.answer = undefined;
    this.list.replaceChildren();
    this.notes.replaceChildren();
    this.status.replaceChildren();
  }

  /**
   * Asks for the preview of `approval`: after a pause in editing, or at once with `now`. A
   * request still out for an older draft is aborted: its answer would be about choices the
   * operator has changed.
   */
  request(approval: Approval, now = false): void {
    const key = JSON.stringify(approval);
    if (key === this.wanted) return;
    this.stop();
    this.wanted = key;
    this.setPending(true);
    if (now) void this.run(approval, key);
    else this.timer = window.setTimeout(() => void this.run(approval, key), PREVIEW_DEBOUNCE_MS);
  }

  /** Asks again at once, even for the draft last asked (the server is back, the dialog reopened). */
  refresh(approval: Approval): void {
    this.wanted = undefined;
    this.request(approval, true);
  }

  /** The founder's answer for exactly `approval`, once it arrived; undefined while it is asked or before. */
  answerFor(approval: Approval): PreviewOutcome | undefined {
    return this.answer?.key === JSON.stringify(approval) ? this.answer.outcome : undefined;
  }

  /** Stops waiting: the pending pause and the request out. */
  stop(): void {
    window.clearTimeout(this.timer);
    this.inflight?.abort();
    this.inflight = undefined;
  }

  private async run(approval: Approval, key: string): Promise<void> {
    const controller = new AbortController();
    this.inflight = controller;
    const signal = AbortSignal.any([this.signal, controller.signal]);
    let outcome: PreviewOutcome;
    try {
      outcome = { kind: "ok", assignment: await this.deps.fetch(approval, signal) };
    } catch (error) {
      if (signal.aborted || isAbortError(error)) return;
      const report = describeFailure(error, { action: "preview the assignment", apiUrl: this.deps.apiUrl() });
      outcome = report.fields.length ? { kind: "refused", report } : { kind: "failed", report };
    }
    if (this.wanted !== key) return;
    this.inflight = undefined;
    this.answer = { key, outcome };
    const shown = this.deps.settled(outcome);
    this.render(outcome, shown);
    this.setPending(false);
  }

  private render(outcome: PreviewOutcome, shownOnFields: ReadonlySet<string>): void {
    if (outcome.kind === "ok") {
      const rows = describeAssignment(outcome.assignment, this.disks);
      this.list.replaceChildren(...rows.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
      this.notes.replaceChildren(...(outcome.assignment.copyNotes ?? []).map((n) => h("li", {}, n)));
      this.status.replaceChildren();
      return;
    }
    // A refused or failed draft has no assignment: the last one shown would be about other choices.
    this.list.replaceChildren();
    this.notes.replaceChildren();
    const { report } = outcome;
    const rest = report.fields.filter((f) => !shownOnFields.has(f.field));
    this.status.replaceChildren(
      h(
        "p",
        { class: "preview-refusal" },
        outcome.kind === "refused"
          ? "The cluster would refuse these choices: fix the fields marked above before approving."
          : report.summary,
      ),
      ...(rest.length ? [h("ul", {}, ...rest.map((f) => h("li", {}, `${fieldLabel(f.field)}: ${f.message}`)))] : []),
    );
  }

  private setPending(pending: boolean): void {
    this.pending.hidden = !pending;
    this.list.classList.toggle("is-stale", pending);
    this.element.setAttribute("aria-busy", String(pending));
    this.deps.changed();
  }
}
