/**
 * The machine list: cards kept in place across polls, found by a search (pairing code, host
 * name, serial, MAC, address), filtered by state and sorted, as cards or a compact table; a
 * count of machines per state; the capacity and a silent join holding the queue, said above
 * it; keys to find, go to the next waiting machine and approve it; and a polite announcement
 * of what changed (a machine arrived, joined, failed), not of every poll.
 * @module
 */

import { JOIN_STATES, type JoinCapacity, type JoinChange, type JoinState, type NodeJoin } from "@stratum/join";
import { BlockerNotice } from "./blocker-notice.js";
import { CapacityNotice, type CapacityActions } from "./capacity-notice.js";
import { byTestId, h, nowrapIds } from "./dom.js";
import { STATE_WORDS, canApprove, failureInWords, machineName, matchesSearch } from "./format.js";
import { JoinCard, type CardActions } from "./join-card.js";
import { JoinTable } from "./join-table.js";

/** How the list is ordered. */
export type SortOrder = "newest" | "oldest" | "name" | "attention";

/** For "needs you first": what waits for the operator, then what runs, then what is over. */
const ATTENTION: JoinState[] = [
  "pending",
  "failed",
  "needs-upgrade",
  "approved",
  "delivering",
  "installing",
  "joined",
  "rejected",
  "expired",
];

/** The list's controls and regions in the page (index.html). */
export interface JoinListElements {
  list: HTMLOListElement;
  search: HTMLInputElement;
  view: HTMLFieldSetElement;
  notices: HTMLElement;
  empty: HTMLElement;
  filtered: HTMLElement;
  filter: HTMLSelectElement;
  sort: HTMLSelectElement;
  counts: HTMLElement;
  changes: HTMLElement;
}

/** The machine list of one signed-in session. */
export class JoinList {
  readonly cards = new Map<string, JoinCard>();
  private online = true;
  private writable = true;
  private first = true;
  private pending: string[] = [];
  private flushTimer: number | undefined;

  private readonly table: JoinTable;
  private readonly capacity: CapacityNotice;
  private readonly blocker: BlockerNotice;
  private lastCapacity: JoinCapacity | undefined;
  private readonly firstListeners: (() => void)[] = [];

  constructor(
    private readonly ui: JoinListElements,
    private readonly actions: CardActions & CapacityActions,
  ) {
    ui.filter.addEventListener("change", () => this.arrange());
    ui.sort.addEventListener("change", () => this.arrange());
    ui.search.addEventListener("input", () => this.arrange());
    ui.view.addEventListener("change", () => this.arrange());
    this.table = new JoinTable({
      approve: (card) => this.actions.approve(card),
      showCard: (card) => {
        this.setView("cards");
        card.element.scrollIntoView({ block: "start" });
        card.focusHeading();
      },
    });
    ui.list.after(this.table.element);
    this.capacity = new CapacityNotice(actions);
    this.blocker = new BlockerNotice((card) => {
      this.setView("cards");
      card.element.scrollIntoView({ block: "start" });
      card.openFail();
    });
    ui.notices.append(this.blocker.element, this.capacity.element);
    document.addEventListener("keydown", (event) => this.key(event));
  }

  /** Resolves once the first answer of the watch is shown (the machines that were there). */
  firstShown(): Promise<void> {
    return this.first ? new Promise((resolve) => this.firstListeners.push(resolve)) : Promise.resolve();
  }

  /** The capacity the founder answered with the list (`capacity`), shown above it. */
  setCapacity(capacity: JoinCapacity | undefined): void {
    this.lastCapacity = capacity;
    this.capacity.show(
      capacity,
      [...this.cards.values()].map((c) => c.join),
      Date.now(),
    );
  }

  /** Finds the list's elements in the page. */
  static elements(): JoinListElements {
    return {
      list: byTestId("joins"),
      search: byTestId("joins-search"),
      view: byTestId("joins-view"),
      notices: byTestId("joins-notices"),
      empty: byTestId("joins-empty"),
      filtered: byTestId("joins-filtered"),
      filter: byTestId("joins-filter"),
      sort: byTestId("joins-sort"),
      counts: byTestId("joins-counts"),
      changes: byTestId("joins-changes"),
    };
  }

  /** Applies one change from `watchJoins`; the changes of one poll are announced together. */
  apply(change: JoinChange, now: number): void {
    if (change.type === "removed") {
      const card = this.cards.get(change.id);
      if (card) {
        card.element.remove();
        card.dispose();
        this.cards.delete(change.id);
        this.say(`${machineName(card.join)} is no longer listed.`);
      }
    } else if (change.type === "changed" && this.cards.has(change.join.id)) {
      this.cards.get(change.join.id)!.update(change.join, now);
      if (change.previous.state !== change.join.state) this.say(stateSentence(change.join));
    } else {
      const card = new JoinCard(change.join, this.actions);
      card.setOnline(this.online);
      card.setWritable(this.writable);
      this.cards.set(change.join.id, card);
      this.ui.list.append(card.element);
      if (!this.first)
        this.say(`New machine: ${machineName(change.join)}, ${STATE_WORDS[change.join.state].toLowerCase()}.`);
    }
    this.scheduleFlush();
  }

