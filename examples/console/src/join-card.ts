/**
 * One machine's card in the join list: who it is (hostname, join id, short key fingerprint,
 * serial, MACs), its pairing code, when it registered and was last heard from, where its join
 * stands in words (with the install's steps), a warning when its clock is off, its hardware, its own feedback spot, and the
 * approve and reject actions its state allows.
 * @module
 */

import { clockWarning, type NodeJoin } from "@stratum/join";
import { groupedCode, h, nowrapIds } from "./dom.js";
import { FeedbackSpot } from "./feedback.js";
import {
  assignedSummary,
  canApprove,
  canReject,
  explainState,
  installProgress,
  isOver,
  macsOf,
  machineName,
  shortFingerprint,
  STATE_WORDS,
  summarizeHardware,
} from "./format.js";
import { describeFailure } from "./messages.js";
import { ReasonForm } from "./reason-form.js";
import { RunActions, type RunActionCalls } from "./run-actions.js";
import { InstallLog } from "./install-log.js";
import { formatAgo, formatDuration, formatLocalTime } from "./time.js";

/** Sets an element's text only when it differs: no needless change under a screen reader's cursor. */
function setText(element: HTMLElement, text: string): void {
  if (element.textContent !== text) element.textContent = text;
}

/** States that end what an approval started: a success message about it is then stale. */
const OUTCOMES = new Set(["joined", "failed", "rejected", "expired"]);

/** What a card asks of the page (failing and retrying: run-actions.ts). */
export interface CardActions extends RunActionCalls {
  /** Opens the approve dialog for the card's machine. */
  approve(card: JoinCard): void;
  /** Rejects; resolves with the rejected join or rejects with the SDK's error. */
  reject(join: NodeJoin, reason: string): Promise<NodeJoin>;
  /** The API's base URL, for a failure's wording. */
  apiUrl(): string;
  /** The join's install log, the last lines the founder keeps (admin client `getNodeJoin`'s `logTail`). */
  log(join: NodeJoin, signal: AbortSignal): Promise<string[]>;
}

/**
 * A card, created once per join and then updated in place: re-creating it on every poll would
 * throw away a reason being typed into the reject form, and the focus with it.
 */
export class JoinCard {
  readonly element: HTMLLIElement;
  readonly feedback: FeedbackSpot;
  private joinView: NodeJoin;
  private busy = false;
  private online = true;
  private writable = true;
  private readonly run: RunActions;
  private readonly title = h("h3", { "data-testid": "join-hostname", tabindex: "-1" });
  private readonly state = h("span", { class: "state", "data-testid": "join-state" });
  private readonly stale = h("span", { class: "stale", "data-testid": "join-stale", hidden: "" }, "May be out of date");
  private readonly who = h("p", { class: "who", "data-testid": "join-who" });
  private readonly pairing = h("span", { class: "pairing-code", "data-testid": "pairing-code" });
  private readonly times = h("p", { class: "times", "data-testid": "join-times" });
  private readonly explain = h("p", { class: "explain", "data-testid": "join-explain" });
  private readonly clock = h("p", { class: "clock-warning", "data-testid": "join-clock", hidden: "" });
  private readonly assigned = h("p", { class: "assigned", "data-testid": "join-assigned", hidden: "" });
  private readonly installLog: InstallLog;
  private readonly steps = h("ol", { class: "steps", "data-testid": "join-steps" });
  private readonly hardware = h("dl", { class: "hardware", "data-testid": "join-hardware" });
  private readonly more = h("dl", { class: "hardware" });
  private readonly approveButton = h(
    "button",
    { type: "button", class: "primary", "data-testid": "approve" },
    "Approve…",
  );
  private readonly reject: ReasonForm;

