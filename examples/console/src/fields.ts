/**
 * Form fields whose errors sit next to them: a label, the control, an optional hint and an
 * error slot, the control described by both (a screen reader reads the error with the
 * field), and the mark cleared as soon as the field is edited.
 * @module
 */

import { h } from "./dom.js";

/** An input or a select. */
export type Control = HTMLInputElement | HTMLSelectElement;

/**
 * Marks `control` as refused, with `message` in its error slot (the element `<id>-error`), or
 * clears the mark when `message` is undefined. With `append`, a second message for the same
 * field is added to the first.
 */
export function markField(control: Control, message: string | undefined, append = false): void {
  const slot = document.getElementById(`${control.id}-error`);
  if (message === undefined) control.removeAttribute("aria-invalid");
  else control.setAttribute("aria-invalid", "true");
  if (!slot) return;
  slot.textContent =
    message !== undefined && append && slot.textContent ? `${slot.textContent} ${message}` : (message ?? "");
  slot.hidden = message === undefined;
}

/** Clears a control's mark whenever it is edited: it is no longer what was refused. */
export function clearMarkOnEdit(control: Control): void {
  const clear = (): void => markField(control, undefined);
  control.addEventListener("input", clear);
  control.addEventListener("change", clear);
}

/** A labelled row for `control` (which must have an id), with its hint and error slot. */
export function labelledField(control: Control, label: string, hint?: string): HTMLDivElement {
  const id = control.id;
  const row = h("div", { class: "field" }, h("label", { for: id }, label), control);
  const described: string[] = [];
  if (hint) {
    row.append(h("p", { class: "hint", id: `${id}-hint` }, hint));
    described.push(`${id}-hint`);
  }
  row.append(h("p", { class: "field-error", id: `${id}-error`, hidden: "", "data-testid": "field-error" }));
  described.push(`${id}-error`);
  control.setAttribute("aria-describedby", described.join(" "));
  clearMarkOnEdit(control);
  return row;
}
