/**
 * The console example: sign in with an API token, mint a join code (text, URL, QR code), watch
 * machines register, approve or reject them. Imports the SDK's root entry only, as a console
 * team's app would; the Node joiner (`@stratum/join/node`) never reaches a browser.
 * @module
 */

import {
  createAdminClient,
  isAbortError,
  StratumApiError,
  watchJoins,
  type AdminClient,
  type JoinChange,
  type NodeJoin,
} from "@stratum/join";
import QRCode from "qrcode";
import { describeError } from "./format.js";
import { h, JoinCard } from "./join-card.js";

/** Finds an element by its `data-testid`, which the end-to-end test drives too. */
function byTestId<T extends HTMLElement>(id: string): T {
  const element = document.querySelector<T>(`[data-testid="${id}"]`);
  if (!element) throw new Error(`the page has no [data-testid="${id}"]`);
  return element;
}

const ui = {
  status: byTestId<HTMLDivElement>("status"),
  session: byTestId<HTMLDivElement>("session"),
  signedInAs: byTestId<HTMLSpanElement>("signed-in-as"),
  signOut: byTestId<HTMLButtonElement>("sign-out"),
  signInForm: byTestId<HTMLFormElement>("sign-in-form"),
  apiUrl: byTestId<HTMLInputElement>("api-url"),
  token: byTestId<HTMLInputElement>("token"),
  signIn: byTestId<HTMLButtonElement>("sign-in"),
  console: byTestId<HTMLDivElement>("console"),
  mintForm: byTestId<HTMLFormElement>("mint-form"),
  mint: byTestId<HTMLButtonElement>("mint"),
  minted: byTestId<HTMLDivElement>("minted"),
  code: byTestId<HTMLElement>("join-code"),
  url: byTestId<HTMLElement>("join-url"),
  expires: byTestId<HTMLElement>("join-expires"),
  qr: byTestId<HTMLCanvasElement>("join-qr"),
  watchState: byTestId<HTMLSpanElement>("watch-state"),
  joinsEmpty: byTestId<HTMLParagraphElement>("joins-empty"),
  joins: byTestId<HTMLOListElement>("joins"),
};

/** How often the join list is polled while all is well. */
const POLL_MS = 1500;
/** The API base URL last signed in to (never the token: it lives only in the client's closure). */
const API_URL_KEY = "stratum-console.apiUrl";

interface Session {
  client: AdminClient;
  apiUrl: string;
  /** Aborts the watch and every call in flight on sign-out. */
  controller: AbortController;
  cards: Map<string, JoinCard>;
}

let session: Session | undefined;

// ------------------------------------------------------------------ the status area

function showInfo(text: string): void {
  ui.status.hidden = false;
  ui.status.className = "status info";
  ui.status.replaceChildren(h("p", { "data-testid": "status-text" }, text));
}

function showError(error: unknown): void {
  const report = describeError(error, session?.apiUrl ?? ui.apiUrl.value);
  ui.status.hidden = false;
  ui.status.className = "status error";
  const children: Node[] = [h("p", { "data-testid": "status-text" }, h("strong", {}, "Error "), report.headline)];
  if (report.fields.length) {
    children.push(h("ul", { "data-testid": "status-fields" }, ...report.fields.map((f) => h("li", {}, f))));
  }
  if (report.requestId) children.push(h("p", { class: "request-id" }, `Request id ${report.requestId}`));
  ui.status.replaceChildren(...children);
}

// ------------------------------------------------------------------ signing in and out

ui.apiUrl.value = localStorage.getItem(API_URL_KEY) ?? ui.apiUrl.value;

ui.signInForm.addEventListener("submit", (event) => {
  event.preventDefault();
  void signIn(ui.apiUrl.value.trim().replace(/\/+$/, ""), ui.token.value.trim());
});

ui.signOut.addEventListener("click", () => {
  signOut();
  showInfo("Signed out.");
});

async function signIn(apiUrl: string, token: string): Promise<void> {
  ui.signIn.disabled = true;
  const controller = new AbortController();
  try {
    const client = createAdminClient({ baseUrl: apiUrl, token, timeoutMs: 15_000 });
    // One call first, so a wrong token or URL is told at the form rather than by a dead list.
    await client.listNodeJoins({ signal: controller.signal });
    session = { client, apiUrl, controller, cards: new Map() };
  } catch (error) {
    showError(error);
    return;
  } finally {
    ui.signIn.disabled = false;
  }
  localStorage.setItem(API_URL_KEY, apiUrl);
  ui.token.value = "";
  ui.signInForm.hidden = true;
  ui.console.hidden = false;
  ui.session.hidden = false;
  ui.signedInAs.textContent = `Signed in to ${apiUrl}`;
  ui.status.hidden = true;
  void watch(session);
}

function signOut(): void {
  if (!session) return;
  session.controller.abort();
  session = undefined;
  ui.joins.replaceChildren();
  ui.joinsEmpty.hidden = false;
  clearMinted();
  ui.watchState.textContent = "";
  ui.console.hidden = true;
  ui.session.hidden = true;
  ui.signInForm.hidden = false;
}

