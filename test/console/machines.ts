/**
 * The machines the console's browser tests register, with inventories shaped as
 * collectInventory reports them (loopback left out; the kernel's `ifb0` kept, as real ones
 * report it).
 */
import type { Inventory, Nic } from "../../src/index.js";

/** What tells a machine apart, and how its disks and cards look. */
export interface MachineSpec {
  last: number;
  /** The address on its first card (the management default for a loopback registration). */
  mgmtAddress: string;
  /** An address on its second card, if any. */
  secondAddress?: string;
  /** The data disk holds a filesystem (so a role for it needs the typed wipe confirmation). */
  dataDiskHoldsData?: boolean;
}

/** A machine as collectInventory reports one: a system and a data disk, two cards, and the noise a real one reports (ifb0). */
export function inventory(spec: MachineSpec): Inventory {
  const { last } = spec;
  // collectInventory leaves loopback out; the kernel's traffic-shaping device it reports.
  const noise: Nic[] = [{ name: "ifb0", operState: "unknown", link: "unknown", mtu: 1500, addresses: [] }];
  return {
    uefi: true,
    cpu: { model: "AMD EPYC 7313P", sockets: 1, cores: 16, threads: 32, virtualization: "svm" },
    memoryBytes: 128 * 2 ** 30,
    osDiskLayout: "compute-tail",
    disks: [
      {
        name: "nvme0n1",
        path: "/dev/nvme0n1",
        byId: [`/dev/disk/by-id/nvme-SYSTEM_${last}`],
        wwn: `eui.00000000000000${last}`,
        sizeBytes: 512_110_190_592,
        mountpoints: ["/", "/boot/efi"],
        holders: [{ kind: "partition-table", device: "nvme0n1", detail: "gpt" }],
      },
      {
        name: "nvme1n1",
        path: "/dev/nvme1n1",
        byId: [`/dev/disk/by-id/nvme-DATA_${last}`],
        wwn: `eui.00000000000001${last}`,
        sizeBytes: 3_840_755_982_336,
        mountpoints: [],
        holders: spec.dataDiskHoldsData ? [{ kind: "filesystem", device: "nvme1n1", detail: "ext4" }] : [],
      },
    ],
    nics: [
      ...noise,
      {
        name: "enp87s0",
        mac: `58:47:ca:70:11:${last}`,
        operState: "up",
        link: "up",
        speedMbps: 1000,
        mtu: 1500,
        addresses: [`${spec.mgmtAddress}/24`],
        wireless: false,
      },
      {
        name: "enp2s0f0",
        mac: `58:47:ca:70:12:${last}`,
        operState: "up",
        link: "up",
        speedMbps: 25000,
        mtu: 9000,
        addresses: spec.secondAddress ? [`${spec.secondAddress}/24`] : [],
        wireless: false,
      },
    ],
  };
}

/** A small VM: one virtio disk for the system, one blank, one card, and ifb0. */
export function vmInventory(mac: string, address: string, diskId: string): Inventory {
  return {
    cpu: { model: "QEMU Virtual CPU", cores: 4, threads: 4 },
    memoryBytes: 8 * 2 ** 30,
    disks: [
      {
        name: "vda",
        path: "/dev/vda",
        byId: [`/dev/disk/by-id/virtio-${diskId}-SYS`],
        sizeBytes: 40e9,
        mountpoints: ["/"],
      },
      {
        name: "vdb",
        path: "/dev/vdb",
        byId: [`/dev/disk/by-id/virtio-${diskId}-DATA`],
        sizeBytes: 100e9,
        mountpoints: [],
      },
    ],
    nics: [
      { name: "ifb0", operState: "unknown", link: "unknown", addresses: [] },
      { name: "ens3", mac, operState: "up", link: "up", addresses: [`${address}/24`] },
    ],
  };
}
