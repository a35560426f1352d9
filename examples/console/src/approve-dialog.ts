/**
 * The approval as a confirm step: a modal dialog that shows what the machine becomes (the
 * founder's own preview of the assignment it will apply), lets the operator change its name,
 * role, management interface and address and what each data disk becomes (with the typed
 * wipe confirmation), and shows the founder's refusals on the fields they name, from the
 * preview before approving and from the approval itself, staying open to fix and retry.
 * Fields the operator has not edited show the founder's choice and are not sent.
 * @module
 */

import type { Approval, Assignment, NodeJoin } from "@stratum/join";
import {
  approvalFromDraft,
  draftFromJoin,
  fieldsOf,
  fieldTarget,
  mgmtCandidates,
  needsConfirm,
  sentDiskNames,
  type ApprovalDraft,
  type DiskChoice,
  type DraftField,
  type FieldTarget,
  type NodeRole,
} from "./assignment.js";
import { ApprovalPreview, type PreviewOutcome } from "./approve-preview.js";
import { groupedCode, h, openModal } from "./dom.js";
import { FeedbackSpot } from "./feedback.js";
import { labelledField, markField, type Control } from "./fields.js";
import { formatBytes, shortFingerprint } from "./format.js";
import { describeFailure, type FailureReport } from "./messages.js";

/** What the dialog asks of the page. */
export interface ApproveDialogDeps {
  /** The assignment the founder would apply for `approval` (admin client `previewApproval`); rejects as the approval would. */
  preview(join: NodeJoin, approval: Approval, signal: AbortSignal): Promise<Assignment>;
  /** Approves; resolves with the approved join or rejects with the SDK's error. */
  approve(join: NodeJoin, approval: Approval): Promise<NodeJoin>;
  /** The API's base URL, for a failure's wording. */
  apiUrl(): string;
}

/**
 * How each role reads. Which are offered is the founder's word (`capacity.roles` of the join
 * list), not this table: a role the cluster does not take is never offered only to be refused.
 */
const ROLE_WORDS: Record<NodeRole, string> = {
  hybrid: "Hybrid: control plane, compute and Ceph together",
  "control-plane": "Control plane only",
  hypervisor: "Hypervisor only",
  storage: "Storage only",
};

const DISK_CHOICES: [DiskChoice, string][] = [
  ["untouched", "Leave untouched"],
  ["compute", "Compute pool"],
  ["ceph-osd", "Ceph OSD"],
];

/** The approve dialog; one per page, filled anew for each machine. */
export class ApproveDialog {
  readonly element = h("dialog", {
    class: "approve-dialog",
    "data-testid": "approve-dialog",
    "aria-labelledby": "approve-title",
  });
  private join: NodeJoin | undefined;
  private draft: ApprovalDraft | undefined;
  private controller = new AbortController();
  private paused: string | undefined;
  private busy = false;
  private readonly general = new FeedbackSpot("approve-feedback", () => this.title);
  private readonly title = h("h2", { id: "approve-title", tabindex: "-1" });
  private readonly preview: ApprovalPreview;
  private readonly fields = h("div", { class: "approve-fields" });
  private readonly submit = h("button", { type: "submit", class: "primary", "data-testid": "approve-confirm" });
  private readonly pausedNote = h("p", { class: "offline-note", "data-testid": "approve-paused", hidden: "" });
  private controls = new Map<string, Control>();
  /** The fields the operator has edited in this opening. */
  private touched = new Set<DraftField>();
  private resolve: ((approved: NodeJoin | undefined) => void) | undefined;
  /** The roles the founder takes, as its last list answered them. */
  private roles: readonly NodeRole[] = ["hybrid"];

