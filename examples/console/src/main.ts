/**
 * The console example: sign in with an API token, mint join codes, watch machines register,
 * approve them through a confirm step that shows their assignment, or reject them. Imports the
 * SDK's root entry only, as a console team's app would; the Node joiner
 * (`@stratum/join/node`) never reaches a browser.
 *
 * This file holds the session (sign-in and out), the watch of the join list, and the
 * server's reachability, which every other part follows: while the server does not answer,
 * actions pause, cards are marked as possibly stale, and a notice says so; when it answers
 * again, all of that clears, stale "no answer" messages included.
 * @module
 */

import {
  createAdminClient,
  isAbortError,
  StratumApiError,
  watchJoins,
  type AdminClient,
  type JoinCapacity,
  type JoinChange,
  type JoinLister,
  type JoinListPoll,
  type NodeJoin,
  type NodeRole,
} from "@stratum/join";
import { ApproveDialog } from "./approve-dialog.js";
import { CODES_REFRESH_MS, JoinCodes } from "./codes.js";
import { announce, byTestId, h } from "./dom.js";
import { StorageGate, withStorageGate } from "./disk-full.js";
import { clearFeedback, FeedbackSpot } from "./feedback.js";
import { clearMarkOnEdit, markField } from "./fields.js";
import { assignedSummary, clusterRelease, machineName } from "./format.js";
import { JoinList } from "./join-list.js";
import { describeFailure } from "./messages.js";
import { StorageNotice } from "./storage-notice.js";
import { forgetTabSession, loadTabSession, saveTabSession } from "./tab-session.js";
import { formatDuration } from "./time.js";

const ui = {
  connection: byTestId<HTMLDivElement>("connection"),
  session: byTestId<HTMLDivElement>("session"),
  signedInAs: byTestId<HTMLSpanElement>("signed-in-as"),
  signOut: byTestId<HTMLButtonElement>("sign-out"),
  signInForm: byTestId<HTMLFormElement>("sign-in-form"),
  signInTitle: document.getElementById("sign-in-title")!,
  apiUrl: byTestId<HTMLInputElement>("api-url"),
  token: byTestId<HTMLInputElement>("token"),
  signIn: byTestId<HTMLButtonElement>("sign-in"),
  console: byTestId<HTMLDivElement>("console"),
  mintTitle: document.getElementById("mint-title")!,
  watchState: byTestId<HTMLSpanElement>("watch-state"),
};

/**
 * How often the join list is polled while all is well, against a founder that cannot long-poll
 * it (no `ETag`); the reference server long-polls, so a change shows up within milliseconds.
 */
const POLL_MS = 1500;
/**
 * Retries of a failed poll: from about a second, at most 10 s apart. The console polls one
 * small list, so a short ceiling costs the server little and notices a server that is back
 * within seconds (watchJoins' default ceiling is 30 s).
 */
const RECONNECT = { baseMs: 1000, maxMs: 10_000 };
/** How often ages and countdowns are re-rendered. */
const TICK_MS = 1000;
/** The API base URL last signed in to (kept across visits: it is no secret). */
const API_URL_KEY = "stratum-console.apiUrl";

interface Session {
  client: AdminClient;
  apiUrl: string;
  /** Aborts the watch and every call in flight on sign-out. */
  controller: AbortController;
  online: boolean;
  /** The sign-in's answer of the join list, which the watch starts from (taken once). */
  first?: JoinListPoll | undefined;
  /** When the server was last found unreachable, and when the next try is. */
  lostSince?: number;
  retryAt?: number;
}

