/**
 * The disk part of the inventory. Each field takes the first source that knows it: lsblk,
 * then the udev database, then sysfs (and the mount table for what is mounted). lsblk is
 * preferred because it is what an operator compares the inventory with; the fallbacks
 * exist because containers and minimal installers often lack lsblk, udev, or both.
 * @module
 */

import {
  decodeUdev,
  flattenLsblk,
  indexBlockDevices,
  readDeviceUse,
  readUdev,
  type BlockDev,
  type BlockIndex,
  type DeviceUse,
  type LsblkRow,
  type UdevEntry,
} from "./blockdev.js";
import {
  asBool,
  asInt,
  asString,
  at,
  canOpen,
  compact,
  compareNatural,
  linkName,
  listDir,
  readAttr,
  readBytes,
  readInt,
  realSystemPath,
  runJson,
  type SourceContext,
} from "./source.js";
import { throwIfAborted } from "../../core/retry.js";
import type { DiskHolder, DiskPartition, InventoryDisk, StackDevice } from "./types.js";

/**
 * Whole devices that are not disks a machine could be installed on or store data on:
 * loop, ram and zram are memory or files, dm and md are built on disks (they appear in
 * `stack`), sr is optical, nbd a network export, fd a floppy, and the eMMC boot and RPMB
 * areas are firmware regions of the one eMMC disk.
 */
const NOT_A_DISK = /^(loop|ram|zram|dm-|md|sr|nbd|fd)\d|^md_|^mmcblk\d+(boot\d+|rpmb)$/;

/** Everything known about one block device, gathered once. */
interface Facts {
  readonly dev: BlockDev;
  readonly lsblk: LsblkRow | undefined;
  readonly udev: UdevEntry | undefined;
  readonly use: DeviceUse | undefined;
}

/**
 * Collects the whole disks, in kernel-name order. `lsblkJson` is the output of
 * {@link runLsblk}, or undefined when lsblk was not available.
 */
export async function collectDisks(ctx: SourceContext, lsblkJson: unknown): Promise<InventoryDisk[]> {
  const index = await indexBlockDevices(ctx);
  const uses = await readDeviceUse(ctx, index);
  const lsblk = flattenLsblk(lsblkJson);
  const byIdLinks = await readByIdLinks(ctx);

  const facts = async (dev: BlockDev): Promise<Facts> => ({
    dev,
    lsblk: lsblk?.get(dev.name),
    udev: await readUdev(ctx, dev.majmin),
    use: uses.get(dev.name),
  });

  const disks: InventoryDisk[] = [];
  for (const dev of index.byName.values()) {
    throwIfAborted(ctx.signal);
    if (dev.parent !== undefined || NOT_A_DISK.test(dev.name)) continue;
    // NVMe multipath exposes each path (`nvme0c0n1`) as a hidden device next to the real one.
    if ((await readAttr(`${dev.dir}/hidden`)) === "1") continue;
    const disk = await describeDisk(ctx, index, uses, await facts(dev), facts, byIdLinks);
    // Size 0 is an empty card reader slot or an unattached device: nothing to inventory.
    if (disk.sizeBytes === 0) continue;
    disks.push(disk);
  }
  return disks;
}

/** Fetches lsblk's JSON, or undefined when lsblk is missing or unusable. */
export function runLsblk(ctx: SourceContext): Promise<unknown> {
  return runJson(ctx, "lsblk", ["--json", "--bytes", "--output-all"]);
}

