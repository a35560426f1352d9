/**
 * Pure text for the console: what a machine is (hardware, network cards, identity), what its
 * state means in words, and how far its install has come. No DOM here, so it can be read (and
 * tested) on its own.
 * @module
 */

import {
  diskContents,
  joinAllows,
  type DiskContents,
  type Inventory,
  type JoinState,
  type Nic,
  type NodeJoin,
} from "@stratum/join";
import { formatAgo, formatCountdown, formatDuration, formatLocalTime } from "./time.js";

/** Bytes in the units a disk label uses (decimal: a "2 TB" NVMe shows as 2.0 TB, not 1.8 TiB). */
export function formatBytes(bytes: number | undefined): string | undefined {
  if (bytes === undefined || !Number.isFinite(bytes) || bytes < 0) return undefined;
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
export function formatMemory(bytes: number | undefined): string | undefined {
  if (bytes === undefined || !Number.isFinite(bytes) || bytes <= 0) return undefined;
  const gib = bytes / 2 ** 30;
  return gib >= 1 ? `${Number.isInteger(gib) ? gib : gib.toFixed(1)} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`;
}

/**
 * Interfaces that say nothing about which machine this is or how it is cabled: loopback, and
 * the kernel's and container runtimes' virtual devices (`ifb0` is the traffic-shaping device
 * every VM image carries). Matched by name prefix, as `ip link` users know them.
 */
const VIRTUAL_NIC = /^(lo|ifb|dummy|veth|docker|virbr|vnet|tun|tap|cni|flannel|cali|kube-ipvs|sit|ip6tnl|gre|erspan)/;

/** True for a network interface worth showing: a real or bonded card, not a virtual device or a MAC-less stub. */
export function isRealNic(nic: Nic): boolean {
  if (VIRTUAL_NIC.test(nic.name)) return false;
  const mac = nic.permanentMac || nic.mac;
  // A link the kernel cannot judge and no hardware address: a software device by another name.
  if (!mac || /^(00:){5}00$/.test(mac)) return nic.link !== "unknown" && nic.operState !== "unknown";
  return true;
}

/** "1 Gb/s", "25 Gb/s", "100 Mb/s". */
export function formatSpeed(mbps: number | undefined): string | undefined {
  if (!mbps || mbps < 0) return undefined;
  return mbps >= 1000 ? `${mbps / 1000} Gb/s` : `${mbps} Mb/s`;
}

/** One network card in a line: name, MAC, link, speed and addresses. */
export function describeNic(nic: Nic): string {
  const mac = nic.permanentMac || nic.mac;
  const link = nic.link === "up" ? "link up" : nic.link === "down" ? "no link" : undefined;
  const parts = [mac, link, formatSpeed(nic.speedMbps), ...(nic.addresses ?? [])].filter(Boolean);
  return parts.length ? `${nic.name}: ${parts.join(", ")}` : nic.name;
}

/** One row of a card's hardware list. */
export interface HardwareRow {
  term: string;
  /** One line, or several (one per card or disk). */
  value: string | string[];
}

/** A disk in a word or two, in the hardware summary. */
const DISK_SUMMARY: Record<DiskContents["state"], string> = {
  blank: "blank",
  data: "holds data",
  unknown: "not probed",
};

/**
 * The inventory as rows to show. What a machine did not report is left out (no "Memory ?"),
 * except a machine that reported nothing at all, which says so in one row.
 */
export function summarizeHardware(inventory: Inventory | undefined): HardwareRow[] {
  if (!inventory || (!inventory.cpu && !inventory.memoryBytes && !inventory.disks && !inventory.nics)) {
    return [{ term: "Hardware", value: "not reported by the machine" }];
  }
  const rows: HardwareRow[] = [];
  const cpu = inventory.cpu;
  if (cpu) {
    const counts = [
      cpu.cores !== undefined ? `${cpu.cores} cores` : undefined,
      cpu.threads !== undefined ? `${cpu.threads} threads` : undefined,
    ].filter(Boolean);
    rows.push({ term: "CPU", value: [cpu.model ?? "unknown model", ...counts].join(", ") });
  }
  const memory = formatMemory(inventory.memoryBytes);
  if (memory) rows.push({ term: "Memory", value: memory });
  const disks = inventory.disks ?? [];
  if (disks.length) {
    // A mounted disk is the system disk (spec: Disk.mountpoints); marking it tells an operator
    // at a glance which disks an assignment could still use.
    rows.push({
      term: "Disks",
      value: disks.map((d) =>
        [
          d.name,
          formatBytes(d.sizeBytes),
          d.model,
          d.mountpoints?.length ? "system" : DISK_SUMMARY[diskContents(d).state],
        ]
          .filter(Boolean)
          .join(", "),
      ),
    });
  }
  const nics = (inventory.nics ?? []).filter(isRealNic);
  if (nics.length) rows.push({ term: "Network", value: nics.map(describeNic) });
  return rows;
}

/**
 * Why a wipe of the disk needs its typed key, in words ("holds data: filesystem (ext4) on
 * sda1", "not probed: it may hold data"), or undefined for a disk the machine probed and found
 * blank: the founder's reading (`diskContents`), so the page never calls a disk blank that the
 * founder would not.
 */
export function diskData(disk: NonNullable<Inventory["disks"]>[number]): string | undefined {
  const contents = diskContents(disk);
  if (contents.state === "blank") return undefined;
  return contents.state === "data"
    ? `holds data: ${contents.what}`
    : "not probed: the machine could not read what is on it, so it may hold data";
}

/**
 * The first four bytes of a key fingerprint ("3A:1B:2C:3D"): enough to tell two machines
 * apart at a glance and to compare with the machine's own screen; the full one is in the
 * card's details.
 */
export function shortFingerprint(fingerprint: string | undefined): string | undefined {
  if (!fingerprint) return undefined;
  return fingerprint.split(":").slice(0, 4).join(":");
}

/** The MACs of a machine's real cards, for telling twins apart. */
export function macsOf(inventory: Inventory | undefined): string[] {
  return (inventory?.nics ?? [])
    .filter(isRealNic)
    .map((n) => n.permanentMac || n.mac)
    .filter((m): m is string => Boolean(m));
}

/** A machine named so that no other can be mistaken for it: "node-2 (nj-8w2k4m1p, pairing code 4F7-K2Q)". */
export function machineName(join: NodeJoin): string {
  return `${join.hostname || "unnamed machine"} (${join.id}, pairing code ${join.pairingCode})`;
}

/** Each state in a word or two, as an operator says it. */
export const STATE_WORDS: Record<JoinState, string> = {
  "needs-upgrade": "Upgrading itself",
  pending: "Waiting for approval",
  approved: "Approved, queued",
  delivering: "Delivering",
  installing: "Installing",
  joined: "Joined",
  failed: "Failed",
  rejected: "Rejected",
  expired: "Expired",
};

/** Whether the card offers Approve: the founder's own rule (`joinAllows`, spec: approveNodeJoin). */
export function canApprove(state: JoinState): boolean {
  return joinAllows(state, "approve");
}

/** Whether the card offers Reject (spec: rejectNodeJoin): a join not running or over, `needs-upgrade` and `failed` included. */
export function canReject(state: JoinState): boolean {
  return joinAllows(state, "reject");
}

/**
 * Whether the card offers Fail: a running join (`delivering`, `installing`), for a machine
 * that will not report again (spec: failNodeJoin).
 */
export function canFail(state: JoinState): boolean {
  return joinAllows(state, "fail");
}

/** Whether the card offers Expire: a waiting join, its slot freed and its key free to register again (spec: expireNodeJoin). */
export function canExpire(state: JoinState): boolean {
  return joinAllows(state, "expire");
}

/** Whether the card offers Retry: a failed join, queued again with the assignment it had (spec: retryNodeJoin). */
export function canRetry(state: JoinState): boolean {
  return joinAllows(state, "retry");
}

/** How far an install has come: the step running now, out of the plan's steps (or those reported so far). */
export interface InstallProgress {
  /** 1-based position of the running (or last) step. */
  current: number;
  /** The plan's total when the machine sent it (`totalSteps`), else the steps reported so far. */
  total: number;
  /** "Step 3 of 5: Joining the OpenBao raft". */
  headline: string;
  /** Since delivery (or the first step), for "12 min elapsed"; up to the join's end once it ended. */
  elapsedMs: number | undefined;
}

/** States in which nothing runs any more: a clock about the install stops at the join's last change. */
const OVER: readonly JoinState[] = ["joined", "failed", "rejected", "expired"];

/** True once the join ended (for now): its timers stop. */
export function isOver(state: JoinState): boolean {
  return OVER.includes(state);
}

/** The install's progress from the steps the machine reported, or undefined before any. */
export function installProgress(join: NodeJoin, now: number): InstallProgress | undefined {
  const steps = join.steps;
  if (!steps.length) return undefined;
  const running = steps.findIndex((s) => s.status === "running");
  const failed = steps.findIndex((s) => s.status === "failed");
  const index = failed >= 0 ? failed : running >= 0 ? running : steps.length - 1;
  const step = steps[index]!;
  const started = Date.parse(join.deliveredAt ?? steps[0]!.at ?? "");
  // A join that ended counts its time up to its end, not up to now.
  const until = isOver(join.state) ? Date.parse(join.updatedAt) : now;
  const total = Math.max(join.totalSteps ?? 0, steps.length);
  return {
    current: index + 1,
    total,
    headline: `Step ${index + 1} of ${total}: ${step.title || step.name}`,
    elapsedMs: Number.isNaN(started) || Number.isNaN(until) ? undefined : Math.max(0, until - started),
  };
}

/** What a join was assigned, for its card once approved: name, node id, management address, link addresses. */
export function assignedSummary(join: NodeJoin): string | undefined {
  const a = join.assignment;
  if (!a || join.state === "pending" || join.state === "needs-upgrade") return undefined;
  const mgmt = a.mgmt?.address ? `${a.mgmt.address}${a.mgmt.interface ? ` on ${a.mgmt.interface}` : ""}` : undefined;
  const links = (a.links ?? []).filter((l) => l.addresses?.length).map((l) => `${l.name} ${l.addresses!.join(", ")}`);
  return [`${a.name ?? join.hostname ?? join.id}${join.nodeId ? `, node ${join.nodeId}` : ""}`, mgmt, ...links]
    .filter(Boolean)
    .join("; ");
}

/** A pairing code as typed (any case, any dashes; O reads as 0, I and L as 1), for comparing. */
function canonicalPairing(text: string): string {
  return text
    .toUpperCase()
    .replace(/[^0-9A-Z]/g, "")
    .replace(/O/g, "0")
    .replace(/[IL]/g, "1");
}

/** Everything a search finds a machine by, lower case: names, ids, serial, MACs, addresses. */
function searchable(join: NodeJoin): string[] {
  const nics = join.inventory?.nics ?? [];
  return [
    join.id,
    join.hostname,
    join.systemSerial,
    join.sourceAddr,
    join.nodeId,
    join.assignment?.name,
    join.assignment?.mgmt?.address,
    ...nics.flatMap((n) => [n.permanentMac, n.mac, ...(n.addresses ?? []).map((a) => a.split("/")[0])]),
    ...(join.assignment?.links ?? []).flatMap((l) => (l.addresses ?? []).map((a) => a.split("/")[0])),
  ]
    .filter((v): v is string => Boolean(v))
    .map((v) => v.toLowerCase());
}

/**
 * True when every word of `query` finds the machine: its pairing code however typed
 * ("sx7bpm", "SX7-BPM"), or a part of its host name, join or node id, serial, a MAC (with or
 * without colons), an address. An empty query finds every machine.
 */
export function matchesSearch(join: NodeJoin, query: string): boolean {
  const words = query.trim().toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return true;
  const fields = searchable(join);
  const bare = fields.map((f) => f.replace(/[:-]/g, ""));
  const pairing = canonicalPairing(join.pairingCode);
  return words.every((word) => {
    const code = canonicalPairing(word);
    if (code.length >= 3 && pairing.includes(code) && /^[0-9a-z-]+$/i.test(word)) return true;
    return fields.some((f) => f.includes(word)) || bare.some((f) => f.includes(word.replace(/[:-]/g, "")));
  });
}

/**
 * What failed, in words, without a final stop: "Preparing disks failed: no space", or for a
 * join an operator failed (`failedStep` `operator`, titled "Failed by <who>", the reason as the
 * error) "Failed by alice: the machine lost power".
 */
export function failureInWords(join: NodeJoin): string {
  const what =
    join.failedStep === "operator"
      ? (join.failedStepTitle ?? "Failed by an operator")
      : `${join.failedStepTitle ?? join.failedStep ?? "A step"} failed`;
  return `${what}${join.failedError ? `: ${join.failedError.replace(/\.$/, "")}` : ""}`;
}

/**
 * A sentence saying where a join stands and what happens next, in words (the API's own
 * `waitReason` is already a sentence: it is shown as it is, not behind a second "Queued:").
 */
export function explainState(join: NodeJoin, now: number): string {
  switch (join.state) {
    case "needs-upgrade": {
      const target = join.upgrade ? `from ${join.upgrade.from} to ${join.upgrade.to}` : "to the cluster's release";
      const failure = join.failedError
        ? ` Its last try failed (${join.failedStepTitle ?? "upgrade"}): ${join.failedError}; it retries by itself.`
        : "";
      return `Upgrading itself ${target}; it can be approved once it registers again on the new release.${failure}`;
    }
    case "pending": {
      const expires = formatCountdown(join.expiresAt, now);
      const until = expires ? ` Unless approved, it expires ${expires} (${formatLocalTime(join.expiresAt)}).` : "";
      // The API's waitReason is what follows "waiting for": here, a free place in a full cluster.
      if (join.waitReason)
        return `It cannot be approved now: it is waiting for ${join.waitReason.replace(/\.$/, "")}.${until}`;
      return `Check that its screen shows this pairing code, then approve or reject it.${until}`;
    }
    case "approved":
      return `Approved; waiting for ${(join.waitReason ?? "its turn: delivery starts shortly").replace(/\.$/, "")}.`;
    case "delivering": {
      const since = formatAgo(join.deliveredAt, now);
      return `Its configuration is ready; waiting for the machine to collect it and start installing${since ? ` (ready since ${since.replace(/ ago$/, "")})` : ""}.`;
    }
    case "installing": {
      const progress = installProgress(join, now);
      const elapsed = progress?.elapsedMs !== undefined ? `, ${formatDuration(progress.elapsedMs)} elapsed` : "";
      return progress
        ? `Installing, ${progress.headline.charAt(0).toLowerCase()}${progress.headline.slice(1)}${elapsed}.`
        : "Installing.";
    }
    case "joined":
      return `Joined the cluster${join.nodeId ? ` as node ${join.nodeId}` : ""}.`;
    case "failed":
      return `${failureInWords(join)}. Retry queues it again with the same assignment; approve it again to change the assignment first.`;
    case "rejected":
      return join.reason ? `Rejected: ${join.reason}` : "Rejected.";
    case "expired":
      return "Nobody approved it in time; the machine has to register again with a live join code.";
  }
}

/**
 * The cluster's release as the machines show it: a machine that upgrades is told the
 * cluster's release; any other registered on it. The admin API has no call that says it.
 */
export function clusterRelease(joins: readonly NodeJoin[]): string | undefined {
  for (const join of joins) {
    if (join.state === "needs-upgrade") {
      if (join.upgrade?.to) return join.upgrade.to;
    } else if (join.release) return join.release;
  }
  return undefined;
}
