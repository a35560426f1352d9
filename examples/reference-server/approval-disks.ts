/**
 * The approval's disks: each keyed by a name that survives a reboot (WWN or by-id path), not
 * the system disk, not read-only, named once, and wiped only when the operator typed its key
 * into `confirm` when it is not known to be blank (an unprobed disk counts as holding data).
 * A compute disk gets its pool and storage class defaults.
 * @module
 */

import { diskContents, type DiskAssignment, type Inventory } from "@stratum/join";
import type { ApprovalCheck } from "./approval-check.js";
import type { StoredAssignment } from "./rows.js";

/** One disk of a machine's inventory. */
export type InventoryDisk = NonNullable<Inventory["disks"]>[number];

/**
 * Why giving `disk` a role needs the typed wipe confirmation, for a person ("sda holds data
 * (filesystem (ext4) on sda1)"); undefined only for a disk the machine probed and found blank.
 * One it could not probe may hold anything (docs/protocol.md#disk-data).
 */
export function wipeDestroys(disk: InventoryDisk): string | undefined {
  const contents = diskContents(disk);
  if (contents.state === "blank") return undefined;
  return contents.state === "data"
    ? `${disk.name} holds data (${contents.what})`
    : `${disk.name} was not probed (the machine could not read what holds data on it), so it may hold data`;
}

/** Checks and completes `a.disks`, keeping `a.diskNames` to the disks it names. */
export function checkDisks(a: StoredAssignment, check: ApprovalCheck): void {
  const seen = new Map<string, number>();
  const diskNames: Record<string, string> = { ...(a.diskNames ?? {}) };
  const disks: DiskAssignment[] = (a.disks ?? []).map((d) => ({ ...d }));
  disks.forEach((d, i) => {
    const disk = findDisk(d, `disks[${i}]`, check);
    if (!disk) return;
    if (seen.has(disk.name)) check.err(`disks[${i}].key`, `${disk.name} is already disks[${seen.get(disk.name)}]`);
    seen.set(disk.name, i);
    diskNames[d.key] = disk.name;
    checkDisk(d, disk, `disks[${i}]`, check);
  });
  if (disks.length > 0) {
    a.disks = disks;
    a.diskNames = Object.fromEntries(Object.entries(diskNames).filter(([k]) => disks.some((d) => d.key === k)));
  } else {
    delete a.disks;
    delete a.diskNames;
  }
}

/** The inventory's disk `d.key` names by WWN or by-id path; else an error (and a hint when it names a kernel name). */
function findDisk(d: DiskAssignment, at: string, check: ApprovalCheck): InventoryDisk | undefined {
  const inventoryDisks = check.join.inventory?.disks ?? [];
  const disk = inventoryDisks.find(
    (x) => (x.wwn !== undefined && x.wwn !== "" && x.wwn === d.key) || (x.byId ?? []).includes(d.key),
  );
  if (disk) return disk;
  const byName = inventoryDisks.find((x) => x.path === d.key || x.name === d.key || `/dev/${x.name}` === d.key);
  check.err(
    `${at}.key`,
    byName
      ? `name ${byName.name} by its WWN or a /dev/disk/by-id path: kernel names change between boots`
      : "no disk of this machine has this WWN or /dev/disk/by-id path",
  );
  return undefined;
}

/** One disk against the machine's: usable, its role's fields, and the wipe confirmation. */
function checkDisk(d: DiskAssignment, disk: InventoryDisk, at: string, check: ApprovalCheck): void {
  if ((disk.mountpoints ?? []).length > 0) {
    check.err(
      `${at}.key`,
      `${disk.name} is the system disk (mounted at ${disk.mountpoints!.join(", ")}); stage 1 fixed it`,
    );
    return;
  }
  if (disk.readOnly) check.err(`${at}.key`, `${disk.name} is read-only`);
  if (d.role === "compute") {
    d.pool ??= "local";
    d.storageClass ??= d.pool;
  } else {
    if (d.pool !== undefined) check.err(`${at}.pool`, "only a compute disk has a pool");
    if (d.storageClass !== undefined) check.err(`${at}.storageClass`, "only a compute disk has a storage class");
  }
  const holds = wipeDestroys(disk);
  if (d.role !== "unused" && holds !== undefined && d.confirm !== d.key) {
    check.err(
      `${at}.confirm`,
      d.confirm === undefined || d.confirm === ""
        ? `${holds}; to wipe it, confirm with its key, ${d.key}`
        : `does not match the disk's key; type ${d.key} to wipe ${disk.name}`,
    );
  }
}