let session: Session | undefined;
/** The roles the founder takes, from its last answer (`capacity.roles`); the dialog offers only these. */
let roles: readonly NodeRole[] | undefined;
const signInFeedback = new FeedbackSpot("sign-in-feedback", () => ui.signInTitle);
ui.signInForm.append(signInFeedback.element);
const codes = new JoinCodes();
// Every write goes through the gate (withStorageGate, at sign-in): a full disk pauses them all.
const storageNotice = new StorageNotice(
  () => gate.stop(),
  () => ui.mintTitle,
);
const gate = new StorageGate({
  changed: (state) => {
    storageNotice.show(state, Date.now());
    refreshPaused();
  },
  saved: () => clearFeedback("storage"),
});
const dialog = new ApproveDialog({
  preview: async (join, approval, signal) =>
    (await session!.client.previewApproval(join.id, approval, { signal, timeoutMs: 10_000 })).assignment,
  approve: (join, approval) => act((client, o) => client.approveNodeJoin(join.id, approval, o)),
  apiUrl: () => session?.apiUrl ?? ui.apiUrl.value,
});
const list = new JoinList(JoinList.elements(), {
  approve: (card) => {
    if (!session) return;
    void dialog
      .open(card.join, () => card.focusAfterApprove(), roles)
      .then((approved) => {
        if (!approved) return;
        // What the founder assigned, as it answered: the name, node id and addresses it will have.
        const assigned = assignedSummary(approved);
        card.feedback.success(
          `Approved ${machineName(approved)}${assigned ? `; it becomes ${assigned}` : approved.nodeId ? `; it becomes node ${approved.nodeId}` : ""}. The card follows its install.`,
        );
      });
  },
  expire: (join) => act((client, o) => client.expireNodeJoin(join.id, o)),
  log: async (join, signal) =>
    (await session!.client.getNodeJoin(join.id, { signal, timeoutMs: 10_000 })).logTail ?? [],
  reject: (join, reason) => act((client, o) => client.rejectNodeJoin(join.id, { reason }, o)),
  fail: (join, reason) => act((client, o) => client.failNodeJoin(join.id, { reason }, o)),
  retry: (join) => act((client, o) => client.retryNodeJoin(join.id, o)),
  apiUrl: () => session?.apiUrl ?? ui.apiUrl.value,
});

/** Runs an action on a join with the session's client and shows the join it answers with. */
async function act(
  call: (client: AdminClient, options: { signal: AbortSignal; timeoutMs: number }) => Promise<NodeJoin>,
): Promise<NodeJoin> {
  const current = session!;
  const join = await call(current.client, { signal: current.controller.signal, timeoutMs: 15_000 });
  list.show(join);
  return join;
}

window.setInterval(() => {
  const now = Date.now();
  list.tick(now);
  codes.tick(now);
  if (session && !session.online) renderConnection(session, now);
  storageNotice.tick(now);
}, TICK_MS);

// ------------------------------------------------------------------ signing in and out

ui.apiUrl.value = localStorage.getItem(API_URL_KEY) ?? ui.apiUrl.value;
for (const input of [ui.apiUrl, ui.token]) clearMarkOnEdit(input);
resumeSession();

/** Signs in again with this tab's session after a reload, if it has one (tab-session.ts). */
function resumeSession(): void {
  const saved = loadTabSession();
  if (!saved) {
    document.documentElement.classList.remove("resuming");
    return;
  }
  ui.apiUrl.value = saved.apiUrl;
  // A session that fails (the token no longer taken, no answer) shows the form, with why.
  void signIn(saved.apiUrl, saved.token).finally(() => {
    if (!session) document.documentElement.classList.remove("resuming");
  });
}

ui.signInForm.addEventListener("submit", (event) => {
  event.preventDefault();
  void signIn(ui.apiUrl.value.trim().replace(/\/+$/, ""), ui.token.value.trim());
});

ui.signOut.addEventListener("click", () => {
  signOut();
  signInFeedback.success("Signed out.");
  ui.token.focus();
});

