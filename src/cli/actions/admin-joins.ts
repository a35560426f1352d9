/**
 * How `admin joins` shows the machines: a table an operator reads at 80 columns (id, state,
 * pairing code, host name, serial, MAC, address), with what each join waits for, why it ended
 * and what it was assigned on a line of its own under its row, wrapped at word boundaries; and
 * how many more machines the cluster can take. One join in full is {@link joinLines}.
 * @module
 */

import { clockWarning } from "../../core/clock.js";
import type { Inventory, JoinCapacity, NodeJoin } from "../../types.js";
import { wrap } from "../help.js";
import { fingerprintLines, formatMoment, table } from "../output.js";
import { printableView, visibleWidth, type Style } from "../style.js";

/** Interfaces that say nothing about which machine this is (loopback, virtual devices). */
const VIRTUAL_NIC = /^(lo|ifb|dummy|veth|docker|virbr|vnet|tun|tap|cni|flannel|cali|kube-ipvs|sit|ip6tnl|gre|erspan)/;

/**
 * The MAC that tells twins apart: the card the machine registered from, else its first real
 * card's (a virtual device's or an all-zero one says nothing).
 */
export function macOf(inventory: Inventory | undefined, sourceAddr: string | undefined): string {
  const nics = (inventory?.nics ?? []).filter((n) => !VIRTUAL_NIC.test(n.name));
  const mac = (n: (typeof nics)[number]) => n.permanentMac || n.mac || "";
  const real = nics.filter((n) => mac(n) && !/^(00:){5}00$/.test(mac(n)));
  const source = real.find((n) => (n.addresses ?? []).some((a) => a.split("/")[0] === sourceAddr));
  return source ? mac(source) : real[0] ? mac(real[0]) : "";
}

/** What the join was assigned, in a line: name, node id, management address, link addresses. */
export function assignedLine(join: NodeJoin): string | undefined {
  const a = join.assignment;
  if (!a || join.state === "pending" || join.state === "needs-upgrade") return undefined;
  const mgmt = a.mgmt?.address ? `mgmt ${a.mgmt.address}${a.mgmt.interface ? ` on ${a.mgmt.interface}` : ""}` : "";
  const links = (a.links ?? [])
    .filter((l) => (l.addresses ?? []).length > 0)
    .map((l) => `${l.name} ${(l.addresses ?? []).join(", ")}`);
  return [`${a.name ?? join.hostname ?? join.id}${join.nodeId ? ` (node ${join.nodeId})` : ""}`, mgmt, ...links]
    .filter(Boolean)
    .join(", ");
}

/** A failure in words: the founder's title of the step ("Failed by alice", "No progress report") and the error. */
function failure(join: NodeJoin): string {
  const what = join.failedStepTitle ?? (join.failedStep ? `step ${join.failedStep}` : "a step");
  return `${what}${join.failedError ? `: ${join.failedError}` : ""}`;
}

/** The notes under a join's row: what it waits for, why it ended, what it was assigned. */
function notesOf(join: NodeJoin): string[] {
  const notes: string[] = [];
  // waitReason is what follows "waiting for" (spec: NodeJoin.waitReason).
  if (join.waitReason) notes.push(`waiting for ${join.waitReason}`);
  if (join.stalled) notes.push("silent: its machine has not reported for a while; fail it if it will not come back");
  if (join.reason) notes.push(`rejected: ${join.reason}`);
  if (join.state === "failed" && join.failedStep) notes.push(`failed: ${failure(join)}`);
  const assigned = assignedLine(join);
  if (assigned) notes.push(`assigned ${assigned}`);
  return notes;
}

/** The columns of the join list, and which a narrow terminal moves under the row first (`spare`, lowest first). */
const COLUMNS: { title: string; cell: (j: NodeJoin) => string; spare?: number; note?: string }[] = [
  { title: "ID", cell: (j) => j.id },
  { title: "STATE", cell: (j) => `${j.state}${j.stalled ? "*" : ""}` },
  { title: "PAIRING", cell: (j) => j.pairingCode },
  { title: "HOSTNAME", cell: (j) => j.hostname ?? "" },
  { title: "SERIAL", cell: (j) => j.systemSerial ?? "", spare: 3, note: "serial" },
  { title: "MAC", cell: (j) => macOf(j.inventory, j.sourceAddr), spare: 2, note: "MAC" },
  { title: "FROM", cell: (j) => j.sourceAddr ?? "", spare: 1, note: "from" },
];

/**
 * The join list as lines: the table with each join's notes under its row, then the capacity.
 * On a terminal narrower than the table, the columns that tell the least (the address, then
 * the MAC, then the serial) move into a note under the row rather than the rows wrapping.
 */
