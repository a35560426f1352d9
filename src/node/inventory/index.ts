/**
 * The machine inventory of the Node joiner: disks, NICs, CPU, memory and firmware of a Linux
 * machine, in the shape of the Stratum API's `Inventory`.
 * @module
 */

export { collectInventory, type CollectInventoryOptions } from "./collect.js";
export type { RunCommand } from "./source.js";
export type {
  DiskHolder,
  DiskPartition,
  Inventory,
  InventoryClock,
  InventoryCpu,
  InventoryDisk,
  InventoryNic,
  OsDiskLayout,
  StackDevice,
} from "./types.js";