  /** Shows a join the page got from an action (approve, reject) before the next poll does. */
  show(join: NodeJoin): void {
    this.cards.get(join.id)?.update(join, Date.now());
    this.arrange();
  }

  /**
   * Re-renders what depends on the clock. Not while the server does not answer: a card that may
   * be out of date keeps the times it had when the server was last heard, rather than counting
   * on as if it knew.
   */
  tick(now: number): void {
    if (!this.online) return;
    for (const card of this.cards.values()) card.tick(now);
    this.capacity.tick(now);
    this.blocker.show([...this.cards.values()], now);
  }

  /** Marks every card as possibly stale (and pauses its actions) while the server is unreachable. */
  setOnline(online: boolean): void {
    this.online = online;
    for (const card of this.cards.values()) card.setOnline(online);
    this.table.setBlocked(online, this.writable);
    this.arrange();
  }

  /** Pauses every card's actions while the cluster cannot save (its disk is full), or resumes them. */
  setWritable(writable: boolean): void {
    this.writable = writable;
    for (const card of this.cards.values()) card.setWritable(writable);
    this.table.setBlocked(this.online, writable);
    this.capacity.setWritable(writable);
    this.arrange();
  }

  /** Empties the list (sign-out). */
  clear(): void {
    for (const card of this.cards.values()) card.dispose();
    this.cards.clear();
    this.ui.list.replaceChildren();
    this.ui.changes.textContent = "";
    this.first = true;
    this.pending = [];
    window.clearTimeout(this.flushTimer);
    this.setCapacity(undefined);
    this.arrange();
  }

  private say(sentence: string): void {
    this.pending.push(sentence);
  }

  private scheduleFlush(): void {
    // watchJoins yields a poll's changes back to back; a macrotask later they are all in.
    window.clearTimeout(this.flushTimer);
    this.flushTimer = window.setTimeout(() => this.flush(), 0);
  }

  private flush(): void {
    this.arrange();
    if (this.first) {
      // The first poll lists what was already there: the counts say it, nothing changed.
      this.first = false;
      for (const listener of this.firstListeners.splice(0)) listener();
    } else if (this.pending.length) {
      // Several changes at once are read as one message; more than a few, as a count.
      this.ui.changes.replaceChildren(
        nowrapIds(
          this.pending.length > 4 ? `${this.pending.length} changes. ${this.countsText()}.` : this.pending.join(" "),
        ),
      );
    }
    this.pending = [];
  }

  /** Sorts, filters and searches, and updates the counts, moving only cards that are out of place (a moved element loses focus). */
  private arrange(): void {
    const filter = this.ui.filter.value as JoinState | "all";
    const query = this.ui.search.value;
    const order = [...this.cards.values()].sort(comparator(this.ui.sort.value as SortOrder));
    const focused = document.activeElement;
    let before: Element | null = this.ui.list.firstElementChild;
    for (const card of order) {
      if (card.element !== before) this.ui.list.insertBefore(card.element, before);
      else before = before.nextElementSibling;
      card.element.hidden = (filter !== "all" && card.join.state !== filter) || !matchesSearch(card.join, query);
    }
    if (focused instanceof HTMLElement && focused !== document.activeElement && focused.isConnected) focused.focus();
    const shown = order.filter((c) => !c.element.hidden);
    const table = this.view() === "table";
    this.ui.list.hidden = table;
    this.table.element.hidden = !table || shown.length === 0;
    if (table) this.table.render(shown);
    this.ui.empty.hidden = this.cards.size > 0;
    this.ui.filtered.hidden = this.cards.size === 0 || shown.length > 0;
    this.ui.counts.textContent = this.cards.size
      ? `${this.countsText()}${shown.length < this.cards.size ? `; ${shown.length} shown` : ""}`
      : "";
    this.refreshFilterOptions();
    const now = Date.now();
    this.capacity.show(
      this.lastCapacity,
      order.map((c) => c.join),
      now,
    );
    this.blocker.show(order, now);
  }

  private view(): "cards" | "table" {
    return this.ui.view.querySelector<HTMLInputElement>("input:checked")?.value === "table" ? "table" : "cards";
  }

  private setView(view: "cards" | "table"): void {
    const radio = this.ui.view.querySelector<HTMLInputElement>(`input[value="${view}"]`);
    if (radio && !radio.checked) {
      radio.checked = true;
      this.arrange();
    }
  }