async function describeDisk(
  ctx: SourceContext,
  index: BlockIndex,
  uses: ReadonlyMap<string, DeviceUse>,
  disk: Facts,
  facts: (dev: BlockDev) => Promise<Facts>,
  byIdLinks: Map<string, string[]>,
): Promise<InventoryDisk> {
  const { dev, lsblk, udev } = disk;
  const dir = dev.dir;
  const partitions = await Promise.all((index.partitionsOf.get(dev.name) ?? []).map(facts));
  const stackDepths = await walkStack(index, dev);
  const stack = await Promise.all([...stackDepths.keys()].map((name) => facts(index.byName.get(name)!)));
  stack.sort(
    (a, b) => stackDepths.get(b.dev.name)! - stackDepths.get(a.dev.name)! || compareNatural(a.dev.name, b.dev.name),
  );

  // Mounts anywhere on the disk: the disk, its partitions, the stacked devices and their partitions.
  const onDisk = [
    dev,
    ...partitions.map((p) => p.dev),
    ...stack.flatMap((s) => [s.dev, ...(index.partitionsOf.get(s.dev.name) ?? [])]),
  ];
  const mountpoints = [...new Set(onDisk.flatMap((d) => uses.get(d.name)?.mountpoints ?? []))].sort();

  const byId = new Set(byIdLinks.get(dev.name) ?? []);
  for (const link of udev?.links ?? []) if (link.startsWith("disk/by-id/")) byId.add(`/dev/${link}`);

  const isNvme = dev.name.startsWith("nvme");
  const sysPath = await realSystemPath(ctx, dir);
  const sectors = await readInt(`${dir}/size`);

  return compact<InventoryDisk>({
    name: dev.name,
    path: asString(lsblk?.path) ?? devNode(dev.name),
    byId: [...byId].sort(compareNatural),
    // An MMC card's product name is its `name` attribute; lsblk 2.38 does not look there.
    model:
      asString(lsblk?.model) ??
      udevText(udev, "ID_MODEL_ENC", "ID_MODEL") ??
      (await readAttr(`${dir}/device/model`)) ??
      (dev.name.startsWith("mmcblk") ? await readAttr(`${dir}/device/name`) : undefined),
    serial:
      asString(lsblk?.serial) ??
      udevText(udev, "ID_SERIAL_SHORT") ??
      (await readAttr(`${dir}/device/serial`)) ??
      (await readAttr(`${dir}/serial`)) ??
      vpdSerial(await readBytes(`${dir}/device/vpd_pg80`)),
    wwn:
      asString(lsblk?.wwn) ??
      udevText(udev, "ID_WWN_WITH_EXTENSION", "ID_WWN") ??
      wwnFromWwid((await readAttr(`${dir}/wwid`)) ?? (await readAttr(`${dir}/device/wwid`)), isNvme),
    transport: asString(lsblk?.tran) ?? (sysPath ? transportFromPath(sysPath) : undefined),
    // sysfs counts 512-byte sectors whatever the disk's logical block size.
    sizeBytes: asInt(lsblk?.size) ?? (sectors === undefined ? undefined : sectors * 512),
    rotational: asBool(lsblk?.rota) ?? attrBool(await readAttr(`${dir}/queue/rotational`)),
    removable: asBool(lsblk?.rm) ?? attrBool(await readAttr(`${dir}/removable`)),
    readOnly: asBool(lsblk?.ro) ?? attrBool(await readAttr(`${dir}/ro`)),
    mountpoints,
    holders: await describeHolders(ctx, index, disk, partitions),
    partitions: await Promise.all(partitions.map(describePartition)),
    stack: await Promise.all(stack.map(describeStackDevice)),
  });
}

/**
 * Everything built on the disk, with its depth: one more than the deepest device it sits
 * on, so that sorting by depth puts every device before the ones it is built on (LVs
 * before the md array under them), the order in which they have to be taken down.
 */
async function walkStack(index: BlockIndex, disk: BlockDev): Promise<Map<string, number>> {
  const depths = new Map<string, number>();
  const visit = async (dev: BlockDev, depth: number): Promise<void> => {
    for (const holder of await listDir(`${dev.dir}/holders`)) {
      const held = index.byName.get(holder);
      if (!held || (depths.get(holder) ?? -1) >= depth + 1) continue;
      depths.set(holder, depth + 1);
      await visit(held, depth + 1);
      // A partitioned md array or dm device: its partitions' holders are on the disk too.
      for (const part of index.partitionsOf.get(holder) ?? []) await visit(part, depth + 1);
    }
  };
  await visit(disk, 0);
  for (const part of index.partitionsOf.get(disk.name) ?? []) await visit(part, 1);
  return depths;
}

