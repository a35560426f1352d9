/**
 * The machine-wide facts of the inventory: processors, memory, firmware, and the layout an
 * earlier Stratum install recorded.
 * @module
 */

import { abortReason } from "../../core/retry.js";
import {
  asRecord,
  at,
  compact,
  exists,
  isDirectory,
  listDir,
  readAttr,
  readText,
  type SourceContext,
} from "./source.js";
import type { InventoryCpu, OsDiskLayout } from "./types.js";

/** One `/proc/cpuinfo` stanza (one logical CPU), keys as printed. */
type CpuStanza = Map<string, string>;

function parseCpuinfo(text: string): CpuStanza[] {
  const stanzas: CpuStanza[] = [];
  for (const block of text.split(/\n\s*\n/)) {
    const stanza: CpuStanza = new Map();
    for (const line of block.split("\n")) {
      const colon = line.indexOf(":");
      if (colon > 0) stanza.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    if (stanza.size > 0) stanzas.push(stanza);
  }
  return stanzas;
}

/**
 * The processors. The model and the virtualization flags come from /proc/cpuinfo; the
 * topology from sysfs, because cpuinfo has no socket or core ids on most non-x86 machines.
 * Cores are counted as distinct sets of sibling threads: `core_id` alone repeats across
 * sockets and dies.
 */
export async function collectCpu(ctx: SourceContext): Promise<InventoryCpu> {
  const stanzas = parseCpuinfo((await readText(at(ctx, "/proc/cpuinfo"))) ?? "");
  const first = stanzas[0];
  // x86 says "model name"; arm64 has no model line, older ARM "Processor", MIPS "cpu model", POWER "cpu".
  const model = first?.get("model name") ?? first?.get("Processor") ?? first?.get("cpu model") ?? first?.get("cpu");
  const flags = new Set((first?.get("flags") ?? "").split(/\s+/));

  const packages = new Set<string>();
  const cores = new Set<string>();
  let threads = 0;
  for (const name of await listDir(at(ctx, "/sys/devices/system/cpu"))) {
    if (!/^cpu\d+$/.test(name)) continue;
    // An offline CPU has no topology directory; it runs nothing, so it is not counted.
    const topology = at(ctx, "/sys/devices/system/cpu", name, "topology");
    const pkg = await readAttr(`${topology}/physical_package_id`);
    if (pkg === undefined) continue;
    threads++;
    packages.add(pkg);
    const siblings =
      (await readAttr(`${topology}/core_cpus_list`)) ??
      (await readAttr(`${topology}/thread_siblings_list`)) ??
      `${pkg}:${(await readAttr(`${topology}/die_id`)) ?? 0}:${(await readAttr(`${topology}/core_id`)) ?? name}`;
    cores.add(siblings);
  }

  if (threads === 0) {
    // No sysfs topology (some containers and hypervisors): the x86 cpuinfo ids still tell.
    for (const stanza of stanzas) {
      if (!stanza.has("processor")) continue;
      threads++;
      const pkg = stanza.get("physical id");
      const core = stanza.get("core id");
      if (pkg !== undefined) packages.add(pkg);
      if (pkg !== undefined && core !== undefined) cores.add(`${pkg}:${core}`);
    }
  }

  return compact<InventoryCpu>({
    model,
    sockets: packages.size || undefined,
    cores: cores.size || undefined,
    threads: threads || undefined,
    virtualization: flags.has("vmx") ? "vmx" : flags.has("svm") ? "svm" : "",
  });
}

/** `MemTotal`: what the kernel can use, the figure `free` and schedulers go by (installed DIMMs minus firmware reservations). */
export async function collectMemoryBytes(ctx: SourceContext): Promise<number | undefined> {
  const meminfo = (await readText(at(ctx, "/proc/meminfo"))) ?? "";
  const kib = /^MemTotal:\s+(\d+)\s*kB$/m.exec(meminfo)?.[1];
  return kib === undefined ? undefined : Number(kib) * 1024;
}

/** The kernel creates /sys/firmware/efi only when it was started by UEFI firmware. */
export function isUefi(ctx: SourceContext): Promise<boolean> {
  return isDirectory(at(ctx, "/sys/firmware/efi"));
}

const LAYOUTS: readonly OsDiskLayout[] = ["compute-tail", "whole-disk"];

/**
 * The OS disk layout an earlier Stratum install wrote down. Absent when there is no record,
 * or the record is unreadable or names no known layout: a wrong layout is worse than none,
 * and a damaged record must not stop the machine from reporting the rest.
 */
export async function readOsDiskLayout(file: string): Promise<OsDiskLayout | undefined> {
  const text = await readAttr(file);
  if (text === undefined) return undefined;
  try {
    const layout = asRecord(JSON.parse(text))?.osDiskLayout;
    return LAYOUTS.find((known) => known === layout);
  } catch {
    return undefined;
  }
}

/**
 * Whether the system says NTP synchronises the clock: systemd's `NTPSynchronized` as
 * `timedatectl show -p NTPSynchronized --value` prints it (timedated asks the kernel, so
 * chrony and ntpd count as well as timesyncd), else systemd-timesyncd's flag file
 * `/run/systemd/timesync/synchronized`, present once it synchronised. Undefined when neither
 * says (no systemd, a container): never a guess, and never a failure of the inventory.
 */
export async function isNtpSynchronized(ctx: SourceContext): Promise<boolean | undefined> {
  let answer: string | undefined;
  try {
    answer = (
      await ctx.run(
        "timedatectl",
        ["show", "-p", "NTPSynchronized", "--value"],
        ctx.signal ? { signal: ctx.signal } : {},
      )
    ).trim();
  } catch {
    if (ctx.signal?.aborted) throw abortReason(ctx.signal);
  }
  if (answer === "yes") return true;
  if (answer === "no") return false;
  return (await exists(at(ctx, "/run/systemd/timesync/synchronized"))) ? true : undefined;
}