  constructor(
    join: NodeJoin,
    private readonly actions: CardActions,
  ) {
    this.joinView = join;
    const id = join.id;
    this.title.id = `title-${id}`;
    this.feedback = new FeedbackSpot("card-feedback", () => this.title);
    const pairingLabel = `pairing-${id}`;
    this.pairing.setAttribute("aria-labelledby", pairingLabel);
    // An empty reason is told in the page's own words at the field, as for Fail.
    this.reject = new ReasonForm(
      {
        name: "reject",
        ids: { form: `reject-form-${id}`, reason: `reason-${id}`, hint: `reason-hint-${id}` },
        button: "Reject…",
        label: "Reason for rejecting",
        hint: "The machine is shown this reason as you write it.",
        confirm: "Reject",
        busy: "Rejecting…",
        missing: { message: "Give a reason: the machine is shown it.", id: `reason-error-${id}` },
      },
      (reason) => void this.submitReject(reason),
    );
    this.run = new RunActions(this, actions);
    this.installLog = new InstallLog(id, (signal) => this.actions.log(this.joinView, signal));

    this.element = h(
      "li",
      { class: "join", "data-testid": "join", "data-join-id": id, "aria-labelledby": this.title.id },
      h("div", { class: "join-head" }, this.title, h("span", { class: "chips" }, this.stale, this.state)),
      this.who,
      h("div", { class: "pairing" }, h("span", { id: pairingLabel, class: "label" }, "Pairing code"), this.pairing),
      this.times,
      this.explain,
      this.assigned,
      this.clock,
      this.steps,
      this.hardware,
      h("details", { class: "more" }, h("summary", {}, "More about this machine"), this.more),
      this.installLog.element,
      this.feedback.element,
      h("div", { class: "actions" }, this.approveButton, this.reject.button, this.run.retryButton, this.run.failButton),
      this.reject.form,
      this.run.form,
    );

    this.approveButton.addEventListener("click", () => this.actions.approve(this));
    this.update(join, Date.now());
  }

  /** The join as last seen. */
  get join(): NodeJoin {
    return this.joinView;
  }