async function describePartition(part: Facts): Promise<DiskPartition> {
  const { dev, lsblk, udev } = part;
  const sectors = await readInt(`${dev.dir}/size`);
  const uevent = await readUevent(dev.dir);
  return compact<DiskPartition>({
    number: Number(await readAttr(`${dev.dir}/partition`)),
    name: dev.name,
    path: asString(lsblk?.path) ?? devNode(dev.name),
    sizeBytes: asInt(lsblk?.size) ?? (sectors ?? 0) * 512,
    fsType: signatureOf(part),
    label: asString(lsblk?.label) ?? udevText(udev, "ID_FS_LABEL_ENC", "ID_FS_LABEL"),
    // The kernel itself knows a GPT partition's name (uevent PARTNAME), even without udev.
    partLabel: asString(lsblk?.partlabel) ?? udevText(udev, "ID_PART_ENTRY_NAME") ?? uevent.get("PARTNAME"),
  });
}

async function describeStackDevice(item: Facts): Promise<StackDevice> {
  const { dev, lsblk } = item;
  const dmName = dev.name.startsWith("dm-") ? await readAttr(`${dev.dir}/dm/name`) : undefined;
  return {
    name: asString(lsblk?.name) ?? dmName ?? dev.name,
    path: asString(lsblk?.path) ?? (dmName ? `/dev/mapper/${dmName}` : devNode(dev.name)),
    type: asString(lsblk?.type) ?? (await stackType(dev)),
  };
}

/** lsblk's TYPE, derived the way lsblk derives it from sysfs (util-linux `get_type`). */
async function stackType(dev: BlockDev): Promise<string> {
  if (dev.name.startsWith("dm-")) {
    // The dm UUID's prefix names the subsystem that owns the mapping: LVM, CRYPT, mpath, part1…
    const prefix = (await readAttr(`${dev.dir}/dm/uuid`))?.split("-")[0];
    if (!prefix) return "dm";
    return (prefix.toLowerCase().startsWith("part") ? "part" : prefix).toLowerCase();
  }
  if (dev.name.startsWith("md")) return ((await readAttr(`${dev.dir}/md/level`)) ?? "md").toLowerCase();
  return "disk";
}

/** The signature on a device: lsblk, udev, else the type it is mounted as (the kernel had to know). */
function signatureOf(item: Facts): string | undefined {
  return asString(item.lsblk?.fstype) ?? udevText(item.udev, "ID_FS_TYPE") ?? item.use?.fsType;
}

const KIND_OF_SIGNATURE: Record<string, string> = {
  LVM2_member: "lvm-pv",
  linux_raid_member: "md-member",
  crypto_LUKS: "luks",
};

/**
 * What holds data on the disk. Signatures come from lsblk or udev (which probed the
 * content) and from the mount table; the partition table and the md/dm holders also from
 * sysfs structure alone. An empty list means blank, so it is only returned when something
 * actually probed the content: a udev entry for the disk, or lsblk running where this
 * process can open the device. Otherwise a disk with no visible structure gets no
 * `holders` at all: "unknown" must never read as "safe to wipe".
 */
async function describeHolders(
  ctx: SourceContext,
  index: BlockIndex,
  disk: Facts,
  partitions: Facts[],
): Promise<DiskHolder[] | undefined> {
  const holders: DiskHolder[] = [];
  const tableType = asString(disk.lsblk?.pttype) ?? udevText(disk.udev, "ID_PART_TABLE_TYPE");
  if (tableType || partitions.length > 0)
    holders.push(compact({ kind: "partition-table", device: disk.dev.name, detail: tableType }));

  for (const item of [disk, ...partitions]) {
    const device = item.dev.name;
    const own: DiskHolder[] = [];
    const signature = signatureOf(item);
    if (signature) {
      const kind = KIND_OF_SIGNATURE[signature] ?? "filesystem";
      own.push(compact({ kind, device, detail: kind === "filesystem" ? signature : undefined }));
    }
    for (const name of await listDir(`${item.dev.dir}/holders`)) {
      const holder = index.byName.get(name);
      if (name.startsWith("md")) {
        const member = own.find((h) => h.kind === "md-member");
        if (member) member.detail = name;
        else own.push({ kind: "md-member", device, detail: name });
      } else {
        const dmName = (holder && (await readAttr(`${holder.dir}/dm/name`))) ?? name;
        const opened = own.find((h) => h.kind === "luks");
        if (opened) opened.detail ??= dmName;
        // A PV's logical volumes are listed in `stack`; a dm device on anything else is a holder of its own.
        else if (!own.some((h) => h.kind === "lvm-pv")) own.push({ kind: "dm", device, detail: dmName });
      }
    }
    holders.push(...own);
  }

  if (holders.length > 0) return holders;
  const probed =
    disk.udev !== undefined || (disk.lsblk !== undefined && (await canOpen(at(ctx, devNode(disk.dev.name)))));
  return probed ? [] : undefined;
}

