/**
 * A confirm step for an action that cannot be undone (revoking a join code): a modal that says
 * what will happen, runs the action itself, and on failure shows why in the dialog and stays
 * open, so the operator can retry or cancel without losing their place.
 * @module
 */

import { h, openModal } from "./dom.js";
import { FeedbackSpot } from "./feedback.js";
import { describeFailure } from "./messages.js";

/** What to confirm. */
export interface ConfirmOptions {
  title: string;
  /** What will happen, one paragraph each. */
  body: string[];
  /** The confirming button's label ("Revoke code 4F…"). */
  confirmLabel: string;
  /** The action as a verb phrase for a failure ("revoke join code jc-…"). */
  action: string;
  /** Runs the action; its rejection is shown in the dialog. */
  run(): Promise<void>;
  /** Where the focus goes when the dialog closes. */
  restore(): HTMLElement | null;
  /** The API's base URL, for a failure's wording. */
  apiUrl: string;
}

/** Asks, runs `run` on confirmation; resolves true once it succeeded, false when cancelled. */
export function confirmAction(options: ConfirmOptions): Promise<boolean> {
  const title = h("h2", { id: "confirm-title", tabindex: "-1" }, options.title);
  const feedback = new FeedbackSpot("confirm-feedback", () => title);
  const confirm = h(
    "button",
    { type: "submit", class: "danger solid", "data-testid": "confirm-ok" },
    options.confirmLabel,
  );
  const cancel = h("button", { type: "button", "data-testid": "confirm-cancel" }, "Cancel");
  const form = h(
    "form",
    {},
    title,
    ...options.body.map((p) => h("p", {}, p)),
    feedback.element,
    h("div", { class: "dialog-actions" }, confirm, cancel),
  );
  const dialog = h(
    "dialog",
    { class: "confirm-dialog", "aria-labelledby": "confirm-title", "data-testid": "confirm-dialog" },
    form,
  );
  let succeeded = false;
  const done = new Promise<boolean>((resolve) =>
    dialog.addEventListener("close", () => {
      feedback.dispose();
      dialog.remove();
      resolve(succeeded);
    }),
  );
  cancel.addEventListener("click", () => dialog.close());
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    confirm.disabled = true;
    void options
      .run()
      .then(() => {
        succeeded = true;
        dialog.close();
      })
      .catch((error: unknown) => {
        feedback.failure(describeFailure(error, { action: options.action, apiUrl: options.apiUrl }));
        title.focus();
      })
      .finally(() => (confirm.disabled = false));
  });
  // Focus starts on Cancel: Enter on an irreversible action should be a deliberate move.
  openModal(dialog, cancel, options.restore);
  return done;
}