  constructor(private readonly deps: ApproveDialogDeps) {
    this.preview = new ApprovalPreview({
      fetch: (approval, signal) => this.deps.preview(this.join!, approval, signal),
      apiUrl: () => this.deps.apiUrl(),
      settled: (outcome) => this.previewSettled(outcome),
      changed: () => this.refreshSubmit(),
    });
    const cancel = h("button", { type: "button", "data-testid": "approve-cancel" }, "Cancel");
    cancel.addEventListener("click", () => this.element.close());
    const form = h(
      "form",
      { novalidate: "" },
      this.title,
      h("div", { class: "approve-who", "data-testid": "approve-who" }),
      this.general.element,
      this.fields,
      this.preview.element,
      this.pausedNote,
      h("div", { class: "dialog-actions" }, this.submit, cancel),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.confirm();
    });
    this.element.append(form);
    this.element.addEventListener("close", () => {
      this.controller.abort();
      this.preview.stop();
      this.resolve?.(undefined);
      this.resolve = undefined;
    });
  }

  /**
   * Opens the dialog for `join`; resolves with the approved join, or undefined when closed
   * without approving. `restore` says where the focus goes when it closes.
   */
  open(
    join: NodeJoin,
    restore: () => HTMLElement | null,
    roles: readonly NodeRole[] = ["hybrid"],
  ): Promise<NodeJoin | undefined> {
    this.join = join;
    this.roles = roles.length ? roles : ["hybrid"];
    this.draft = draftFromJoin(join);
    this.controller = new AbortController();
    this.general.clear();
    this.preview.reset(this.controller.signal, this.draft.disks);
    this.title.textContent = `Approve ${join.hostname || join.id}?`;
    this.renderWho(join);
    this.renderFields(join, this.draft);
    this.preview.refresh(approvalFromDraft(this.draft));
    this.refreshSubmit();
    const done = new Promise<NodeJoin | undefined>((resolve) => (this.resolve = resolve));
    openModal(this.element, this.controls.get("name")!, restore);
    return done;
  }

  /**
   * Pauses approving, saying why in the dialog (the server does not answer, its disk is full),
   * or resumes it (`undefined`), asking the preview again if it could not be had meanwhile.
   */
  setPaused(reason: string | undefined): void {
    const resumed = this.paused !== undefined && reason === undefined;
    this.paused = reason;
    this.pausedNote.textContent = reason ?? "";
    this.pausedNote.hidden = reason === undefined;
    if (resumed && this.element.open && this.draft) {
      const approval = approvalFromDraft(this.draft);
      if (this.preview.answerFor(approval)?.kind === "failed") this.preview.refresh(approval);
    }
    this.refreshSubmit();
  }

  private renderWho(join: NodeJoin): void {
    const who = this.element.querySelector<HTMLElement>('[data-testid="approve-who"]')!;
    const facts = [
      join.id,
      join.systemSerial && `serial\u00a0${join.systemSerial}`,
      shortFingerprint(join.keyFingerprint) && `key\u00a0${shortFingerprint(join.keyFingerprint)}…`,
    ];
    who.replaceChildren(
      h("p", {}, "Approve only if the machine's own screen shows this pairing code:"),
      h("p", { class: "pairing-code" }, groupedCode(join.pairingCode)),
      h("p", { class: "muted" }, facts.filter(Boolean).join(" · ")),
    );
  }

  private renderFields(join: NodeJoin, draft: ApprovalDraft): void {
    this.controls = new Map();
    this.touched = new Set();
    const byDefault = { placeholder: "The cluster's default", autocomplete: "off", spellcheck: "false" };
    const name = this.input("name", "Name", byDefault);
    const role = this.select(
      "role",
      "Role",
      this.roles.map((r): [string, string] => [r, ROLE_WORDS[r] ?? r]),
      this.roles[0]!,
      this.roles.length === 1 ? "The only role this cluster takes now." : undefined,
    );
    const nics = mgmtCandidates(join);
    const nicOptions: [string, string][] = [
      ["", nics.length ? "The cluster's choice" : "The machine reported no network card"],
      ...nics.map((n): [string, string] => [n.name, n.address ? `${n.name} (${n.address})` : `${n.name} (no address)`]),
    ];
    const iface = this.select("mgmtInterface", "Interface", nicOptions, "");
    const address = this.input("mgmtAddress", "Address", {
      ...byDefault,
      hint: "Empty: the card's own address. A new one as a CIDR (192.0.2.40/24), with a gateway.",
    });
    const gateway = this.input("mgmtGateway", "Gateway (for a new address)", {
      autocomplete: "off",
      spellcheck: "false",
    });
    for (const [key, { control }] of Object.entries({
      name,
      role,
      mgmtInterface: iface,
      mgmtAddress: address,
      mgmtGateway: gateway,
    }))
      control.addEventListener(control instanceof HTMLSelectElement ? "change" : "input", () => {
        // From the first edit on, the field is the operator's; emptied, it is the founder's again.
        const field = key as DraftField;
        this.touched.add(field);
        if (control.value.trim()) draft.fields[field] = control.value;
        else delete draft.fields[field];
        this.edited();
      });

    const disks = h("fieldset", { class: "disks" }, h("legend", {}, "Disks"));
    if (!draft.disks.length) disks.append(h("p", { class: "muted" }, "The machine reported no disks."));
    for (const disk of draft.disks) {
      const size = [formatBytes(join.inventory?.disks?.find((d) => d.name === disk.name)?.sizeBytes)].filter(Boolean);
      const about = [disk.name, ...size].join(", ");
      if (disk.system) {
        disks.append(h("p", { class: "disk-fixed" }, `${about}: system disk, set up by the installer`));
        continue;
      }
      if (!disk.key) {
        disks.append(
          h("p", { class: "disk-fixed" }, `${about}: reports no WWN or by-id path, so it cannot be assigned`),
        );
        continue;
      }
      const choice = this.select(
        `disk:${disk.name}:choice`,
        `${about}, ${disk.data ?? "blank"}`,
        DISK_CHOICES,
        disk.choice,
      );
      const confirm = this.input(`disk:${disk.name}:confirm`, `To wipe ${disk.name}, type its key: ${disk.key}`, {
        spellcheck: "false",
        autocomplete: "off",
      });
      const refreshConfirm = (): void => {
        disk.choice = choice.control.value as DiskChoice;
        confirm.row.hidden = !needsConfirm(disk);
      };
      choice.control.addEventListener("change", () => {
        refreshConfirm();
        this.edited();
      });
      confirm.control.addEventListener("input", () => {
        disk.confirm = confirm.control.value;
        this.edited();
      });
      refreshConfirm();
      disks.append(h("div", { class: "disk-row" }, choice.row, confirm.row));
    }
    this.fields.replaceChildren(
      h("fieldset", {}, h("legend", {}, "Node"), name.row, role.row),
      h("fieldset", {}, h("legend", {}, "Management network"), iface.row, address.row, gateway.row),
      disks,
    );
  }

  private edited(): void {
    this.preview.request(approvalFromDraft(this.draft!));
    this.refreshSubmit();
  }

  /**
   * The founder answered the current draft: its choices fill the fields the operator left to
   * it, and its refusals are marked on the fields they name (without moving the focus: the
   * operator may be typing). Returns the field paths marked.
   */
  private previewSettled(outcome: PreviewOutcome): ReadonlySet<string> {
    const draft = this.draft!;
    if (outcome.kind === "ok") {
      const chosen = fieldsOf(outcome.assignment);
      for (const [key, value] of Object.entries(chosen) as [DraftField, string][]) {
        const control = this.controls.get(key);
        // An emptied field shows the founder's value again, but not under the operator's cursor.
        if (!control || draft.fields[key] !== undefined) continue;
        if (this.touched.has(key) && control === document.activeElement) continue;
        if (control instanceof HTMLSelectElement && value && ![...control.options].some((o) => o.value === value))
          control.append(h("option", { value }, value));
        control.value = value;
      }
    }
    this.refreshSubmit();
    return this.markFields(outcome.kind === "ok" ? [] : outcome.report.fields, sentDiskNames(draft));
  }

  private async confirm(): Promise<void> {
    if (this.busy || this.paused !== undefined || !this.join) return;
    const join = this.join;
    const draft = this.draft!;
    const approval = approvalFromDraft(draft);
    // Only what the operator has seen the founder's answer for is approved.
    if (!this.preview.answerFor(approval)) return;
    const sent = sentDiskNames(draft);
    this.busy = true;
    this.refreshSubmit();
    try {
      const approved = await this.deps.approve(join, approval);
      this.resolve?.(approved);
      this.resolve = undefined;
      this.element.close();
    } catch (error) {
      if (this.join !== join || !this.element.open) return;
      this.showFailure(
        describeFailure(error, { action: `approve ${join.hostname || join.id}`, apiUrl: this.deps.apiUrl() }),
        sent,
      );
    } finally {
      this.busy = false;
      this.refreshSubmit();
    }
  }

  /** Marks each field error on its control; the rest, with the summary, at the top. Focuses the first marked field. */
  private showFailure(report: FailureReport, sentDisks: readonly string[]): void {
    const marked = this.markFields(report.fields, sentDisks);
    this.general.failure(report, marked);
    const first = [...this.controls.values()].find((c) => c.getAttribute("aria-invalid") === "true");
    (first ?? this.title).focus();
  }

  /** Marks `problems` on their controls (clearing older marks); returns the field paths marked. */
  private markFields(
    problems: readonly { field: string; message: string }[],
    sentDisks: readonly string[],
  ): Set<string> {
    for (const control of this.controls.values()) markField(control, undefined);
    const marked = new Set<string>();
    for (const problem of problems) {
      const key = controlKey(fieldTarget(problem.field, sentDisks));
      const control = key && this.controls.get(key);
      if (!control || control.closest("[hidden]")) continue;
      markField(control, problem.message, true);
      marked.add(problem.field);
    }
    return marked;
  }

  private refreshSubmit(): void {
    const name = this.join ? this.join.hostname || this.join.id : "";
    const answered = this.draft !== undefined && this.preview.answerFor(approvalFromDraft(this.draft)) !== undefined;
    // Disabled until the founder answered the current choices: approving is approving what was shown.
    this.submit.disabled = this.busy || this.paused !== undefined || !answered;
    this.submit.textContent = this.busy ? "Approving…" : `Approve ${name}`;
  }

  private input(key: string, label: string, options: Record<string, string> & { hint?: string } = {}) {
    const { hint, ...attributes } = options;
    const control = h("input", {
      id: `approve-${slug(key)}`,
      type: "text",
      ...attributes,
      "data-testid": `approve-${slug(key)}`,
    });
    return this.field(key, label, control, hint);
  }

  private select(key: string, label: string, options: [string, string][], value: string, hint?: string) {
    const control = h(
      "select",
      { id: `approve-${slug(key)}`, "data-testid": `approve-${slug(key)}` },
      ...options.map(([v, text]) => h("option", { value: v }, text)),
    );
    control.value = value;
    return this.field(key, label, control, hint);
  }

  private field<C extends Control>(
    key: string,
    label: string,
    control: C,
    hint?: string,
  ): { row: HTMLDivElement; control: C } {
    this.controls.set(key, control);
    return { row: labelledField(control, label, hint), control };
  }
}

/** The control a field error belongs to, by the key the dialog registered it under. */
function controlKey(target: FieldTarget): string | undefined {
  if (target.kind === "general") return undefined;
  if (target.kind === "disk") return `disk:${target.disk}:${target.part}`;
  return target.kind;
}

function slug(key: string): string {
  return key.replace(/[^a-zA-Z0-9]+/g, "-").replace(/-$/, "");
}
