/**
 * An action that needs a reason (rejecting a machine, failing a running join): a toggle button
 * that opens an inline form with a labelled, required reason, a confirm and a cancel. The
 * reason is what the machine is shown or what is kept as the join's error, so it is asked for
 * in place, on the card, rather than in a dialog that would hide the card it is about.
 * @module
 */

import { h } from "./dom.js";

/** What tells one reason form from another: its words, its names for the tests, its ids. */
export interface ReasonFormOptions {
  /**
   * The `data-testid` prefix, and the form's class with `-form`: the button is `<name>`, then
   * `<name>-form`, `<name>-reason`, `<name>-confirm`, `<name>-cancel`, `<name>-reason-error`.
   */
  name: string;
  /** The ids the label, hint and `aria-controls` point at, unique on the page. */
  ids: { form: string; reason: string; hint: string };
  /** The toggle button's text ("Reject…"). */
  button: string;
  /** The reason's label. */
  label: string;
  /** What the reason is for, under the label (the field is described by it). */
  hint: string;
  /** The confirm button's text, and its text while the call runs. */
  confirm: string;
  busy: string;
  /**
   * When given, the page checks the reason itself (`novalidate`) and says this at the field
   * (an element with this id, in the reason's description) when it is empty, until a reason
   * is typed. Without it, the browser's own check of the required field speaks for an empty
   * reason, and `aria-invalid` marks one of only spaces until the form closes.
   */
  missing?: { message: string; id: string };
}

/**
 * The button and its form. The owner places both, decides whether a confirmed reason is sent
 * (it may be busy or paused), and says how the call went: {@link close} after it, or
 * {@link focusReason} to send again or cancel.
 */
export class ReasonForm {
  readonly button: HTMLButtonElement;
  readonly form: HTMLFormElement;
  private readonly reason: HTMLInputElement;
  private readonly confirm: HTMLButtonElement;
  private readonly error: HTMLParagraphElement | undefined;

  /** `onReason` is called with the trimmed reason when one is confirmed; never with an empty one. */
  constructor(
    private readonly options: ReasonFormOptions,
    onReason: (reason: string) => void,
  ) {
    const { name, ids, missing } = options;
    this.button = h(
      "button",
      { type: "button", class: "danger", "data-testid": name, "aria-expanded": "false" },
      options.button,
    );
    this.form = h("form", {
      class: `${name}-form`,
      "data-testid": `${name}-form`,
      id: ids.form,
      hidden: "",
      ...(missing && { novalidate: "" }),
    });
    this.reason = h("input", {
      id: ids.reason,
      name: "reason",
      type: "text",
      required: "",
      maxlength: "1000",
      autocomplete: "off",
      "data-testid": `${name}-reason`,
      "aria-describedby": missing ? `${ids.hint} ${missing.id}` : ids.hint,
    });
    this.error =
      missing && h("p", { class: "field-error", "data-testid": `${name}-reason-error`, id: missing.id, hidden: "" });
    this.confirm = h(
      "button",
      { type: "submit", class: "danger solid", "data-testid": `${name}-confirm` },
      options.confirm,
    );
    const cancel = h("button", { type: "button", "data-testid": `${name}-cancel` }, "Cancel");
    this.form.append(
      h("label", { for: ids.reason }, options.label),
      h("p", { class: "hint", id: ids.hint }, options.hint),
      this.reason,
      ...(this.error ? [this.error] : []),
      h("div", { class: "row" }, this.confirm, cancel),
    );
    this.button.setAttribute("aria-controls", ids.form);

    this.button.addEventListener("click", () => this.toggle(true));
    // The focus goes back where the operator opened the form from.
    cancel.addEventListener("click", () => {
      this.toggle(false);
      this.button.focus();
    });
    if (this.error) this.reason.addEventListener("input", () => this.markMissing(false));
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      const reason = this.reason.value.trim();
      if (!reason) {
        this.markMissing(true);
        this.reason.focus();
        return;
      }
      onReason(reason);
    });
  }

  /** Closes the form, forgetting the reason typed (after the call, or when the state no longer allows the action). */
  close(): void {
    this.toggle(false);
  }

  /** Opens the form and puts the focus in the reason (from elsewhere on the page, e.g. a notice's button). */
  open(): void {
    this.toggle(true);
    this.reason.focus();
  }

  /** Back to the reason after a failed call: to send it again or cancel. */
  focusReason(): void {
    this.reason.focus();
  }

  /**
   * Shows the button when the join's state allows the action; disables the button and the
   * confirm while the actions are paused or a call runs, and says so on the confirm.
   */
  render(shown: boolean, disabled: boolean, busy: boolean): void {
    this.button.hidden = !shown;
    this.button.disabled = disabled;
    this.confirm.disabled = disabled;
    this.confirm.textContent = busy ? this.options.busy : this.options.confirm;
  }

  private toggle(open: boolean): void {
    if (this.form.hidden === !open) return;
    this.form.hidden = !open;
    this.button.setAttribute("aria-expanded", String(open));
    if (open) this.reason.focus();
    else {
      this.reason.value = "";
      this.markMissing(false);
    }
  }

  private markMissing(missing: boolean): void {
    if (missing) this.reason.setAttribute("aria-invalid", "true");
    else this.reason.removeAttribute("aria-invalid");
    if (!this.error) return;
    this.error.textContent = missing ? this.options.missing!.message : "";
    this.error.hidden = !missing;
  }
}
