/**
 * The machine list: cards kept in place across polls, filtered by state and sorted, a count of
 * machines per state, and a polite announcement of what changed (a machine arrived, joined,
 * failed), not of every poll.
 * @module
 */

import { JOIN_STATES, type JoinChange, type JoinState, type NodeJoin } from "@stratum/join";
import { byTestId, h, nowrapIds } from "./dom.js";
import { STATE_WORDS, failureInWords, machineName } from "./format.js";
import { JoinCard, type CardActions } from "./join-card.js";

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

  constructor(
    private readonly ui: JoinListElements,
    private readonly actions: CardActions,
  ) {
    ui.filter.addEventListener("change", () => this.arrange());
    ui.sort.addEventListener("change", () => this.arrange());
  }

  /** Finds the list's elements in the page. */
  static elements(): JoinListElements {
    return {
      list: byTestId("joins"),
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

  /** Re-renders what depends on the clock. */
  tick(now: number): void {
    for (const card of this.cards.values()) card.tick(now);
  }

  /** Marks every card as possibly stale (and pauses its actions) while the server is unreachable. */
  setOnline(online: boolean): void {
    this.online = online;
    for (const card of this.cards.values()) card.setOnline(online);
  }

  /** Pauses every card's actions while the cluster cannot save (its disk is full), or resumes them. */
  setWritable(writable: boolean): void {
    this.writable = writable;
    for (const card of this.cards.values()) card.setWritable(writable);
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

  /** Sorts, filters, and updates the counts, moving only cards that are out of place (a moved element loses focus). */
  private arrange(): void {
    const filter = this.ui.filter.value as JoinState | "all";
    const order = [...this.cards.values()].sort(comparator(this.ui.sort.value as SortOrder));
    const focused = document.activeElement;
    let before: Element | null = this.ui.list.firstElementChild;
    for (const card of order) {
      if (card.element !== before) this.ui.list.insertBefore(card.element, before);
      else before = before.nextElementSibling;
      card.element.hidden = filter !== "all" && card.join.state !== filter;
    }
    if (focused instanceof HTMLElement && focused !== document.activeElement && focused.isConnected) focused.focus();
    const shown = order.filter((c) => !c.element.hidden).length;
    this.ui.empty.hidden = this.cards.size > 0;
    this.ui.filtered.hidden = this.cards.size === 0 || shown > 0;
    this.ui.counts.textContent = this.cards.size ? this.countsText() : "";
    this.refreshFilterOptions();
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
      return (a, b) => ATTENTION.indexOf(a.join.state) - ATTENTION.indexOf(b.join.state) || newest(a, b);
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
