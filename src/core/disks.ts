/**
 * What a joining machine's disks hold and how its OS disks are laid out, read from its
 * inventory: the one reading the founder's approval check, the console and the CLI share, so
 * that a disk the console calls blank is one the founder lets go without a wipe confirmation.
 *
 * The seed page says of `holders`: "What already holds data on the disk. Empty means blank."
 * Only empty means blank. A disk whose `holders` are absent was not probed (the joiner could
 * not read its content), and a disk that was not probed may hold anything: it is treated as
 * holding data, so wiping it needs the same typed confirmation (docs/protocol.md#disk-data).
 * @module
 */
import type { Disk, Inventory } from "../types.js";

/**
 * What a disk holds, as far as the inventory says:
 *
 * - `blank`: probed, and nothing holds data on it (no holder, partition or stacked device);
 * - `data`: something holds data on it; `what` says what, for a person;
 * - `unknown`: its content was not probed (`holders` absent), so it may hold data.
 *
 * Only `blank` may be given a role without the wipe confirmation.
 */
export type DiskContents =
  | {
      /** Probed, and nothing holds data on it. */
      state: "blank";
    }
  | {
      /** Something holds data on it. */
      state: "data";
      /** What holds data, for a person ("filesystem (ext4) on sda1"). */
      what: string;
    }
  | {
      /** Not probed: it may hold data. */
      state: "unknown";
    };

/** What `disk` holds ({@link DiskContents}); an unprobed disk is `unknown`, never `blank`. */
export function diskContents(disk: Disk): DiskContents {
  const holders = disk.holders;
  if (holders !== undefined && holders.length > 0) {
    const what = holders.map((h) => `${h.kind}${h.detail ? ` (${h.detail})` : ""} on ${h.device}`).join(", ");
    return { state: "data", what };
  }
  const partitions = disk.partitions ?? [];
  if (partitions.length > 0) return { state: "data", what: `${partitions.length} partition(s)` };
  if ((disk.stack ?? []).length > 0) return { state: "data", what: "a device stacked on it" };
  if (holders === undefined) return { state: "unknown" };
  return { state: "blank" };
}

/**
 * Unpartitioned space at the end of an OS disk that counts as a compute tail: 1 GiB. Alignment
 * and the GPT's backup header leave a few MiB free on a whole-disk layout; a compute tail is
 * tens of GiB at least.
 */
const COMPUTE_TAIL_MIN_BYTES = 1024 ** 3;

/**
 * How stage 1 laid out the OS disks: the inventory's `osDiskLayout` when the joiner had an
 * install record, else read off the OS disks' partitions as the seed page says ("Absent on a
 * machine with no record; the founder then reads it off the disks' partitions"). An OS disk
 * is a mounted one; its partitions say what stage 1 left free at its end: a compute tail (at
 * least 1 GiB not covered by a partition) or nothing (`whole-disk`). Undefined when no OS disk
 * reports its size and partitions, or the OS disks disagree: the layout is then unknown, and
 * nothing is assumed.
 */
export function osDiskLayoutOf(inventory: Inventory | undefined): Inventory["osDiskLayout"] {
  if (inventory?.osDiskLayout !== undefined) return inventory.osDiskLayout;
  const layouts = new Set<NonNullable<Inventory["osDiskLayout"]>>();
  for (const disk of inventory?.disks ?? []) {
    if ((disk.mountpoints ?? []).length === 0) continue;
    const partitions = disk.partitions ?? [];
    if (disk.sizeBytes === undefined || partitions.length === 0) return undefined;
    const used = partitions.reduce((sum, p) => sum + p.sizeBytes, 0);
    layouts.add(disk.sizeBytes - used >= COMPUTE_TAIL_MIN_BYTES ? "compute-tail" : "whole-disk");
  }
  return layouts.size === 1 ? [...layouts][0] : undefined;
}
