/**
 * Pure text for the console: hardware summaries, sizes, errors, and which buttons a join's
 * state allows. No DOM here, so it can be read (and tested) on its own.
 * @module
 */

import { StratumApiError, StratumError, type Inventory, type JoinState, type NodeJoin } from "@stratum/join";

/** Bytes in the units a disk label uses (decimal: a "2 TB" NVMe shows as 2.0 TB, not 1.8 TiB). */
export function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined || !Number.isFinite(bytes) || bytes < 0) return "?";
  const units = ["B", "kB", "MB", "GB", "TB", "PB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 || value >= 100 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

/** Memory in binary units, as the kernel and every vendor sheet count it (64 GiB, not 68.7 GB). */
export function formatMemory(bytes: number | undefined): string {
  if (bytes === undefined || !Number.isFinite(bytes) || bytes <= 0) return "?";
  const gib = bytes / 2 ** 30;
  return gib >= 1 ? `${Number.isInteger(gib) ? gib : gib.toFixed(1)} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}

/** One line per part of the machine, for the card's hardware list. */
export interface HardwareSummary {
  cpu: string;
  memory: string;
  disks: string;
  nics: string;
}

/** The inventory in four short lines; a machine that reported none says so rather than showing blanks. */
export function summarizeHardware(inventory: Inventory | undefined): HardwareSummary {
  const cpu = inventory?.cpu;
  const cpuText = cpu
    ? [
        cpu.model ?? "unknown CPU",
        cpu.cores !== undefined ? `${cpu.cores} cores` : undefined,
        cpu.threads !== undefined ? `${cpu.threads} threads` : undefined,
      ]
        .filter(Boolean)
        .join(", ")
    : "not reported";
  const disks = inventory?.disks ?? [];
  // A mounted disk is the system disk (spec: Disk.mountpoints); marking it tells an operator
  // at a glance which disks an assignment could still use.
  const diskText = disks.length
    ? disks
        .map(
          (d) =>
            `${d.name} ${formatBytes(d.sizeBytes)}${d.mountpoints?.length ? " (system)" : d.holders?.length ? " (in use)" : ""}`,
        )
        .join(", ")
    : "none reported";
  const nics = inventory?.nics ?? [];
  const nicText = nics.length
    ? nics
        .map((n) => {
          const speed = n.speedMbps
            ? n.speedMbps >= 1000
              ? `${n.speedMbps / 1000} Gb/s`
              : `${n.speedMbps} Mb/s`
            : undefined;
          const detail = [n.link ?? n.operState, speed, n.addresses?.[0]].filter(Boolean).join(", ");
          return detail ? `${n.name} (${detail})` : n.name;
        })
        .join("; ")
    : "none reported";
  return { cpu: cpuText, memory: formatMemory(inventory?.memoryBytes), disks: diskText, nics: nicText };
}

/** Only a `pending` join, or a `failed` one (approval queues it again), can be approved (spec: approveNodeJoin). */
export function canApprove(state: JoinState): boolean {
  return state === "pending" || state === "failed";
}

/** Any join that has not started delivering can be rejected, `needs-upgrade` included (spec: rejectNodeJoin). */
export function canReject(state: JoinState): boolean {
  return state === "needs-upgrade" || state === "pending" || state === "approved";
}

/** A line under the card's title saying why a join is where it is, when the API says. */
export function explainState(join: NodeJoin): string | undefined {
  switch (join.state) {
    case "approved":
      return join.waitReason ? `Queued: ${join.waitReason}` : "Queued";
    case "needs-upgrade":
      return join.upgrade
        ? `Upgrading itself from ${join.upgrade.from} to ${join.upgrade.to}`
        : "Upgrading itself to the cluster's release";
    case "installing":
    case "delivering": {
      const running = join.steps.find((s) => s.status === "running");
      return running ? running.title : join.currentStep;
    }
    case "failed":
      return `${join.failedStepTitle ?? join.failedStep ?? "A step"} failed${join.failedError ? `: ${join.failedError}` : ""}`;
    case "rejected":
      return join.reason ? `Rejected: ${join.reason}` : "Rejected";
    default:
      return join.stalled ? "Stalled: the machine has been silent for 10 minutes" : undefined;
  }
}

/** What the status area shows for a failure: a headline, and the field errors under it. */
export interface ErrorReport {
  /** `CODE: detail`, e.g. `JOIN_APPROVAL_REFUSED: The assignment does not fit this machine.` */
  headline: string;
  /** `field: message` for each field the API named. */
  fields: string[];
  /** The request id to quote, when the API gave one. */
  requestId: string | undefined;
}

/**
 * Describes any failure of an SDK call for a person. Branches on the error's class and `code`
 * (never on its message); the SDK's messages carry no token or code, so they can be shown.
 */
export function describeError(error: unknown, apiUrl?: string): ErrorReport {
  if (error instanceof StratumApiError) {
    const text = error.detail ?? error.title ?? `HTTP ${error.status}`;
    return {
      headline: `${error.code}: ${text}`,
      fields: error.errors.map((e) => (e.field ? `${e.field}: ${e.message}` : e.message)),
      requestId: error.requestId,
    };
  }
  if (StratumError.is(error)) {
    // A browser hides why a request failed (refused, wrong URL, CORS); say where to look.
    const hint =
      error.code === "NETWORK" && apiUrl
        ? `. Is the API at ${apiUrl} running, and does it allow this page's origin (CORS)?`
        : "";
    return { headline: `${error.code}: ${error.message}${hint}`, fields: [], requestId: undefined };
  }
  return { headline: error instanceof Error ? error.message : String(error), fields: [], requestId: undefined };
}