async function signIn(apiUrl: string, token: string): Promise<void> {
  signInFeedback.clear();
  markField(
    ui.apiUrl,
    /^https?:\/\/[^/]+/.test(apiUrl) ? undefined : "Enter the API's address, e.g. http://127.0.0.1:8080.",
  );
  markField(ui.token, token ? undefined : "Paste the API token.");
  const invalid = ui.signInForm.querySelector<HTMLInputElement>('[aria-invalid="true"]');
  if (invalid) {
    invalid.focus();
    return;
  }
  ui.signIn.disabled = true;
  const controller = new AbortController();
  let client: AdminClient;
  let first: JoinListPoll;
  try {
    client = withStorageGate(createAdminClient({ baseUrl: apiUrl, token, timeoutMs: 15_000 }), gate);
    // One call first, so a wrong token or URL is told at the form rather than by a dead list;
    // its answer is the watch's first, not asked for again.
    first = await client.pollNodeJoins({ signal: controller.signal });
  } catch (error) {
    const report = describeFailure(error, { apiUrl });
    // A refused token is the token field's fault, no answer the address's: said at the field.
    const field = report.kind === "auth" ? ui.token : report.kind === "network" ? ui.apiUrl : undefined;
    // A tab's saved session the API no longer takes is over.
    if (report.kind === "auth") forgetTabSession();
    if (field) markField(field, report.summary);
    else signInFeedback.failure(describeFailure(error, { action: "sign in", apiUrl }));
    (field ?? ui.signInTitle).focus();
    return;
  } finally {
    ui.signIn.disabled = false;
  }
  session = { client, apiUrl, controller, online: true, first };
  localStorage.setItem(API_URL_KEY, apiUrl);
  saveTabSession({ apiUrl, token });
  ui.token.value = "";
  ui.signInForm.hidden = true;
  ui.console.hidden = false;
  ui.session.hidden = false;
  ui.signedInAs.textContent = `Signed in to ${apiUrl}`;
  const codesListed = codes.start({ client, signal: controller.signal, apiUrl });
  setOnline(session, true);
  ui.mintTitle.focus();
  void watch(session);
  if (document.documentElement.classList.contains("resuming")) {
    // A reloaded tab appears once its codes and machines are in, at most 3 s from now.
    const shown = Promise.all([codesListed, list.firstShown()]);
    await Promise.race([shown, new Promise((resolve) => window.setTimeout(resolve, 3000))]);
    document.documentElement.classList.remove("resuming");
    ui.mintTitle.focus();
  }
}

function signOut(): void {
  forgetTabSession();
  if (!session) return;
  session.controller.abort();
  session = undefined;
  if (dialog.element.open) dialog.element.close();
  list.clear();
  codes.stop();
  ui.connection.replaceChildren();
  ui.watchState.textContent = "";
  ui.console.hidden = true;
  ui.session.hidden = true;
  ui.signInForm.hidden = false;
}

// ------------------------------------------------------------------ the server's reachability

function setOnline(current: Session, online: boolean, retryInMs?: number, error?: unknown): void {
  const was = current.online;
  current.online = online;
  if (online) {
    current.lostSince = undefined;
    current.retryAt = undefined;
  } else {
    current.lostSince ??= Date.now();
    current.retryAt = Date.now() + (retryInMs ?? 0);
  }
  list.setOnline(online);
  codes.setOnline(online);
  refreshPaused();
  ui.watchState.textContent = online ? "Live" : "Not answering";
  ui.watchState.className = `watch ${online ? "live" : "retrying"}`;
  renderConnection(current, Date.now(), error);
  if (online && !was) {
    clearFeedback("network");
    announce("The server answers again; the list is up to date.");
  }
}

/** Pauses the writes while the founder's disk is full, and approving too while the server does not answer. */
function refreshPaused(): void {
  const full = gate.state !== undefined;
  list.setWritable(!full);
  codes.setWritable(!full);
  dialog.setPaused(
    session && !session.online
      ? "The server is not answering: approving is paused until it does."
      : full
        ? "The cluster's disk is full: approving is paused until it saves again."
        : undefined,
  );
}

