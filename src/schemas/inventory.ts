/**
 * The machine's inventory, part of a registration and of a join.
 * @module
 */
import * as z from "zod/mini";
import { bool, int, opt, str, strings } from "./builders.js";

/** `DiskHolder`. */
export const DiskHolderSchema = z.object({ kind: str, device: str, detail: opt(str) });

/** `Partition`. */
export const PartitionSchema = z.object({
  number: int,
  name: str,
  path: str,
  sizeBytes: int,
  fsType: opt(str),
  label: opt(str),
  partLabel: opt(str),
});

/** `StackedDevice`. */
export const StackedDeviceSchema = z.object({ name: str, path: str, type: str });

/** `Disk`: one whole disk of a joining machine. */
export const DiskSchema = z.object({
  name: str,
  path: str,
  byId: opt(strings),
  model: opt(str),
  serial: opt(str),
  wwn: opt(str),
  transport: opt(str),
  sizeBytes: opt(int),
  rotational: opt(bool),
  removable: opt(bool),
  readOnly: opt(bool),
  mountpoints: opt(strings),
  holders: opt(z.array(DiskHolderSchema)),
  partitions: opt(z.array(PartitionSchema)),
  stack: opt(z.array(StackedDeviceSchema)),
});

/** `Nic`: one network interface of a joining machine. */
export const NicSchema = z.object({
  name: str,
  mac: opt(str),
  permanentMac: opt(str),
  operState: opt(str),
  link: opt(str),
  speedMbps: opt(int),
  mtu: opt(int),
  driver: opt(str),
  addresses: opt(strings),
  wireless: opt(bool),
  routes: opt(strings),
});

/** `Cpu`. */
export const CpuSchema = z.object({
  model: opt(str),
  sockets: opt(int),
  cores: opt(int),
  threads: opt(int),
  virtualization: opt(str),
});

/** `ClockReport`: the joining machine's clock at registration. */
export const ClockReportSchema = z.object({ offsetSeconds: opt(int), ntpSynchronized: opt(bool) });

/** `Inventory`: a joining machine's hardware, as it reported it. */
export const InventorySchema = z.object({
  uefi: opt(bool),
  disks: opt(z.array(DiskSchema)),
  nics: opt(z.array(NicSchema)),
  cpu: opt(CpuSchema),
  memoryBytes: opt(int),
  osDiskLayout: opt(z.enum(["compute-tail", "whole-disk"])),
  clock: opt(ClockReportSchema),
});
