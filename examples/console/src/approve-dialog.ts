/**
 * The approval as a confirm step: a modal dialog that shows what the machine becomes (the
 * assignment the founder will apply), lets the operator change its name, role, management
 * interface and address and what each data disk becomes (with the typed wipe confirmation),
 * and shows the founder's refusals on the fields they name, staying open to fix and retry.
 * @module
 */

import type { Approval, Assignment, NodeJoin } from "@stratum/join";
import {
  addressOf,
  approvalFromDraft,
  describeAssignment,
  draftFromJoin,
  fieldTarget,
  mgmtCandidates,
  needsConfirm,
  sentDiskNames,
  type ApprovalDraft,
  type AssignmentPreview,
  type DiskChoice,
  type FieldTarget,
  type NodeRole,
} from "./assignment.js";
import { groupedCode, h, openModal } from "./dom.js";
import { FeedbackSpot } from "./feedback.js";
import { labelledField, markField, type Control } from "./fields.js";
import { formatBytes, shortFingerprint } from "./format.js";
import { describeFailure, type FailureReport } from "./messages.js";

/** What the dialog asks of the page. */
export interface ApproveDialogDeps {
  /** The assignment the founder will apply (see assignment.ts `previewAssignment`). */
  preview(join: NodeJoin, approval: Approval, signal: AbortSignal): Promise<AssignmentPreview>;
  /** Approves; resolves with the approved join or rejects with the SDK's error. */
  approve(join: NodeJoin, approval: Approval): Promise<NodeJoin>;
  /** The API's base URL, for a failure's wording. */
  apiUrl(): string;
}

/** How long edits settle before the preview is asked again (one call per pause in typing, not per key). */
const PREVIEW_DEBOUNCE_MS = 250;