  /** Shows a newer view of the join. */
  update(join: NodeJoin, now: number): void {
    // "Approved …; the card follows its install" is over once the install has an outcome.
    if (join.state !== this.joinView.state && OUTCOMES.has(join.state) && this.feedback.tone === "success")
      this.feedback.clear();
    this.joinView = join;
    this.title.textContent = join.hostname || "unnamed machine";
    this.element.dataset.state = join.state;
    this.element.dataset.createdAt = join.createdAt;
    this.state.textContent = join.stalled ? `${STATE_WORDS[join.state]}, silent` : STATE_WORDS[join.state];
    this.state.className = `state state-${join.state}${join.stalled ? " stalled" : ""}`;
    // What the founder assigned, once approved: the name, node id and addresses it will have.
    const assigned = assignedSummary(join);
    this.assigned.hidden = assigned === undefined;
    this.assigned.replaceChildren(
      ...(assigned ? [h("span", { class: "label" }, "Becomes "), nowrapIds(assigned)] : []),
    );
    this.pairing.replaceChildren(groupedCode(join.pairingCode));
    const key = shortFingerprint(join.keyFingerprint);
    const macs = macsOf(join.inventory);
    this.who.replaceChildren(
      ...[
        join.id,
        key && `key\u00a0${key}…`,
        join.systemSerial && `serial\u00a0${join.systemSerial}`,
        ...macs.map((mac, i) => (i ? mac : `MAC ${mac}`)),
      ]
        .filter((part): part is string => Boolean(part))
        .map((part) => h("span", {}, part)),
    );
    // A machine whose clock is off joins all the same (docs/protocol.md#founder-time); its
    // clock needs fixing, so the card says so.
    const clock = clockWarning(join.inventory?.clock);
    this.clock.hidden = clock === undefined;
    setText(this.clock, clock ? `${clock.replace(/^the machine's clock/, "Its clock")}.` : "");
    this.hardware.replaceChildren(
      ...summarizeHardware(join.inventory).flatMap(({ term, value }) => [
        h("dt", {}, term),
        h("dd", {}, ...(Array.isArray(value) ? value.map((line) => h("span", { class: "line" }, line)) : [value])),
      ]),
    );
    const more: [string, string | undefined][] = [
      ["Release", join.release],
      ["Registered from", join.sourceAddr],
      ["Key fingerprint", join.keyFingerprint],
      ["Join code", join.codeId],
      ["Node id", join.nodeId],
      [
        "Approved",
        join.approvedAt && `${formatLocalTime(join.approvedAt)}${join.approvedBy ? ` by ${join.approvedBy}` : ""}`,
      ],
      [
        "Rejected",
        join.rejectedAt && `${formatLocalTime(join.rejectedAt)}${join.rejectedBy ? ` by ${join.rejectedBy}` : ""}`,
      ],
    ];
    this.more.replaceChildren(
      ...more.filter(([, v]) => v).flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value!)]),
    );
    if (!canReject(join.state)) this.reject.close();
    this.run.update(join);
    this.installLog.update(join);
    this.tick(now);
    this.refreshButtons();
  }

  /** Re-renders what depends on the clock: ages, countdowns, elapsed times. */
  tick(now: number): void {
    const join = this.joinView;
    const parts = [`Registered ${formatAgo(join.createdAt, now)}`];
    const seen = formatAgo(join.lastSeenAt, now);
    if (seen && join.state !== "joined" && join.state !== "rejected" && join.state !== "expired")
      parts.push(`last heard from ${seen}`);
    setText(this.times, `${parts.join(", ")}.`);
    this.times.title = formatLocalTime(join.createdAt) ?? "";
    const stalled = join.stalled ? " It has been silent for a while: check its console." : "";
    setText(this.explain, explainState(join, now) + stalled);
    this.renderSteps(join, now);
  }

  /** Pauses or resumes the actions with the server's reachability, and marks the card as possibly stale. */
  setOnline(online: boolean): void {
    this.online = online;
    this.stale.hidden = online;
    this.element.classList.toggle("is-stale", !online);
    this.refreshButtons();
  }

  /** Pauses or resumes the actions that write while the cluster cannot save (its disk is full). */
  setWritable(writable: boolean): void {
    this.writable = writable;
    this.refreshButtons();
  }

  /** Focuses the card's heading: where the focus lands after an action that hid its button. */
  focusHeading(): void {
    this.title.focus();
  }

  /** Where the focus goes after the approve dialog closes: the button, or the heading once it is hidden. */
  focusAfterApprove(): HTMLElement {
    return this.approveButton.hidden ? this.title : this.approveButton;
  }

  /** Opens the card's Fail form (from the stuck-join notice). */
  openFail(): void {
    this.run.openFail();
  }

  /** Stops tracking the card's feedback and its log (the card is gone). */
  dispose(): void {
    this.feedback.dispose();
    this.installLog.dispose();
  }

  private renderSteps(join: NodeJoin, now: number): void {
    const show =
      join.state === "installing" || join.state === "delivering" || join.state === "failed" || join.state === "joined";
    const progress = installProgress(join, now);
    this.steps.hidden = !show || !progress || join.state === "joined";
    if (this.steps.hidden) return;
    this.steps.setAttribute("aria-label", `Install steps, ${progress!.headline}`);
    // Once the join ended, a step still "running" never finished: its clock stopped with the join.
    const over = isOver(join.state);
    const rows = join.steps.map((step) => {
      const started = step.at ? Date.parse(step.at) : NaN;
      const running =
        step.status === "running" && !Number.isNaN(started) ? `, for ${formatDuration(now - started)}` : "";
      const word = {
        done: "done",
        running: over ? "did not finish" : `running${running}`,
        failed: `failed${step.message ? `: ${step.message}` : ""}`,
      }[step.status];
      return { status: step.status, title: step.title || step.name, word: ` ${word}` };
    });
    // Rebuilt only when the steps change; the clock only moves the running step's time.
    const items = [...this.steps.children];
    const same = items.length === rows.length && rows.every((r, i) => items[i]!.classList.contains(`step-${r.status}`));
    if (!same) {
      this.steps.replaceChildren(
        ...rows.map((r) =>
          h(
            "li",
            { class: `step step-${r.status}` },
            h("span", { class: "step-title" }, r.title),
            h("span", { class: "step-status" }),
          ),
        ),
      );
    }
    rows.forEach((r, i) => {
      const [title, status] = this.steps.children[i]!.children as unknown as [HTMLElement, HTMLElement];
      setText(title, r.title);
      setText(status, r.word);
    });
  }

  private async submitReject(reason: string): Promise<void> {
    if (this.busy || !this.online) return;
    const join = this.joinView;
    this.busy = true;
    this.refreshButtons();
    try {
      const rejected = await this.actions.reject(join, reason);
      this.update(rejected, Date.now());
      this.reject.close();
      this.feedback.success(`Rejected ${machineName(rejected)}. The machine is told: “${reason}”`);
      this.focusHeading();
    } catch (error) {
      this.feedback.failure(
        describeFailure(error, { action: `reject ${machineName(join)}`, apiUrl: this.actions.apiUrl() }),
      );
      this.reject.focusReason();
    } finally {
      this.busy = false;
      this.refreshButtons();
    }
  }

  private refreshButtons(): void {
    const state = this.joinView.state;
    this.approveButton.hidden = !canApprove(state);
    const blocked = this.busy || !this.online || !this.writable;
    this.run.setBlocked(!this.online || !this.writable);
    this.approveButton.disabled = blocked;
    this.reject.render(canReject(state), blocked, this.busy);
  }
}