export function joinListLines(
  unsafeItems: readonly NodeJoin[],
  capacity: JoinCapacity | undefined,
  options: { style: Style; width: number | undefined },
): string[] {
  const { style, width } = options;
  // A registrant's host name could otherwise redraw a row with another machine's pairing code.
  const items = printableView(unsafeItems);
  const lines: string[] = [];
  if (items.length === 0) lines.push("no joins");
  else {
    let shown = COLUMNS;
    const render = () =>
      table(
        shown.map((c) => c.title),
        items.map((j) => shown.map((c) => c.cell(j))),
        {
          style,
          // The state in its colour, and the pairing code an operator compares in bold.
          paint: (cell, column, raw) =>
            column === 1
              ? cell.replace(raw, style.state(raw.replace(/\*$/, "")) + (raw.endsWith("*") ? "*" : ""))
              : column === 2
                ? style.bold(cell)
                : cell,
        },
      );
    let rendered = render();
    const fits = () => width === undefined || rendered.every((line) => visibleWidth(line) <= width);
    for (let spare = 1; !fits() && spare <= 3; spare++) {
      shown = shown.filter((c) => c.spare !== spare);
      rendered = render();
    }
    const moved = COLUMNS.filter((c) => !shown.includes(c)).reverse();
    const [header, ...body] = rendered;
    lines.push(header!);
    body.forEach((row, i) => {
      const join = items[i]!;
      lines.push(row);
      const facts = moved.map((c) => [c.note, c.cell(join)] as const).filter(([, v]) => v !== "");
      const notes = [...notesOf(join), ...(facts.length ? [facts.map(([k, v]) => `${k} ${v}`).join(", ")] : [])];
      for (const note of notes) {
        // On a terminal a note wraps between words under its own indent; in a pipe it stays one line.
        if (width === undefined) lines.push(`  ${note}`);
        else lines.push(...wrap(note, width, 4, 2));
      }
    });
  }
  if (capacity) lines.push("", ...capacityLines(capacity, width));
  return lines;
}

/** How many more machines the cluster can take, in two sentences. */
export function capacityLines(capacity: JoinCapacity, width: number | undefined): string[] {
  const { controlPlane: cp, waiting } = capacity;
  const approved = cp.approved ? ` and ${cp.approved} approved` : "";
  const more =
    cp.remaining === 0
      ? "the cluster is full: no more can be approved (reject or expire the waiting ones, or free a place)"
      : `${cp.remaining} more can be approved`;
  const refused = waiting.refused
    ? `; ${waiting.refused} turned away${waiting.lastRefusedAt ? `, the last at ${formatMoment(waiting.lastRefusedAt)}` : ""}`
    : "";
  const full = waiting.count >= waiting.max ? ": new registrations are refused until one is decided" : "";
  const sentences = [
    `capacity: ${cp.members} control-plane ${cp.members === 1 ? "member" : "members"}${approved}, at most ${cp.max}: ${more}; roles taken: ${capacity.roles.join(", ")}`,
    `waiting: ${waiting.count} of ${waiting.max} slots${full}${refused}`,
  ];
  return width === undefined ? sentences : sentences.flatMap((s) => wrap(s, width, 2, 0));
}

/** One join in full, for `admin joins JOIN_ID` and the answers of approve, reject, …. */
export function joinLines(unsafeJoin: NodeJoin, style: Style): string[] {
  // Every string of a join is a registrant's or the founder's: made printable before it is shown.
  const join = printableView(unsafeJoin);
  const lines = [
    `${style.bold(join.id)}  ${style.state(join.state)}${join.stalled ? style.yellow(" (stalled)") : ""}`,
    `  pairing code   ${join.pairingCode}`,
  ];
  const add = (label: string, value: unknown) => {
    if (value !== undefined && value !== null && value !== "") lines.push(`  ${label.padEnd(14)} ${String(value)}`);
  };
  add("hostname", join.hostname);
  const clock = clockWarning(join.inventory?.clock);
  if (clock) lines.push(`  ${"clock".padEnd(14)} ${style.yellow(clock)}`);
  add("serial", join.systemSerial);
  add("MAC", macOf(join.inventory, join.sourceAddr));
  add("release", join.release);
  add("from", join.sourceAddr);
  if (join.keyFingerprint) lines.push(...fingerprintLines("  key", join.keyFingerprint, 17));
  add("assigned", assignedLine(join));
  if (!assignedLine(join)) add("node id", join.nodeId);
  add("waiting for", join.waitReason);
  if (join.upgrade) add("upgrade", `${join.upgrade.from} → ${join.upgrade.to}`);
  add("reason", join.reason);
  if (join.failedStep) add("failure", failure(join));
  if (join.totalSteps) add("steps", `${join.steps.length} of ${join.totalSteps} reported`);
  if (join.assignment?.copiedFrom) add("copied from", join.assignment.copiedFrom);
  for (const note of join.assignment?.copyNotes ?? []) add("copy note", note);
  if (join.expiresAt && (join.state === "pending" || join.state === "needs-upgrade"))
    add("expires", formatMoment(join.expiresAt));
  return lines;
}