// ------------------------------------------------------------------ join codes

ui.mintForm.addEventListener("submit", (event) => {
  event.preventDefault();
  if (session) void mint(session);
});

async function mint(current: Session): Promise<void> {
  const data = new FormData(ui.mintForm);
  const hours = Number(data.get("ttlHours"));
  const endpoint = String(data.get("endpoint") ?? "").trim();
  ui.mint.disabled = true;
  try {
    const minted = await current.client.mintJoinCode(
      { ...(hours > 0 ? { ttlSeconds: Math.round(hours * 3600) } : {}), ...(endpoint ? { endpoint } : {}) },
      { signal: current.controller.signal },
    );
    ui.code.textContent = minted.code;
    ui.url.textContent = minted.url;
    ui.expires.textContent = new Date(minted.joinCode.expiresAt).toLocaleString();
    await QRCode.toCanvas(ui.qr, minted.url, { width: 200, margin: 1, errorCorrectionLevel: "M" });
    ui.minted.hidden = false;
    showInfo(`Minted join code ${minted.joinCode.id} for ${minted.endpoint}.`);
  } catch (error) {
    if (!isAbortError(error)) showError(error);
  } finally {
    ui.mint.disabled = false;
  }
}

/** The code is shown once and is a secret: nothing of it stays on the page after sign-out. */
function clearMinted(): void {
  ui.minted.hidden = true;
  ui.code.textContent = "";
  ui.url.textContent = "";
  ui.expires.textContent = "";
  ui.qr.getContext("2d")?.clearRect(0, 0, ui.qr.width, ui.qr.height);
}

// ------------------------------------------------------------------ the join list

async function watch(current: Session): Promise<void> {
  const { client, controller, cards } = current;
  // watchJoins yields changes only; wrapping the list call lets the page also say when a poll
  // that changed nothing succeeded, so "reconnecting" clears as soon as the API answers again.
  const lister = {
    listNodeJoins: async (options?: { signal?: AbortSignal; timeoutMs?: number }) => {
      const list = await client.listNodeJoins(options);
      ui.watchState.textContent = `Live, updated ${new Date().toLocaleTimeString()}`;
      ui.watchState.className = "watch live";
      return list;
    },
  };
  const actions = {
    approve: async (join: NodeJoin) => {
      try {
        // An empty approval takes every default: the hostname as name, role hybrid, the mgmt
        // link the NIC it registered from (spec: approveNodeJoin).
        const approved = await client.approveNodeJoin(join.id, {}, { signal: controller.signal });
        cards.get(join.id)?.update(approved);
        showInfo(`Approved ${approved.hostname ?? approved.id} as ${approved.nodeId ?? "a new node"}.`);
      } catch (error) {
        if (!isAbortError(error)) showError(error);
        throw error;
      }
    },
    reject: async (join: NodeJoin, reason: string) => {
      try {
        const rejected = await client.rejectNodeJoin(join.id, { reason }, { signal: controller.signal });
        cards.get(join.id)?.update(rejected);
        showInfo(`Rejected ${rejected.hostname ?? rejected.id}.`);
      } catch (error) {
        if (!isAbortError(error)) showError(error);
        throw error;
      }
    },
  };
  try {
    for await (const change of watchJoins(lister, {
      signal: controller.signal,
      intervalMs: POLL_MS,
      timeoutMs: 10_000,
      onRetry: (error, delayMs) => {
        ui.watchState.textContent = `Reconnecting in ${Math.ceil(delayMs / 1000)} s (${error.code})`;
        ui.watchState.className = "watch retrying";
      },
    })) {
      apply(change, cards, actions);
    }
  } catch (error) {
    if (controller.signal.aborted) return; // signed out
    ui.watchState.textContent = "Stopped";
    ui.watchState.className = "watch stopped";
    showError(error);
    // A token that no longer works cannot be fixed by polling: back to the sign-in form.
    if (error instanceof StratumApiError && error.status === 401) signOut();
  }
}

function apply(
  change: JoinChange,
  cards: Map<string, JoinCard>,
  actions: ConstructorParameters<typeof JoinCard>[1],
): void {
  if (change.type === "removed") {
    cards.get(change.id)?.element.remove();
    cards.delete(change.id);
  } else if (change.type === "changed" && cards.has(change.join.id)) {
    cards.get(change.join.id)!.update(change.join);
  } else {
    const card = new JoinCard(change.join, actions);
    cards.set(change.join.id, card);
    // Newest first, as the API lists them: before the first card created earlier than this one.
    const created = Date.parse(change.join.createdAt);
    const older = [...ui.joins.children].find(
      (li) => Date.parse((li as HTMLElement).dataset.createdAt ?? "") < created,
    );
    ui.joins.insertBefore(card.element, older ?? null);
  }
  ui.joinsEmpty.hidden = cards.size > 0;
}