/** The notice while the server does not answer; empty (and hidden) otherwise. */
function renderConnection(current: Session, now: number, error?: unknown): void {
  if (current.online) {
    ui.connection.replaceChildren();
    return;
  }
  const why = error instanceof StratumApiError ? `answers with errors (${error.status})` : "is not answering";
  const lost = current.lostSince ? now - current.lostSince : 0;
  // Under a few seconds a duration says nothing; the sentence reads better without it.
  const since = lost >= 5_000 ? ` (for ${formatDuration(lost)})` : "";
  const next =
    current.retryAt && current.retryAt - now >= 1_000
      ? `Trying again in ${formatDuration(current.retryAt - now)}.`
      : "Trying again now.";
  const existing = ui.connection.querySelector<HTMLElement>('[data-testid="connection-text"]');
  const text = `The server at ${current.apiUrl} ${existing?.dataset.why ?? why}${since}. ${next}`;
  if (existing) {
    // Only the clock moved: the text is updated in place, so the alert is not read out again.
    existing.firstChild!.textContent = text;
    return;
  }
  const line = h("p", { "data-testid": "connection-text", "data-why": why }, h("strong", {}, text));
  ui.connection.replaceChildren(
    line,
    h(
      "p",
      {},
      "What you see may be out of date. Approving, rejecting, failing, retrying, minting and revoking are paused until it answers.",
    ),
  );
}

// ------------------------------------------------------------------ the join list

async function watch(current: Session): Promise<void> {
  const { client, controller } = current;
  // watchJoins yields changes only; wrapping the list calls lets the page also see a poll that
  // changed nothing succeed, so the outage notice clears as soon as the API answers again. The
  // long poll is passed on, so a machine that registers shows up at once, not at the next poll.
  const answered = (answer?: { items: readonly NodeJoin[]; capacity?: JoinCapacity | undefined }): void => {
    if (!current.online) setOnline(current, true);
    if (!answer) return;
    codes.suggestRelease(clusterRelease(answer.items));
    roles = answer.capacity?.roles;
    // After the watch has applied the answer's changes: the capacity speaks of the same list.
    window.setTimeout(() => list.setCapacity(answer.capacity), 0);
  };
  const lister: JoinLister = {
    listNodeJoins: async (options) => {
      const answer = await client.listNodeJoins(options);
      answered(answer);
      return answer;
    },
    pollNodeJoins: async (options) => {
      const seed = current.first;
      current.first = undefined;
      const answer = seed && options.etag === undefined ? seed : await client.pollNodeJoins(options);
      answered(answer.changed ? answer : undefined);
      return answer;
    },
  };
  try {
    for await (const change of watchJoins(lister, {
      signal: controller.signal,
      intervalMs: POLL_MS,
      timeoutMs: 10_000,
      backoff: RECONNECT,
      onRetry: (error, delayMs) => setOnline(current, false, delayMs, error),
    })) {
      apply(change);
    }
  } catch (error) {
    if (controller.signal.aborted) return; // signed out
    ui.watchState.textContent = "Stopped";
    ui.watchState.className = "watch stopped";
    const report = describeFailure(error, { action: "keep the machine list up to date", apiUrl: current.apiUrl });
    if (error instanceof StratumApiError && error.status === 401) {
      // A token that no longer works cannot be fixed by polling: back to the sign-in form.
      signOut();
      markField(ui.token, "Your session ended: the API token is no longer accepted. Sign in again.");
      ui.token.focus();
      return;
    }
    const again = h("button", { type: "button", "data-testid": "watch-restart" }, "Try again");
    again.addEventListener("click", () => {
      ui.connection.replaceChildren();
      void watch(current);
    });
    ui.connection.replaceChildren(
      h("p", {}, h("strong", {}, report.summary)),
      ...(report.reference ? [h("p", {}, report.reference)] : []),
      again,
    );
  }
}

function apply(change: JoinChange): void {
  list.apply(change, Date.now());
  // A new registration changes its code's count of machines.
  if (change.type === "added" && session) void codes.refresh();
}

// Live codes change by themselves (expiry, other consoles, registrations): list them again now and then.
window.setInterval(() => {
  if (session?.online) void codes.refresh();
}, CODES_REFRESH_MS);

window.addEventListener("unhandledrejection", (event) => {
  // An abort on sign-out is expected; anything else is a bug worth seeing in the console.
  if (isAbortError(event.reason)) event.preventDefault();
});
