// What a disk holds and how the OS disks are laid out, read from an inventory: the reading
// the founder's approval check, the console and the CLI share (src/core/disks.ts).
import { describe, expect, it } from "vitest";
import { diskContents, osDiskLayoutOf, type Disk, type Inventory } from "../../src/index.js";

const GiB = 1024 ** 3;
const disk = (extra: Partial<Disk> = {}): Disk => ({ name: "sda", path: "/dev/sda", ...extra });

describe("diskContents", () => {
  it("calls a disk blank only when it was probed and nothing holds data on it", () => {
    expect(diskContents(disk({ holders: [], partitions: [], stack: [] }))).toEqual({ state: "blank" });
    // Unprobed: "Empty means blank", and only empty does.
    expect(diskContents(disk())).toEqual({ state: "unknown" });
    expect(diskContents(disk({ partitions: [], stack: [] }))).toEqual({ state: "unknown" });
  });

  it("says what holds data: holders, else partitions, else a stacked device", () => {
    expect(diskContents(disk({ holders: [{ kind: "filesystem", device: "sda1", detail: "ext4" }] }))).toEqual({
      state: "data",
      what: "filesystem (ext4) on sda1",
    });
    const partition = { number: 1, name: "sda1", path: "/dev/sda1", sizeBytes: 1 };
    expect(diskContents(disk({ holders: [], partitions: [partition] }))).toEqual({
      state: "data",
      what: "1 partition(s)",
    });
    // Structure seen without a content probe still holds data.
    expect(diskContents(disk({ stack: [{ name: "md0", path: "/dev/md0", type: "raid1" }] }))).toEqual({
      state: "data",
      what: "a device stacked on it",
    });
  });
});

describe("osDiskLayoutOf", () => {
  const osDisk = (sizeBytes: number, partitionSizes: number[]): Disk =>
    disk({
      name: "nvme0n1",
      mountpoints: ["/"],
      sizeBytes,
      partitions: partitionSizes.map((s, i) => ({
        number: i + 1,
        name: `p${i + 1}`,
        path: `/dev/p${i + 1}`,
        sizeBytes: s,
      })),
    });
  const dataDisk = disk({ name: "sdb", sizeBytes: 4000 * GiB, holders: [] });

  it("takes the install record's layout when the machine has one", () => {
    const inventory: Inventory = { osDiskLayout: "whole-disk", disks: [osDisk(500 * GiB, [1 * GiB, 100 * GiB])] };
    expect(osDiskLayoutOf(inventory)).toBe("whole-disk");
  });

  it("reads it off the OS disks' partitions when the record is absent", () => {
    // 399 GiB left free at the end: the compute tail.
    expect(osDiskLayoutOf({ disks: [osDisk(500 * GiB, [1 * GiB, 100 * GiB]), dataDisk] })).toBe("compute-tail");
    // Partitions to the end (a few MiB of alignment aside): the whole disk.
    expect(osDiskLayoutOf({ disks: [osDisk(500 * GiB, [1 * GiB, 499 * GiB - 8 * 1024 ** 2])] })).toBe("whole-disk");
  });

  it("assumes nothing when the partitions cannot tell", () => {
    expect(osDiskLayoutOf(undefined)).toBeUndefined();
    expect(osDiskLayoutOf({ disks: [dataDisk] })).toBeUndefined();
    expect(osDiskLayoutOf({ disks: [{ ...osDisk(500 * GiB, []), partitions: [] }] })).toBeUndefined();
    // Two OS disks laid out differently: no one answer.
    expect(
      osDiskLayoutOf({
        disks: [osDisk(500 * GiB, [100 * GiB]), { ...osDisk(500 * GiB, [500 * GiB]), name: "nvme1n1" }],
      }),
    ).toBeUndefined();
  });
});
