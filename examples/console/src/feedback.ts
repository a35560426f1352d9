/**
 * Feedback where it belongs: each form, card and dialog has its own spot for one message, next
 * to what the message is about. A message can be dismissed; a newer one replaces it; and a
 * "the server did not answer" message disappears by itself once the server answers again
 * ({@link clearFeedback}), so no stale error outlives its cause.
 * @module
 */

import { h, nowrapIds } from "./dom.js";
import { fieldLabel, type FailureKind, type FailureReport } from "./messages.js";

/** Every spot on the page, for clearing network failures everywhere at once. */
const spots = new Set<FeedbackSpot>();

/**
 * Clears every message about a passing failure of `kind` once it passed: the server not
 * answering (`network`) when it answers again, its disk full (`storage`) when it saves again.
 */
export function clearFeedback(kind: FailureKind): void {
  for (const spot of spots) if (spot.kind === kind) spot.clear();
}

/** One place for one message, inside `container`. */
export class FeedbackSpot {
  /** What the failure shown is about (`undefined` when none is shown, or for a success). */
  kind: FailureKind | undefined;
  /** Whether a failure or a success is shown, if anything. */
  tone: "error" | "success" | undefined;
  readonly element: HTMLDivElement;

  /**
   * `home` is where the focus goes when the message is dismissed (the heading of its card or
   * form), since the dismiss button that had it is gone.
   */
  constructor(
    testId: string,
    private readonly home: () => HTMLElement | null = () => null,
  ) {
    this.element = h("div", { class: "feedback-spot", "data-testid": testId });
    spots.add(this);
  }

  /**
   * Shows a failure. `fieldsShown` are the field paths marked on their inputs already; only the
   * others are listed here, each with a label a person reads.
   */
  failure(report: FailureReport, fieldsShown: ReadonlySet<string> = new Set()): void {
    const rest = report.fields.filter((f) => !fieldsShown.has(f.field));
    const body: Node[] = [h("p", { class: "summary" }, nowrapIds(report.summary))];
    // The server's detail repeats the summary for refusals with field errors; shown otherwise.
    if (report.detail && !report.fields.length) body.push(h("p", {}, report.detail));
    if (rest.length)
      body.push(
        h(
          "ul",
          { "data-testid": "feedback-fields" },
          ...rest.map((f) => h("li", {}, `${fieldLabel(f.field)}: ${f.message}`)),
        ),
      );
    if (report.reference) body.push(h("p", { class: "reference" }, report.reference));
    this.show("error", body);
    this.kind = report.kind;
  }

  /** Shows a success or a note. */
  success(text: string): void {
    this.show("success", [h("p", { class: "summary" }, nowrapIds(text))]);
  }

  clear(): void {
    this.element.replaceChildren();
    this.kind = undefined;
    this.tone = undefined;
  }

  /** Stops tracking the spot (its card or form is gone). */
  dispose(): void {
    spots.delete(this);
  }

  private show(tone: "error" | "success", body: Node[]): void {
    const dismiss = h(
      "button",
      { type: "button", class: "dismiss", "aria-label": "Dismiss this message", "data-testid": "dismiss" },
      "×",
    );
    dismiss.addEventListener("click", () => {
      const hadFocus = this.element.contains(document.activeElement);
      this.clear();
      if (hadFocus) this.home()?.focus();
    });
    // A new element each time: an inserted alert is read out, a changed one may not be.
    const message = h(
      "div",
      { class: `feedback ${tone}`, role: tone === "error" ? "alert" : "status", "data-testid": `feedback-${tone}` },
      h("div", { class: "feedback-body" }, ...body),
      dismiss,
    );
    this.element.replaceChildren(message);
    this.kind = undefined;
    this.tone = tone;
  }
}
