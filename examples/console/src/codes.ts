/**
 * Join codes: minting one (its fields' errors on the fields), showing it once with copy
 * buttons for the code, the URL and a ready `stratum-join register` command, a QR code, and
 * its expiry in local time with a countdown; and the list of live codes, each revocable after
 * a confirmation.
 * @module
 */

import { isAbortError, type AdminClient, type JoinCodeInfo, type MintedJoinCode } from "@stratum/join";
import { confirmAction } from "./confirm-dialog.js";
import { breakableCommand, breakableUrl, byTestId, copyButton, groupedCode, h } from "./dom.js";
import { FeedbackSpot } from "./feedback.js";
import { clearMarkOnEdit, markField } from "./fields.js";
import { describeFailure } from "./messages.js";
import { formatCountdown, formatLocalTime, isPast } from "./time.js";

/** Where the joiner keeps its identity and session on a machine, as the CLI reference names it. */
const IDENTITY_DIR = "/var/lib/stratum-join";
/** The cluster release last typed, so the command is ready on the next visit too. */
const RELEASE_KEY = "stratum-console.release";
/** How often the live codes are listed again (a machine registering changes their counts). */
export const CODES_REFRESH_MS = 30_000;

/** The session the codes panel works in. */
export interface CodesSession {
  client: AdminClient;
  signal: AbortSignal;
  apiUrl: string;
}

/**
 * The `stratum-join register` command a machine runs, quoted for a POSIX shell. The URL holds
 * the code, so the command is as secret as the code.
 */
export function registerCommand(url: string, release: string): string {
  const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;
  // Without the release the command is unfinished: a placeholder word, never `<release>` (a
  // shell reads that as a redirect from a file), and the page does not offer it for copying.
  return `stratum-join register --url ${quote(url)} --identity ${IDENTITY_DIR} --release ${release ? quote(release) : "RELEASE"}`;
}

/** The join code panel of the page. */
export class JoinCodes {
  private session: CodesSession | undefined;
  private minted: MintedJoinCode | undefined;
  private codes: JoinCodeInfo[] = [];
  private online = true;
  private writable = true;
  private minting = false;
  private readonly ui = {
    form: byTestId<HTMLFormElement>("mint-form"),
    mint: byTestId<HTMLButtonElement>("mint"),
    ttl: byTestId<HTMLInputElement>("ttl-hours"),
    endpoint: byTestId<HTMLInputElement>("endpoint"),
    release: byTestId<HTMLInputElement>("cluster-release"),
    minted: byTestId<HTMLDivElement>("minted"),
    code: byTestId<HTMLElement>("join-code"),
    url: byTestId<HTMLElement>("join-url"),
    command: byTestId<HTMLElement>("join-command"),
    expires: byTestId<HTMLElement>("join-expires"),
    qr: byTestId<HTMLCanvasElement>("join-qr"),
    list: byTestId<HTMLUListElement>("codes"),
    none: byTestId<HTMLElement>("codes-none"),
    codesTitle: byTestId<HTMLElement>("codes-title"),
    mintTitle: byTestId<HTMLElement>("mint-title"),
  };
  private readonly copyCommand = copyButton("Copy command", "Command", () => this.command(), "copy-command");
  private readonly commandHint = h(
    "span",
    { class: "hint", id: "command-hint", "data-testid": "command-hint", hidden: "" },
    "Type the cluster release above to complete the command.",
  );
  private readonly feedback = new FeedbackSpot("mint-feedback", () => this.ui.mintTitle);
  private readonly listFeedback = new FeedbackSpot("codes-feedback", () => this.ui.codesTitle);