const ROLES: [NodeRole, string][] = [
  ["hybrid", "Hybrid"],
  ["control-plane", "Control plane only (planned)"],
  ["hypervisor", "Hypervisor only (planned)"],
  ["storage", "Storage only (planned)"],
];

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
  private online = true;
  private busy = false;
  private timer: number | undefined;
  private readonly general = new FeedbackSpot("approve-feedback", () => this.title);
  private readonly title = h("h2", { id: "approve-title", tabindex: "-1" });
  private readonly preview = h("dl", { class: "preview-list", "data-testid": "approve-preview" });
  private readonly notes = h("ul", { class: "preview-notes" });
  private readonly fields = h("div", { class: "approve-fields" });
  private readonly submit = h("button", { type: "submit", class: "primary", "data-testid": "approve-confirm" });
  private readonly offline = h(
    "p",
    { class: "offline-note", hidden: "" },
    "The server is not answering: approving is paused until it does.",
  );
  private controls = new Map<string, Control>();
  private resolve: ((approved: NodeJoin | undefined) => void) | undefined;

  constructor(private readonly deps: ApproveDialogDeps) {
    const cancel = h("button", { type: "button", "data-testid": "approve-cancel" }, "Cancel");
    cancel.addEventListener("click", () => this.element.close());
    const form = h(
      "form",
      { novalidate: "" },
      this.title,
      h("div", { class: "approve-who", "data-testid": "approve-who" }),
      this.general.element,
      this.fields,
      h(
        "section",
        { class: "preview", "aria-labelledby": "preview-title" },
        h("h3", { id: "preview-title" }, "What the cluster will apply"),
        this.preview,
        this.notes,
      ),
      this.offline,
      h("div", { class: "dialog-actions" }, this.submit, cancel),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.confirm();
    });
    this.element.append(form);
    this.element.addEventListener("close", () => {
      this.controller.abort();
      window.clearTimeout(this.timer);
      this.resolve?.(undefined);
      this.resolve = undefined;
    });
  }

  /**
   * Opens the dialog for `join`; resolves with the approved join, or undefined when closed
   * without approving. `restore` says where the focus goes when it closes.
   */
  open(join: NodeJoin, restore: () => HTMLElement | null): Promise<NodeJoin | undefined> {
    this.join = join;
    this.draft = draftFromJoin(join);
    this.controller = new AbortController();
    this.general.clear();
    this.preview.replaceChildren();
    this.notes.replaceChildren();
    this.title.textContent = `Approve ${join.hostname || join.id}?`;
    this.renderWho(join);
    this.renderFields(join, this.draft);
    this.refreshSubmit();
    void this.refreshPreview();
    const done = new Promise<NodeJoin | undefined>((resolve) => (this.resolve = resolve));
    openModal(this.element, this.controls.get("name")!, restore);
    return done;
  }

  /** Pauses or resumes approving with the server's reachability. */
  setOnline(online: boolean): void {
    this.online = online;
    this.offline.hidden = online;
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
    const name = this.input("name", "Name", draft.name, { autocomplete: "off", spellcheck: "false" });
    const role = this.select(
      "role",
      "Role",
      ROLES,
      draft.role,
      "Hybrid: control plane, compute and Ceph together. Every machine joins as hybrid for now.",
    );
    const nics = mgmtCandidates(join);
    const nicOptions: [string, string][] = nics.map((n) => [
      n.name,
      n.address ? `${n.name} (${n.address})` : `${n.name} (no address)`,
    ]);
    if (!draft.mgmtInterface)
      nicOptions.unshift(["", nics.length ? "Choose a card" : "The machine reported no network card"]);
    const iface = this.select("mgmtInterface", "Interface", nicOptions, draft.mgmtInterface);
    const address = this.input("mgmtAddress", "Address", draft.mgmtAddress, {
      hint: "An address the card holds, or a new one as a CIDR (192.0.2.40/24) with a gateway.",
      spellcheck: "false",
      autocomplete: "off",
    });
    const gateway = this.input("mgmtGateway", "Gateway (for a new address)", draft.mgmtGateway, {
      spellcheck: "false",
      autocomplete: "off",
    });
    let addressEdited = false;
    address.control.addEventListener("input", () => (addressEdited = true));
    iface.control.addEventListener("change", () => {
      // The address follows the card until the operator types one of their own.
      if (!addressEdited) (address.control as HTMLInputElement).value = addressOf(join, iface.control.value) ?? "";
      this.edited();
    });
    for (const { control } of [name, role, address, gateway]) control.addEventListener("input", () => this.edited());

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
        `${about}, ${disk.data ? `holds data: ${disk.data}` : "blank"}`,
        DISK_CHOICES,
        disk.choice,
      );
      const confirm = this.input(
        `disk:${disk.name}:confirm`,
        `To wipe ${disk.name}, type its key: ${disk.key}`,
        disk.confirm,
        {
          spellcheck: "false",
          autocomplete: "off",
        },
      );
      const refreshConfirm = (): void => {
        disk.choice = choice.control.value as DiskChoice;
        confirm.row.hidden = !needsConfirm(disk);
      };
      choice.control.addEventListener("change", () => {
        refreshConfirm();
        this.edited();
      });
      confirm.control.addEventListener("input", () => this.edited());
      refreshConfirm();
      disks.append(h("div", { class: "disk-row" }, choice.row, confirm.row));
    }
    this.fields.replaceChildren(
      h("fieldset", {}, h("legend", {}, "Node"), name.row, role.row),
      h("fieldset", {}, h("legend", {}, "Management network"), iface.row, address.row, gateway.row),
      disks,
    );
  }

  /** Reads the controls back into the draft. */
  private readDraft(): ApprovalDraft {
    const draft = this.draft!;
    const value = (key: string): string => this.controls.get(key)?.value ?? "";
    draft.name = value("name");
    draft.role = value("role") as NodeRole;
    draft.mgmtInterface = value("mgmtInterface");
    draft.mgmtAddress = value("mgmtAddress");
    draft.mgmtGateway = value("mgmtGateway");
    for (const disk of draft.disks) {
      if (this.controls.has(`disk:${disk.name}:choice`)) disk.choice = value(`disk:${disk.name}:choice`) as DiskChoice;
      disk.confirm = value(`disk:${disk.name}:confirm`);
    }
    return draft;
  }

  private edited(): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.refreshPreview(), PREVIEW_DEBOUNCE_MS);
  }

  private async refreshPreview(): Promise<void> {
    const join = this.join!;
    const approval = approvalFromDraft(this.readDraft());
    try {
      const { assignment, notes } = await this.deps.preview(join, approval, this.controller.signal);
      if (this.join !== join) return;
      this.renderPreview(assignment);
      this.notes.replaceChildren(...notes.map((n) => h("li", {}, n)));
    } catch (error) {
      if (this.controller.signal.aborted) return;
      this.showFailure(describeFailure(error, { action: "work out the assignment", apiUrl: this.deps.apiUrl() }));
    }
  }

  private renderPreview(assignment: Assignment): void {
    const rows = describeAssignment(assignment, this.draft!.disks);
    this.preview.replaceChildren(...rows.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
  }

  private async confirm(): Promise<void> {
    if (this.busy || !this.online || !this.join) return;
    const join = this.join;
    const draft = this.readDraft();
    const approval = approvalFromDraft(draft);
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
  private showFailure(report: FailureReport, sentDisks: readonly string[] = sentDiskNames(this.draft!)): void {
    for (const control of this.controls.values()) markField(control, undefined);
    const marked = new Set<string>();
    let first: Control | undefined;
    for (const problem of report.fields) {
      const key = controlKey(fieldTarget(problem.field, sentDisks));
      const control = key && this.controls.get(key);
      if (!control || control.closest("[hidden]")) continue;
      markField(control, problem.message, true);
      marked.add(problem.field);
      first ??= control;
    }
    this.general.failure(report, marked);
    (first ?? this.title).focus();
  }

  private refreshSubmit(): void {
    const name = this.join ? this.join.hostname || this.join.id : "";
    this.submit.disabled = this.busy || !this.online;
    this.submit.textContent = this.busy ? "Approving…" : `Approve ${name}`;
  }

  private input(key: string, label: string, value: string, options: Record<string, string> & { hint?: string } = {}) {
    const { hint, ...attributes } = options;
    const control = h("input", {
      id: `approve-${slug(key)}`,
      type: "text",
      ...attributes,
      "data-testid": `approve-${slug(key)}`,
    });
    control.value = value;
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