  /**
   * The list's keys, outside text fields and dialogs: `/` finds, `n` goes to the next waiting
   * machine shown (after the one with the focus), `a` opens the approval of the machine with the
   * focus. Plain keys with no modifier, so the browser's own shortcuts stay.
   */
  private key(event: KeyboardEvent): void {
    if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
    const target = event.target as HTMLElement | null;
    if (target?.closest("input, textarea, select, dialog, [contenteditable]")) return;
    if (this.ui.list.closest("[hidden]") || document.querySelector("dialog[open]")) return;
    if (event.key === "/") {
      event.preventDefault();
      this.ui.search.focus();
      this.ui.search.select();
    } else if (event.key === "n") {
      const next = this.nextWaiting(target);
      if (!next) return;
      event.preventDefault();
      const control = this.view() === "table" ? this.table.rowControl(next.join.id) : null;
      if (control) control.focus();
      else {
        next.element.scrollIntoView({ block: "nearest" });
        next.focusHeading();
      }
    } else if (event.key === "a") {
      const id = target?.closest<HTMLElement>("[data-join-id]")?.dataset.joinId;
      const card = id ? this.cards.get(id) : undefined;
      if (!card || !canApprove(card.join.state) || !this.online || !this.writable) return;
      event.preventDefault();
      this.actions.approve(card);
    }
  }

  /** The next waiting (pending) machine shown after the one holding the focus, from the top after the last. */
  private nextWaiting(from: HTMLElement | null): JoinCard | undefined {
    const shown = [...this.cards.values()]
      .filter((c) => !c.element.hidden)
      .sort(comparator(this.ui.sort.value as SortOrder));
    const waiting = shown.filter((c) => c.join.state === "pending");
    const id = from?.closest<HTMLElement>("[data-join-id]")?.dataset.joinId;
    const at = shown.findIndex((c) => c.join.id === id);
    return waiting.find((c) => shown.indexOf(c) > at) ?? waiting[0];
  }

  private countsText(): string {
    const counts = this.counts();
    const parts = ATTENTION.filter((s) => counts.get(s)).map((s) => `${counts.get(s)} ${STATE_WORDS[s].toLowerCase()}`);
    return `${this.cards.size} ${this.cards.size === 1 ? "machine" : "machines"}: ${parts.join(", ")}`;
  }

  private counts(): Map<JoinState, number> {
    const counts = new Map<JoinState, number>();
    for (const card of this.cards.values()) counts.set(card.join.state, (counts.get(card.join.state) ?? 0) + 1);
    return counts;
  }

  /** The filter lists every state with its count, so an operator sees what there is before choosing. */
  private refreshFilterOptions(): void {
    const counts = this.counts();
    const select = this.ui.filter;
    const options = [
      ["all", `All states (${this.cards.size})`],
      ...JOIN_STATES.map((s) => [s, `${STATE_WORDS[s]} (${counts.get(s) ?? 0})`]),
    ];
    if (select.options.length !== options.length) {
      const value = select.value || "all";
      select.replaceChildren(...options.map(([value, text]) => h("option", { value: value! }, text!)));
      select.value = value;
    } else {
      options.forEach(([, text], i) => {
        if (select.options[i]!.text !== text) select.options[i]!.text = text!;
      });
    }
  }
}

function comparator(order: SortOrder): (a: JoinCard, b: JoinCard) => number {
  const created = (c: JoinCard): number => Date.parse(c.join.createdAt);
  const newest = (a: JoinCard, b: JoinCard): number => created(b) - created(a) || a.join.id.localeCompare(b.join.id);
  switch (order) {
    case "oldest":
      return (a, b) => -newest(a, b);
    case "name":
      return (a, b) => (a.join.hostname ?? "").localeCompare(b.join.hostname ?? "") || newest(a, b);
    case "attention":
      // A silent running join holds the queue: it comes before everything else.
      return (a, b) =>
        Number(b.join.stalled) - Number(a.join.stalled) ||
        ATTENTION.indexOf(a.join.state) - ATTENTION.indexOf(b.join.state) ||
        newest(a, b);
    default:
      return newest;
  }
}

/** A state change as a sentence naming the machine unambiguously. */
function stateSentence(join: NodeJoin): string {
  const who = machineName(join);
  switch (join.state) {
    case "joined":
      return `${who} joined the cluster${join.nodeId ? ` as node ${join.nodeId}` : ""}.`;
    case "failed":
      return `${who}: ${failureInWords(join)}.`;
    case "rejected":
      return `${who} was rejected.`;
    case "expired":
      return `${who} expired without approval.`;
    default:
      return `${who}: ${STATE_WORDS[join.state].toLowerCase()}.`;
  }
}
