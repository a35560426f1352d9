/**
 * Machines' hardware for tests: `demoInventory`, the smallest a joiner reports (a system disk, a
 * blank data disk, one NIC), and `sampleInventory`, the spec's example (two NICs, an old disk
 * with a file system), which the founder's approval rules have more to check on.
 */
/** A machine's hardware as a test joiner reports it: a system disk, a blank data disk, one NIC. */
export const demoInventory = {
  uefi: true,
  disks: [
    {
      name: "nvme0n1",
      path: "/dev/nvme0n1",
      byId: ["/dev/disk/by-id/nvme-SYS_1"],
      sizeBytes: 512e9,
      mountpoints: ["/"],
      holders: [{ kind: "partition-table", device: "nvme0n1", detail: "gpt" }],
    },
    {
      name: "nvme1n1",
      path: "/dev/nvme1n1",
      byId: ["/dev/disk/by-id/nvme-DATA_1"],
      wwn: "eui.0025",
      sizeBytes: 2e12,
      mountpoints: [],
      holders: [],
    },
  ],
  nics: [{ name: "enp1s0", mac: "58:47:ca:70:11:02", addresses: ["127.0.0.1/8"], link: "up", mtu: 1500 }],
  cpu: { model: "Test CPU", sockets: 1, cores: 8, threads: 16, virtualization: "svm" },
  memoryBytes: 68719476736,
};

/**
 * An inventory like the spec's example: one blank NVMe data disk, a system disk, two NICs, the
 * first holding `address`.
 */
export function sampleInventory(address = "192.0.2.21"): Record<string, unknown> {
  return {
    uefi: true,
    disks: [
      {
        name: "nvme0n1",
        path: "/dev/nvme0n1",
        byId: ["/dev/disk/by-id/nvme-SYSTEM_DISK_0001"],
        wwn: "eui.0000000000000001",
        sizeBytes: 512110190592,
        mountpoints: ["/", "/boot/efi"],
        holders: [{ kind: "partition-table", device: "nvme0n1", detail: "gpt" }],
        partitions: [{ number: 1, name: "nvme0n1p1", path: "/dev/nvme0n1p1", sizeBytes: 536870912, fsType: "vfat" }],
      },
      {
        name: "nvme1n1",
        path: "/dev/nvme1n1",
        byId: ["/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_2TB_S6B0NL0W123456"],
        wwn: "eui.002538b221b0a1c2",
        sizeBytes: 2000398934016,
        mountpoints: [],
        holders: [],
        partitions: [],
        stack: [],
      },
      {
        name: "sda",
        path: "/dev/sda",
        byId: ["/dev/disk/by-id/ata-OLD_DISK_42"],
        wwn: "naa.5000c500a1b2c3d4",
        sizeBytes: 1000204886016,
        mountpoints: [],
        holders: [{ kind: "filesystem", device: "sda1", detail: "ext4" }],
        partitions: [{ number: 1, name: "sda1", path: "/dev/sda1", sizeBytes: 1000204886016, fsType: "ext4" }],
      },
    ],
    nics: [
      {
        name: "enp87s0",
        mac: "58:47:ca:70:11:02",
        operState: "up",
        link: "up",
        speedMbps: 1000,
        mtu: 1500,
        addresses: [`${address}/24`],
        wireless: false,
      },
      {
        name: "enp2s0f0",
        mac: "58:47:ca:70:11:03",
        operState: "up",
        link: "up",
        speedMbps: 10000,
        mtu: 9000,
        addresses: [],
        wireless: false,
      },
    ],
    cpu: { model: "AMD Ryzen 9 7940HS", sockets: 1, cores: 8, threads: 16, virtualization: "svm" },
    memoryBytes: 68719476736,
    osDiskLayout: "compute-tail",
  };
}