  constructor() {
    this.ui.form.after(this.feedback.element);
    this.ui.list.before(this.listFeedback.element);
    this.ui.release.value = localStorage.getItem(RELEASE_KEY) ?? "";
    this.ui.release.addEventListener("input", () => {
      localStorage.setItem(RELEASE_KEY, this.ui.release.value.trim());
      this.renderCommand();
    });
    byTestId("copy-code-slot").replaceWith(
      copyButton("Copy code", "Join code", () => this.minted?.code ?? "", "copy-code"),
    );
    byTestId("copy-url-slot").replaceWith(copyButton("Copy URL", "Join URL", () => this.minted?.url ?? "", "copy-url"));
    byTestId("copy-command-slot").replaceWith(this.copyCommand, this.commandHint);
    this.ui.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.mint();
    });
    for (const input of [this.ui.ttl, this.ui.endpoint]) clearMarkOnEdit(input);
  }

  /** Starts working for a signed-in session; resolves once the live codes are listed (or failed to be). */
  start(session: CodesSession): Promise<void> {
    this.session = session;
    return this.refresh();
  }

  /** Signs out: nothing of a code stays on the page (it is a secret, shown once). */
  stop(): void {
    this.session = undefined;
    this.clearMinted();
    this.codes = [];
    this.renderList(Date.now());
    this.feedback.clear();
    this.listFeedback.clear();
  }

  /** Suggests the cluster's release for the command when none was typed (learnt from the machines). */
  suggestRelease(release: string | undefined): void {
    if (!release || this.ui.release.value.trim()) return;
    this.ui.release.value = release;
    this.renderCommand();
  }

  /** Pauses or resumes minting and revoking with the server's reachability. */
  setOnline(online: boolean): void {
    const back = online && !this.online;
    this.online = online;
    this.refreshButtons();
    if (back) void this.refresh();
  }

  /** Pauses or resumes minting and revoking while the cluster cannot save (its disk is full). */
  setWritable(writable: boolean): void {
    this.writable = writable;
    this.refreshButtons();
  }

  /** Minting and revoking write: both wait for a server that answers and can save. */
  private get paused(): boolean {
    return !this.online || !this.writable;
  }

  private refreshButtons(): void {
    if (!this.minting) this.ui.mint.disabled = this.paused;
    for (const button of this.ui.list.querySelectorAll("button")) button.disabled = this.paused;
  }

  /** Re-renders the countdowns. */
  tick(now: number): void {
    if (this.minted) this.ui.expires.textContent = fullExpiry(this.minted.joinCode.expiresAt, now);
    if (this.codes.some((c) => isPast(c.expiresAt, now))) this.renderList(now);
    else
      for (const row of this.ui.list.querySelectorAll<HTMLElement>("[data-expires-at]"))
        row.textContent = expiry(row.dataset.expiresAt, now);
  }

  /** Lists the live codes again. */
  async refresh(): Promise<void> {
    const session = this.session;
    if (!session) return;
    try {
      const { items } = await session.client.listJoinCodes({ signal: session.signal, timeoutMs: 10_000 });
      if (this.session !== session) return;
      // A burned code stays listed until it would have expired: the operator sees who burned it.
      this.codes = items.filter((c) => c.state === "live" || c.revokedBy === BURNED_BY);
      if (this.listFeedback.kind === "network") this.listFeedback.clear();
      this.renderList(Date.now());
    } catch (error) {
      if (!isAbortError(error) && this.session === session)
        this.listFeedback.failure(describeFailure(error, { action: "list the join codes", apiUrl: session.apiUrl }));
    }
  }

  private async mint(): Promise<void> {
    const session = this.session;
    if (!session || this.paused) return;
    const hours = Number(this.ui.ttl.value);
    const endpoint = this.ui.endpoint.value.trim();
    this.minting = true;
    this.ui.mint.disabled = true;
    markField(this.ui.ttl, undefined);
    markField(this.ui.endpoint, undefined);
    try {
      const minted = await session.client.mintJoinCode(
        { ...(hours > 0 ? { ttlSeconds: Math.round(hours * 3600) } : {}), ...(endpoint ? { endpoint } : {}) },
        { signal: session.signal, timeoutMs: 15_000 },
      );
      this.minted = minted;
      this.ui.code.replaceChildren(groupedCode(minted.code));
      this.ui.url.replaceChildren(breakableUrl(minted.url));
      this.renderCommand();
      this.ui.expires.textContent = fullExpiry(minted.joinCode.expiresAt, Date.now());
      // Loaded when a code is first minted: a page that only approves never parses it.
      const { default: QRCode } = await import("qrcode");
      await QRCode.toCanvas(this.ui.qr, minted.url, { width: 200, margin: 1, errorCorrectionLevel: "M" });
      this.ui.minted.hidden = false;
      this.feedback.success(
        `Minted join code ${minted.joinCode.selector}… (${minted.joinCode.id}) for ${minted.endpoint}.`,
      );
      await this.refresh();
    } catch (error) {
      if (isAbortError(error)) return;
      const report = describeFailure(error, { action: "mint a join code", apiUrl: session.apiUrl });
      const shown = new Set<string>();
      for (const problem of report.fields) {
        const input =
          problem.field === "endpoint" ? this.ui.endpoint : problem.field === "ttlSeconds" ? this.ui.ttl : undefined;
        if (!input) continue;
        markField(input, problem.message);
        shown.add(problem.field);
      }
      this.feedback.failure(report, shown);
      if (shown.has("endpoint")) this.ui.endpoint.focus();
      else if (shown.has("ttlSeconds")) this.ui.ttl.focus();
    } finally {
      this.minting = false;
      this.ui.mint.disabled = this.paused;
    }
  }

  private command(): string {
    return this.minted ? registerCommand(this.minted.url, this.ui.release.value.trim()) : "";
  }

  private renderCommand(): void {
    if (!this.minted) return;
    this.ui.command.replaceChildren(breakableCommand(this.command()));
    // An unfinished command is not offered for copying: pasted, it would fail on the machine.
    const missing = this.ui.release.value.trim() === "";
    this.copyCommand.disabled = missing;
    this.commandHint.hidden = !missing;
    if (missing) this.copyCommand.setAttribute("aria-describedby", "command-hint");
    else this.copyCommand.removeAttribute("aria-describedby");
  }

  private clearMinted(): void {
    this.minted = undefined;
    this.ui.minted.hidden = true;
    for (const el of [this.ui.code, this.ui.url, this.ui.command, this.ui.expires]) el.textContent = "";
    this.ui.qr.getContext("2d")?.clearRect(0, 0, this.ui.qr.width, this.ui.qr.height);
  }

  private renderList(now: number): void {
    const live = this.codes.filter((c) => !isPast(c.expiresAt, now));
    this.ui.none.hidden = live.length > 0 || !this.session;
    this.ui.list.replaceChildren(...live.map((code) => this.row(code, now)));
  }

  private row(code: JoinCodeInfo, now: number): HTMLLIElement {
    const label = `${code.selector}… (${code.id})`;
    const revoke = h("button", { type: "button", class: "danger", "data-testid": "revoke" }, "Revoke…");
    revoke.disabled = this.paused;
    revoke.setAttribute("aria-label", `Revoke join code ${label}`);
    revoke.addEventListener("click", () => void this.revoke(code, revoke));
    const registered = code.registrations ?? 0;
    const burned = code.revokedBy === BURNED_BY;
    const attempts = attemptsLine(code);
    return h(
      "li",
      { class: "code-row", "data-testid": "code-row", "data-code-id": code.id },
      h(
        "div",
        {},
        h("strong", {}, h("code", {}, `${code.selector}…`)),
        " ",
        h("span", { class: "group" }, code.id),
        this.minted?.joinCode.id === code.id ? " (shown above)" : "",
      ),
      h(
        "div",
        { class: "muted" },
        `Expires ${formatLocalTime(code.expiresAt)}, `,
        h("span", { "data-expires-at": code.expiresAt, "data-testid": "code-countdown" }, expiry(code.expiresAt, now)),
      ),
      h(
        "div",
        { class: "muted" },
        `${registered} ${registered === 1 ? "machine" : "machines"} registered with it · for ${code.endpoint}`,
      ),
      ...(burned
        ? [
            h(
              "div",
              { class: "code-burned", "data-testid": "code-burned" },
              "Burned: revoked after too many attempts that did not prove it. Mint a new code; look at where the attempts came from.",
            ),
          ]
        : []),
      ...(attempts ? [h("div", { class: "muted", "data-testid": "code-attempts" }, attempts)] : []),
      h("div", { class: "actions" }, ...(burned ? [] : [revoke])),
    );
  }

  private async revoke(code: JoinCodeInfo, button: HTMLButtonElement): Promise<void> {
    const session = this.session;
    if (!session) return;
    const label = `${code.selector}… (${code.id})`;
    const revoked = await confirmAction({
      title: `Revoke join code ${label}?`,
      body: [
        "It stops working at once: no new machine can register with it.",
        `The ${code.registrations ?? 0} machine(s) that already registered with it are kept, and can still be approved.`,
      ],
      confirmLabel: "Revoke code",
      action: `revoke join code ${label}`,
      apiUrl: session.apiUrl,
      run: async () => {
        await session.client.revokeJoinCode(code.id, { signal: session.signal, timeoutMs: 15_000 });
      },
      restore: () => (button.isConnected ? button : this.ui.codesTitle),
    });
    if (!revoked || this.session !== session) return;
    if (this.minted?.joinCode.id === code.id) {
      this.clearMinted();
      // "Minted join code …" is about a code that no longer works.
      if (this.feedback.tone === "success") this.feedback.clear();
    }
    this.codes = this.codes.filter((c) => c.id !== code.id);
    this.renderList(Date.now());
    this.listFeedback.success(`Revoked join code ${label}. Machines that registered with it are kept.`);
    this.ui.codesTitle.focus();
    void this.refresh();
  }
}

/** Who revokes a code whose attempts reached the limit. */
const BURNED_BY = "system:too-many-attempts";

/** "3 attempts that did not prove it, from 192.0.2.66 (2), 2001:db8:1:2::/64 (1)", or "" for a code with none. */
function attemptsLine(code: JoinCodeInfo): string {
  const sources = code.attemptSources ?? [];
  if (!code.attempts || sources.length === 0) return "";
  const from = sources.map((s) => `${s.source} (${s.attempts})`).join(", ");
  return `${code.attempts} ${code.attempts === 1 ? "attempt" : "attempts"} that did not prove it, from ${from}`;
}

/** "in 3 h 12 min", or "expired 5 min ago". */
function expiry(iso: string | undefined, now: number): string {
  return `${isPast(iso, now) ? "expired " : ""}${formatCountdown(iso, now) ?? ""}`;
}

/** "30 Nov 2026, 21:29 CET (in 3 h 12 min)". */
function fullExpiry(iso: string | undefined, now: number): string {
  return `${formatLocalTime(iso) ?? ""} (${expiry(iso, now)})`;
}
