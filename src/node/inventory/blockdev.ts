/**
 * The block-device sources below the disk inventory: the sysfs index of every block device,
 * the live mounts and active swap mapped onto it, the udev database and the flattened lsblk
 * tree. Structure (what is a partition of what, what is stacked on what) always comes from
 * sysfs, the kernel's own answer; lsblk and udev only add what sysfs cannot say.
 * @module
 */

import { realpath } from "node:fs/promises";
import path from "node:path";
import { asRecord, at, listDir, readAttr, readText, type SourceContext } from "./source.js";

/** One block device as sysfs shows it: a whole device under /sys/block or one of its partitions. */
export interface BlockDev {
  /** The kernel name (`nvme0n1p2`, `dm-0`). */
  readonly name: string;
  /** Its sysfs directory under the root. */
  readonly dir: string;
  /** For a partition, the whole device it belongs to. */
  readonly parent: string | undefined;
  /** `major:minor`, from the `dev` attribute. */
  readonly majmin: string | undefined;
}

/** Every block device by name, plus the lookups mounts are resolved through. */
export interface BlockIndex {
  readonly byName: ReadonlyMap<string, BlockDev>;
  readonly byMajmin: ReadonlyMap<string, BlockDev>;
  /** Device-mapper devices by mapping name, so `/dev/mapper/vg0-root` resolves without udev's symlinks. */
  readonly byDmName: ReadonlyMap<string, BlockDev>;
  /** The partitions of each whole device, in partition-number order. */
  readonly partitionsOf: ReadonlyMap<string, BlockDev[]>;
}

/**
 * Indexes /sys/block and the partition directories inside each entry. Partitions are found
 * as subdirectories holding a `partition` attribute; their names always start with the
 * parent's, which spares a stat of every other attribute directory.
 */
export async function indexBlockDevices(ctx: SourceContext): Promise<BlockIndex> {
  const byName = new Map<string, BlockDev>();
  const byMajmin = new Map<string, BlockDev>();
  const byDmName = new Map<string, BlockDev>();
  const partitionsOf = new Map<string, BlockDev[]>();
  const add = (dev: BlockDev) => {
    byName.set(dev.name, dev);
    if (dev.majmin) byMajmin.set(dev.majmin, dev);
  };
  for (const name of await listDir(at(ctx, "/sys/block"))) {
    const dir = at(ctx, "/sys/block", name);
    add({ name, dir, parent: undefined, majmin: await readAttr(`${dir}/dev`) });
    if (name.startsWith("dm-")) {
      const dmName = await readAttr(`${dir}/dm/name`);
      if (dmName) byDmName.set(dmName, byName.get(name)!);
    }
    const parts: { dev: BlockDev; number: number }[] = [];
    for (const sub of await listDir(dir)) {
      if (!sub.startsWith(name)) continue;
      const number = Number(await readAttr(`${dir}/${sub}/partition`));
      if (!Number.isSafeInteger(number) || number <= 0) continue;
      const dev: BlockDev = {
        name: sub,
        dir: `${dir}/${sub}`,
        parent: name,
        majmin: await readAttr(`${dir}/${sub}/dev`),
      };
      add(dev);
      parts.push({ dev, number });
    }
    parts.sort((a, b) => a.number - b.number);
    partitionsOf.set(
      name,
      parts.map((p) => p.dev),
    );
  }
  return { byName, byMajmin, byDmName, partitionsOf };
}

/** What the live mount table says about one block device. */
export interface DeviceUse {
  /** Where it is mounted; `[SWAP]` when it is active swap, as lsblk shows it. */
  mountpoints: string[];
  /** The filesystem type the kernel mounted it as (or `swap`). */
  fsType: string | undefined;
}

/** Undoes the octal escapes of /proc mount tables (`\040` is a space in a mount point). */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * Maps mounts and active swap onto block devices. The device number of mountinfo is
 * preferred over the source path, because the source may be any alias (`/dev/mapper/…`,
 * `/dev/disk/by-uuid/…`); the path is the fallback for filesystems such as btrfs that
 * report an anonymous `0:nn` device number.
 */
