/**
 * Small DOM helpers the console's parts share: making elements, finding them by test id,
 * announcing to screen readers, copy buttons, and modal dialogs that trap and restore focus.
 * @module
 */

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

/** Finds an element by its `data-testid`, which the end-to-end test drives too. */
export function byTestId<T extends HTMLElement>(id: string, root: ParentNode = document): T {
  const element = root.querySelector<T>(`[data-testid="${id}"]`);
  if (!element) throw new Error(`the page has no [data-testid="${id}"]`);
  return element;
}

/**
 * Says `text` to a screen reader, politely, through the page's one announcer (a visually
 * hidden live region present from the start, as live regions must be to be heard).
 */
export function announce(text: string): void {
  const region = document.getElementById("announcer");
  if (!region) return;
  // Cleared first, so the same sentence twice in a row is read twice.
  region.textContent = "";
  window.setTimeout(() => (region.textContent = text), 50);
}

/**
 * A code or pairing code in its groups, each kept whole (`white-space: nowrap`) with a break
 * allowed only at the dashes, so a narrow screen wraps "4F7K-2Q9M-ABD" between groups and
 * never inside one. Its text is the code exactly as given.
 */
export function groupedCode(code: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  code.split("-").forEach((group, i) => {
    if (i > 0) fragment.append("-", h("wbr"));
    fragment.append(h("span", { class: "group" }, group));
  });
  return fragment;
}

/** Ids and codes in running text: `nj-8w2k4m1p`, `n-…`, `jc-…`, a pairing code, a join code. */
const ID_IN_TEXT = /\b(?:[a-z]{1,2}-[0-9a-z]{8}|[0-9A-Z]{3}-[0-9A-Z]{3}|[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{3})\b/g;

/**
 * Running text whose ids and codes are kept whole: a browser would otherwise break
 * "nj-8w2k4m1p" at its hyphen on a narrow screen. Its text is unchanged.
 */
export function nowrapIds(text: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  let at = 0;
  for (const match of text.matchAll(ID_IN_TEXT)) {
    fragment.append(text.slice(at, match.index), h("span", { class: "group" }, match[0]));
    at = match.index + match[0].length;
  }
  fragment.append(text.slice(at));
  return fragment;
}

/**
 * A URL that wraps only after its scheme and before each `/` and `:` (each piece is kept
 * whole, "stratum-join" too, whose hyphen a browser would otherwise break at), and a join code
 * in it only between its groups. Its text is unchanged.
 */
export function breakableUrl(url: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url)?.[0] ?? "";
  if (scheme) fragment.append(h("span", { class: "group" }, scheme), h("wbr"));
  for (const part of url.slice(scheme.length).split(/(?=[/:])/)) {
    const code = /^\/([0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{3})$/.exec(part)?.[1];
    fragment.append(code ? "/" : "", code ? groupedCode(code) : h("span", { class: "group" }, part), h("wbr"));
  }
  return fragment;
}

/**
 * A shell command that wraps between its words, each word kept whole, and a URL among them
 * at the URL's own break points. Its text is the command exactly.
 */
export function breakableCommand(command: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  command.split(" ").forEach((word, i) => {
    if (i > 0) fragment.append(" ");
    const url = /^'([a-z][a-z0-9+.-]*:\/\/.*)'$/i.exec(word)?.[1];
    if (url) fragment.append("'", breakableUrl(url), "'");
    else fragment.append(h("span", { class: "group" }, word));
  });
  return fragment;
}

/** How long a copy button says "Copied". */
const COPIED_MS = 2000;

/**
 * A button that copies `text()` to the clipboard and says so, on the button and to screen
 * readers. Falls back to a selection copy where the Clipboard API is refused.
 */
export function copyButton(label: string, what: string, text: () => string, testId: string): HTMLButtonElement {
  const button = h("button", { type: "button", class: "copy", "data-testid": testId }, label);
  let timer: number | undefined;
  button.addEventListener("click", () => {
    void copyText(text()).then((ok) => {
      button.textContent = ok ? "Copied" : "Copy failed";
      announce(
        ok
          ? `${what} copied to the clipboard.`
          : `Could not copy the ${what.toLowerCase()}; select it and copy it by hand.`,
      );
      window.clearTimeout(timer);
      timer = window.setTimeout(() => (button.textContent = label), COPIED_MS);
    });
  });
  return button;
}

async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h("textarea", { readonly: "", class: "visually-hidden" });
    area.value = text;
    document.body.append(area);
    area.select();
    try {
      return document.execCommand("copy");
    } finally {
      area.remove();
    }
  }
}

const FOCUSABLE = 'button, [href], input, select, textarea, [tabindex]:not([tabindex="-1"])';

/** The elements Tab can reach inside `root`, in order. */
export function tabbables(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter(
    (el) => !(el as HTMLButtonElement).disabled && !el.closest("[hidden]") && el.getClientRects().length > 0,
  );
}

/**
 * Opens `dialog` as a modal: the rest of the page is inert, Tab and Shift+Tab cycle inside it
 * (the browser's own modal lets Tab leave for the browser's toolbar), Escape closes it, and
 * on closing the focus goes back to `restore()` (the button that opened it, or where it
 * should land when that button is gone). `first` is focused on opening.
 */
export function openModal(dialog: HTMLDialogElement, first: HTMLElement, restore: () => HTMLElement | null): void {
  if (!dialog.isConnected) document.body.append(dialog);
  const trap = (event: KeyboardEvent): void => {
    if (event.key !== "Tab") return;
    const items = tabbables(dialog);
    if (!items.length) return;
    const [head, tail] = [items[0]!, items[items.length - 1]!];
    if (event.shiftKey && (document.activeElement === head || !dialog.contains(document.activeElement))) {
      event.preventDefault();
      tail.focus();
    } else if (!event.shiftKey && document.activeElement === tail) {
      event.preventDefault();
      head.focus();
    }
  };
  dialog.addEventListener("keydown", trap);
  dialog.addEventListener(
    "close",
    () => {
      dialog.removeEventListener("keydown", trap);
      const target = restore();
      if (target?.isConnected) target.focus();
    },
    { once: true },
  );
  dialog.showModal();
  first.focus();
}