/** `/dev/disk/by-id` links by the kernel name of what they point at. */
async function readByIdLinks(ctx: SourceContext): Promise<Map<string, string[]>> {
  const links = new Map<string, string[]>();
  const dir = at(ctx, "/dev/disk/by-id");
  for (const link of await listDir(dir)) {
    const target = await linkName(`${dir}/${link}`);
    if (target) links.set(target, [...(links.get(target) ?? []), `/dev/disk/by-id/${link}`]);
  }
  return links;
}

/** The node of a kernel name; sysfs writes `/` in names as `!` (`cciss!c0d0`). */
function devNode(name: string): string {
  return `/dev/${name.replaceAll("!", "/")}`;
}

/** The first udev property set, `_ENC` variants decoded (they keep spaces that the plain ones turn into `_`). */
function udevText(udev: UdevEntry | undefined, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const raw = udev?.props.get(key);
    if (raw === undefined) continue;
    const value = decodeUdev(raw).trim();
    if (value) return value;
  }
  return undefined;
}

async function readUevent(dir: string): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  for (const line of ((await readAttr(`${dir}/uevent`)) ?? "").split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0 && line.slice(eq + 1)) values.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return values;
}

function attrBool(value: string | undefined): boolean | undefined {
  return value === "1" ? true : value === "0" ? false : undefined;
}

/** The unit serial number of SCSI VPD page 0x80: a 4-byte header, then ASCII padded with spaces. */
function vpdSerial(page: Buffer | undefined): string | undefined {
  if (!page || page.length < 4 || page[1] !== 0x80) return undefined;
  const length = (page[2]! << 8) | page[3]!;
  const serial = page
    .subarray(4, 4 + length)
    .toString("latin1")
    .replace(/\0/g, "")
    .trim();
  return serial || undefined;
}

/**
 * A WWN from sysfs's `wwid`, written as udev (and so lsblk) writes it: NVMe ids unchanged
 * (`eui.…`, `nvme.…`), SCSI NAA and EUI-64 designators as `0x…`. Vendor-specific `t10.`
 * ids are not WWNs and udev does not report them as such.
 */
function wwnFromWwid(wwid: string | undefined, nvme: boolean): string | undefined {
  if (!wwid) return undefined;
  if (nvme) return wwid;
  const designator = /^(?:naa|eui)\.([0-9a-fA-F]+)$/.exec(wwid);
  return designator ? `0x${designator[1]!.toLowerCase()}` : undefined;
}

/**
 * The transport from where the disk hangs in the device tree, for when lsblk is missing or
 * leaves TRAN empty (util-linux 2.38 does for virtio). USB first, since a USB bridge puts a
 * SCSI host under the USB port.
 */
export function transportFromPath(sysPath: string): string | undefined {
  const rules: [RegExp, string][] = [
    [/\/usb\d+\//, "usb"],
    [/\/nvme-subsystem\/|\/nvme\/nvme\d+\/|\/nvme-fabrics\//, "nvme"],
    [/\/virtio\d+\//, "virtio"],
    [/\/session\d+\//, "iscsi"],
    [/\/rport-/, "fc"],
    [/\/end_device-/, "sas"],
    [/\/ata\d+\//, "sata"],
    [/\/mmc_host\//, "mmc"],
  ];
  return rules.find(([pattern]) => pattern.test(sysPath))?.[1];
}