export async function readDeviceUse(ctx: SourceContext, index: BlockIndex): Promise<Map<string, DeviceUse>> {
  const uses = new Map<string, DeviceUse>();
  const note = (dev: BlockDev | undefined, mountpoint: string, fsType: string | undefined) => {
    if (!dev) return;
    const use = uses.get(dev.name) ?? { mountpoints: [], fsType: undefined };
    if (!use.mountpoints.includes(mountpoint)) use.mountpoints.push(mountpoint);
    use.fsType ??= fsType;
    uses.set(dev.name, use);
  };
  const bySource = async (source: string): Promise<BlockDev | undefined> => {
    if (!source.startsWith("/dev/")) return undefined;
    if (source.startsWith("/dev/mapper/")) return index.byDmName.get(source.slice("/dev/mapper/".length));
    // `/dev/cciss/c0d0` is `cciss!c0d0` in sysfs; an alias such as /dev/disk/by-uuid/… resolves through its link.
    const direct = index.byName.get(source.slice("/dev/".length).replaceAll("/", "!"));
    if (direct) return direct;
    try {
      return index.byName.get(path.basename(await realpath(at(ctx, source))));
    } catch {
      return undefined;
    }
  };

  const mountinfo = await readText(at(ctx, "/proc/self/mountinfo"));
  if (mountinfo !== undefined) {
    for (const line of mountinfo.split("\n")) {
      const fields = line.split(" ");
      const dash = fields.indexOf("-");
      if (dash < 6 || fields.length < dash + 3) continue;
      const majmin = fields[2]!;
      const mountpoint = unescapeMount(fields[4]!);
      const fsType = fields[dash + 1];
      const source = unescapeMount(fields[dash + 2]!);
      const dev = (majmin.startsWith("0:") ? undefined : index.byMajmin.get(majmin)) ?? (await bySource(source));
      note(dev, mountpoint, fsType);
    }
  } else {
    // Without mountinfo (a /proc without per-process files), /proc/mounts still has the source path.
    for (const line of ((await readText(at(ctx, "/proc/mounts"))) ?? "").split("\n")) {
      const [source, mountpoint, fsType] = line.split(" ");
      if (source && mountpoint) note(await bySource(unescapeMount(source)), unescapeMount(mountpoint), fsType);
    }
  }

  for (const line of ((await readText(at(ctx, "/proc/swaps"))) ?? "").split("\n").slice(1)) {
    const [source, type] = line.split(/\s+/);
    // A swap file is not a device of its own: its filesystem's mount already marks the disk.
    if (source && type === "partition") note(await bySource(unescapeMount(source)), "[SWAP]", "swap");
  }
  return uses;
}

/** A device's udev database entry: its properties and its /dev symlinks. */
export interface UdevEntry {
  readonly props: ReadonlyMap<string, string>;
  /** Symlinks relative to /dev (`disk/by-id/nvme-…`). */
  readonly links: readonly string[];
}

/** Decodes udev's `\xNN` escapes (used in `*_ENC` properties and `ID_PART_ENTRY_NAME`), as UTF-8. */
export function decodeUdev(value: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const escaped = /^\\x([0-9a-fA-F]{2})/.exec(value.slice(i, i + 4));
    if (escaped) {
      bytes.push(parseInt(escaped[1]!, 16));
      i += 3;
    } else {
      bytes.push(...Buffer.from(value[i]!, "utf8"));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/**
 * Reads `/run/udev/data/b<major>:<minor>`, the database lsblk itself reads model, serial,
 * WWN and signatures from; undefined without udev (containers, minimal initramfs).
 */
export async function readUdev(ctx: SourceContext, majmin: string | undefined): Promise<UdevEntry | undefined> {
  if (!majmin) return undefined;
  const text = await readText(at(ctx, "/run/udev/data", `b${majmin}`));
  if (text === undefined) return undefined;
  const props = new Map<string, string>();
  const links: string[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("E:")) {
      const eq = line.indexOf("=");
      if (eq > 2) props.set(line.slice(2, eq), line.slice(eq + 1));
    } else if (line.startsWith("S:")) {
      links.push(line.slice(2));
    }
  }
  return { props, links };
}

/** One lsblk row, keyed by kernel name. */
export type LsblkRow = Record<string, unknown>;

/**
 * Flattens `lsblk --json` into rows by kernel name. The tree repeats a device under each of
 * its parents (an md array under every member); the rows are identical, so the first wins.
 */
export function flattenLsblk(json: unknown): Map<string, LsblkRow> | undefined {
  const top = asRecord(json)?.blockdevices;
  if (!Array.isArray(top)) return undefined;
  const rows = new Map<string, LsblkRow>();
  const walk = (nodes: unknown[]) => {
    for (const node of nodes) {
      const row = asRecord(node);
      if (!row) continue;
      const key = typeof row.kname === "string" ? row.kname : typeof row.name === "string" ? row.name : undefined;
      if (key && !rows.has(key)) rows.set(key, row);
      if (Array.isArray(row.children)) walk(row.children);
    }
  };
  walk(top);
  return rows;
}
