/**
 * The machine inventory a joiner reports, in the shape of the Stratum API's `Inventory`.
 * Written by hand, with narrower literal types than the generated `Inventory` (e.g. `link`
 * is `up | down | unknown`); `test/node/inventory/types.test-d.ts` holds it to the type
 * generated from `openapi.yaml`, so field names and optionality follow the spec exactly. An absent optional field means
 * "not known on this machine", never "none": an empty array is a positive statement.
 * @module
 */

/**
 * Something that already holds data on a disk, found on the disk itself or on one of its
 * partitions. Kinds used: `partition-table`, `filesystem` (also swap and any other
 * signature), `lvm-pv`, `md-member`, `luks`, `dm`.
 */
export interface DiskHolder {
  /** What holds the data: `partition-table`, `filesystem`, `lvm-pv`, `md-member`, `luks` or `dm`. */
  kind: string;
  /** The kernel name of the device on the disk that carries it: the disk or a partition (`nvme0n1p2`). */
  device: string;
  /**
   * The specifics, when known: the table type (`gpt`, `dos`) for `partition-table`, the
   * filesystem type for `filesystem`, the array (`md127`) for `md-member`, the mapping's
   * name for `luks` and `dm`.
   */
  detail?: string;
}

/** A partition of a disk. */
export interface DiskPartition {
  /** The partition number (`2` for `nvme0n1p2`). */
  number: number;
  /** The kernel name, e.g. `nvme0n1p2`. */
  name: string;
  /** The device node, e.g. `/dev/nvme0n1p2`. */
  path: string;
  /** The size in bytes. */
  sizeBytes: number;
  /** The signature found on it (`ext4`, `vfat`, `swap`, `linux_raid_member`, `LVM2_member`, …). */
  fsType?: string;
  /** The filesystem label. */
  label?: string;
  /** The partition's own name in the partition table (GPT `PARTLABEL`). */
  partLabel?: string;
}

/** An md array or device-mapper device built on a disk. */
export interface StackDevice {
  /** The name a person uses: the mapping name for device-mapper (`vg0-root`), else the kernel name (`md127`). */
  name: string;
  /** The device node (`/dev/mapper/vg0-root`, `/dev/md127`). */
  path: string;
  /** As lsblk types it: the RAID level for md (`raid1`), the owner for device-mapper (`lvm`, `crypt`, `mpath`, `dm`). */
  type: string;
}

/** A whole disk. */
export interface InventoryDisk {
  /** The kernel name, e.g. `nvme1n1`. */
  name: string;
  /** The device node, e.g. `/dev/nvme1n1`. */
  path: string;
  /** The `/dev/disk/by-id/` links pointing at the disk itself (not at its partitions), as full paths. */
  byId?: string[];
  /** The model as the device reports it, trimmed. */
  model?: string;
  /** The serial number as the device reports it, trimmed. */
  serial?: string;
  /** The world wide name (`0x5000c500a1b2c3d4`, or an NVMe `eui.`/`nvme.` id). */
  wwn?: string;
  /** How the disk is attached: `nvme`, `sata`, `sas`, `usb`, `virtio`, `mmc`, `iscsi`, `fc`, … */
  transport?: string;
  /** The capacity in bytes. */
  sizeBytes?: number;
  /** What the kernel believes; virtual disks often claim to spin. */
  rotational?: boolean;
  /** Removable media (USB sticks, card readers). */
  removable?: boolean;
  /** Write-protected at the block layer. */
  readOnly?: boolean;
  /** Live mounts on the disk or anything stacked on it (`[SWAP]` for active swap). A mounted disk is the system disk. */
  mountpoints?: string[];
  /** What already holds data on the disk. Empty means blank; absent means it could not be told. */
  holders?: DiskHolder[];
  /** The partitions, by number. */
  partitions?: DiskPartition[];
  /** Every md array and device-mapper device built on the disk, deepest first (the order to take them down). */
  stack?: StackDevice[];
}

/** A network interface. */
export interface InventoryNic {
  /** The kernel name, e.g. `eno1`. */
  name: string;
  /** The current hardware address. */
  mac?: string;
  /** The address burnt into the hardware, when it is known (it differs from `mac` on bond members and after an override). */
  permanentMac?: string;
  /** The kernel's RFC 2863 operational state, lower case: `up`, `down`, `dormant`, `lowerlayerdown`, `unknown`, … */
  operState?: string;
  /** `up` with a carrier, `down` without one, `unknown` (e.g. while the interface is administratively down). */
  link?: "up" | "down" | "unknown";
  /** The negotiated speed in Mbit/s; absent when the driver does not know it (no carrier, most virtual NICs). */
  speedMbps?: number;
  /** The MTU in bytes. */
  mtu?: number;
  /** The kernel driver bound to the hardware (`igb`, `virtio_net`); absent for software interfaces. */
  driver?: string;
  /** The interface's addresses as CIDRs (`10.0.0.21/24`, `2001:db8::21/64`), IPv4 first as the kernel lists them. */
  addresses?: string[];
  /** True for an 802.11 interface. */
  wireless?: boolean;
  /** The IPv4 destinations the main routing table sends out of this NIC (CIDRs; a host route as /32), without the default route. */
  routes?: string[];
}

/** The processors. */
export interface InventoryCpu {
  /** The model name of the first CPU; absent on arm64, whose kernel does not know it. */
  model?: string;
  /** Populated CPU packages. */
  sockets?: number;
  /** Physical cores over all sockets. */
  cores?: number;
  /** Logical processors (hardware threads) online. */
  threads?: number;
  /** `vmx`, `svm`, or empty when the CPU offers no hardware virtualization to this kernel. */
  virtualization?: "vmx" | "svm" | "";
}

/** How the OS disk was laid out at install time, as the install record says. */
export type OsDiskLayout = "compute-tail" | "whole-disk";

/**
 * The machine's clock. `collectInventory` fills in `ntpSynchronized` where the system says;
 * `registerMachine` adds `offsetSeconds`, measured against the founder's time at the PAKE.
 */
export interface InventoryClock {
  /** The founder's time minus this machine's, in whole seconds (positive: this machine is behind). */
  offsetSeconds?: number;
  /** Whether the system says NTP synchronises the clock (systemd's `NTPSynchronized`); absent when it does not say. */
  ntpSynchronized?: boolean;
}

/** What a joining machine reports about itself. */
export interface Inventory {
  /** True when the machine booted through UEFI (`/sys/firmware/efi` exists). */
  uefi?: boolean;
  /** The whole disks (not loop, ram, zram, optical, md or dm devices: those appear in a disk's `stack`). */
  disks?: InventoryDisk[];
  /** Every network interface but loopback. */
  nics?: InventoryNic[];
  /** The processors. */
  cpu?: InventoryCpu;
  /** Usable memory in bytes, as the kernel counts it (`MemTotal`). */
  memoryBytes?: number;
  /** Only from an install record; absent on a machine not installed by Stratum. */
  osDiskLayout?: OsDiskLayout;
  /** The clock: whether NTP synchronises it, and (at registration) its offset from the founder's. */
  clock?: InventoryClock;
}
