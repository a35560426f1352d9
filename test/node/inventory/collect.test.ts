import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { StratumError } from "../../../src/errors/index.js";
import { collectInventory, type Inventory, type RunCommand } from "../../../src/node/inventory/index.js";
import { expectInstalled } from "../../machine/tools.js";

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), "fixtures");
const SERVER = path.join(fixtures, "server");
const VM = path.join(fixtures, "vm");
const EDGE = path.join(fixtures, "edge");

/** A runner for which every tool is missing, as on a minimal installer. */
const noTools: RunCommand = async (file) => {
  throw Object.assign(new Error(`spawn ${file} ENOENT`), { code: "ENOENT" });
};

/** A runner answering from a root's recordings, except for the tools named, which are missing. */
function recordedWithout(root: string, ...missing: string[]): RunCommand {
  const files: Record<string, string> = {
    "lsblk --json --bytes --output-all": "lsblk.json",
    "ip -json addr": "ip-addr.json",
    "ip -json route": "ip-route.json",
  };
  return async (file, args) => {
    if (missing.includes(file)) return noTools(file, args, {});
    return readFileSync(path.join(root, files[[file, ...args].join(" ")]!), "utf8");
  };
}

// The API's shape, strictly: a stray key or a wrong type fails.
const holder = z.strictObject({
  kind: z.string().min(1),
  device: z.string().min(1),
  detail: z.string().min(1).optional(),
});
const partition = z.strictObject({
  number: z.number().int().positive(),
  name: z.string().min(1),
  path: z.string().startsWith("/dev/"),
  sizeBytes: z.number().int().nonnegative(),
  fsType: z.string().min(1).optional(),
  label: z.string().min(1).optional(),
  partLabel: z.string().min(1).optional(),
});
const disk = z.strictObject({
  name: z.string().min(1),
  path: z.string().startsWith("/dev/"),
  byId: z.array(z.string().startsWith("/dev/disk/by-id/")).optional(),
  model: z.string().min(1).optional(),
  serial: z.string().min(1).optional(),
  wwn: z.string().min(1).optional(),
  transport: z.string().min(1).optional(),
  sizeBytes: z.number().int().positive().optional(),
  rotational: z.boolean().optional(),
  removable: z.boolean().optional(),
  readOnly: z.boolean().optional(),
  mountpoints: z.array(z.string().min(1)).optional(),
  holders: z.array(holder).optional(),
  partitions: z.array(partition).optional(),
  stack: z
    .array(z.strictObject({ name: z.string().min(1), path: z.string().startsWith("/dev/"), type: z.string().min(1) }))
    .optional(),
});
const cidr = z.string().regex(/^[0-9a-f:.]+\/\d{1,3}$/);
const mac = z.string().regex(/^[0-9a-f]{2}(:[0-9a-f]{2})+$/);
const nic = z.strictObject({
  name: z.string().min(1),
  mac: mac.optional(),
  permanentMac: mac.optional(),
  operState: z.string().min(1).optional(),
  link: z.enum(["up", "down", "unknown"]).optional(),
  speedMbps: z.number().int().positive().optional(),
  mtu: z.number().int().positive().optional(),
  driver: z.string().min(1).optional(),
  addresses: z.array(cidr).optional(),
  wireless: z.boolean().optional(),
  routes: z.array(z.string().regex(/^\d+\.\d+\.\d+\.\d+\/\d{1,2}$/)).optional(),
});
const inventorySchema = z.strictObject({
  uefi: z.boolean().optional(),
  disks: z.array(disk).optional(),
  nics: z.array(nic).optional(),
  cpu: z
    .strictObject({
      model: z.string().min(1).optional(),
      sockets: z.number().int().positive().optional(),
      cores: z.number().int().positive().optional(),
      threads: z.number().int().positive().optional(),
      virtualization: z.enum(["vmx", "svm", ""]).optional(),
    })
    .optional(),
  memoryBytes: z.number().int().positive().optional(),
  osDiskLayout: z.enum(["compute-tail", "whole-disk"]).optional(),
  clock: z.strictObject({ ntpSynchronized: z.boolean() }).optional(),
});

const SERVER_INVENTORY: Inventory = {
  uefi: true,
  disks: [
    {
      name: "nvme0n1",
      path: "/dev/nvme0n1",
      byId: [
        "/dev/disk/by-id/nvme-eui.002538b711b2c3d4",
        "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S5GXNF0R700001",
        "/dev/disk/by-id/nvme-Samsung_SSD_980_PRO_1TB_S5GXNF0R700001_1",
      ],
      model: "Samsung SSD 980 PRO 1TB",
      serial: "S5GXNF0R700001",
      wwn: "eui.002538b711b2c3d4",
      transport: "nvme",
      sizeBytes: 1_000_204_886_016,
      rotational: false,
      removable: false,
      readOnly: false,
      mountpoints: ["/", "/boot/efi", "[SWAP]"],
      holders: [
        { kind: "partition-table", device: "nvme0n1", detail: "gpt" },
        { kind: "filesystem", device: "nvme0n1p1", detail: "vfat" },
        { kind: "md-member", device: "nvme0n1p2", detail: "md127" },
      ],
      partitions: [
        {
          number: 1,
          name: "nvme0n1p1",
          path: "/dev/nvme0n1p1",
          sizeBytes: 536_870_912,
          fsType: "vfat",
          label: "EFI SYS",
          partLabel: "EFI System Partition",
        },
        {
          number: 2,
          name: "nvme0n1p2",
          path: "/dev/nvme0n1p2",
          sizeBytes: 999_665_696_768,
          fsType: "linux_raid_member",
          label: "server1:0",
          partLabel: "raid",
        },
      ],
      // The LVs before the array they sit on: the order to take them down.
      stack: [
        { name: "vg0-root", path: "/dev/mapper/vg0-root", type: "lvm" },
        { name: "vg0-swap", path: "/dev/mapper/vg0-swap", type: "lvm" },
        { name: "md127", path: "/dev/md127", type: "raid1" },
      ],
    },
    {
      name: "nvme1n1",
      path: "/dev/nvme1n1",
      byId: [
        "/dev/disk/by-id/nvme-eui.36344730528000020025384500000001",
        "/dev/disk/by-id/nvme-SAMSUNG_MZQL21T9HCJR-00A07_S64GNE0R800002",
        "/dev/disk/by-id/nvme-SAMSUNG_MZQL21T9HCJR-00A07_S64GNE0R800002_1",
      ],
      model: "SAMSUNG MZQL21T9HCJR-00A07",
      serial: "S64GNE0R800002",
      wwn: "eui.36344730528000020025384500000001",
      transport: "nvme",
      sizeBytes: 1_920_383_410_176,
      rotational: false,
      removable: false,
      readOnly: false,
      mountpoints: [],
      holders: [],
      partitions: [],
      stack: [],
    },
  ],
  nics: [
    {
      name: "eno1",
      mac: "3c:ec:ef:12:34:56",
      permanentMac: "3c:ec:ef:12:34:56",
      operState: "up",
      link: "up",
      speedMbps: 1000,
      mtu: 1500,
      driver: "igb",
      addresses: ["10.0.0.21/24", "2001:db8:10::21/64", "fe80::3eec:efff:fe12:3456/64"],
      wireless: false,
      routes: ["10.0.0.0/24", "10.0.5.5/32", "10.20.0.0/16", "172.16.0.0/12"],
    },
    {
      name: "eno2",
      mac: "02:00:00:aa:bb:cc",
      permanentMac: "3c:ec:ef:12:34:57",
      operState: "down",
      link: "down",
      mtu: 9000,
      driver: "igb",
      addresses: ["192.168.50.10/24"],
      wireless: false,
      routes: ["172.16.0.0/12", "192.168.50.0/24"],
    },
    {
      name: "virbr0",
      mac: "52:54:00:ab:cd:ef",
      operState: "down",
      link: "down",
      mtu: 1500,
      addresses: ["192.168.122.1/24"],
      wireless: false,
      routes: ["192.168.122.0/24"],
    },
  ],
  cpu: { model: "Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz", sockets: 2, cores: 8, threads: 16, virtualization: "vmx" },
  memoryBytes: 131_598_764 * 1024,
  osDiskLayout: "compute-tail",
};

const VM_INVENTORY: Inventory = {
  uefi: false,
  disks: [
    {
      name: "vda",
      path: "/dev/vda",
      byId: [],
      transport: "virtio",
      sizeBytes: 21_474_836_480,
      rotational: true,
      removable: false,
      readOnly: false,
      mountpoints: ["/", "[SWAP]"],
      // No lsblk, no udev: the table type is unknown, the signatures are what is mounted or swapped on.
      holders: [
        { kind: "partition-table", device: "vda" },
        { kind: "filesystem", device: "vda2", detail: "ext4" },
        { kind: "filesystem", device: "vda3", detail: "swap" },
      ],
      partitions: [
        { number: 1, name: "vda1", path: "/dev/vda1", sizeBytes: 1_048_576 },
        { number: 2, name: "vda2", path: "/dev/vda2", sizeBytes: 19_324_207_104, fsType: "ext4", partLabel: "root" },
        { number: 3, name: "vda3", path: "/dev/vda3", sizeBytes: 2_147_483_648, fsType: "swap" },
      ],
      stack: [],
    },
    // Nothing probed vdb: no holders at all, never an empty list that would read as "blank".
    {
      name: "vdb",
      path: "/dev/vdb",
      byId: [],
      serial: "data-disk-1",
      transport: "virtio",
      sizeBytes: 107_374_182_400,
      rotational: true,
      removable: false,
      readOnly: false,
      mountpoints: [],
      partitions: [],
      stack: [],
    },
  ],
  nics: [
    {
      name: "enp1s0",
      mac: "52:54:00:12:34:56",
      permanentMac: "52:54:00:12:34:56",
      operState: "up",
      link: "up",
      mtu: 1500,
      driver: "virtio_net",
      wireless: false,
      routes: ["192.168.122.0/24"],
    },
  ],
  cpu: { model: "AMD EPYC-Rome Processor", sockets: 1, cores: 4, threads: 4, virtualization: "" },
  memoryBytes: 8_148_860 * 1024,
};

const EDGE_INVENTORY: Inventory = {
  uefi: true,
  disks: [
    {
      name: "mmcblk0",
      path: "/dev/mmcblk0",
      byId: [],
      model: "DG4032",
      serial: "0x1a2b3c4d",
      transport: "mmc",
      sizeBytes: 31_268_536_320,
      rotational: false,
      removable: false,
      readOnly: false,
      mountpoints: ["/", "/boot/firmware"],
      holders: [
        { kind: "partition-table", device: "mmcblk0", detail: "gpt" },
        { kind: "filesystem", device: "mmcblk0p1", detail: "vfat" },
        { kind: "filesystem", device: "mmcblk0p2", detail: "ext4" },
      ],
      partitions: [
        {
          number: 1,
          name: "mmcblk0p1",
          path: "/dev/mmcblk0p1",
          sizeBytes: 268_435_456,
          fsType: "vfat",
          label: "BOOT",
          partLabel: "boot",
        },
        {
          number: 2,
          name: "mmcblk0p2",
          path: "/dev/mmcblk0p2",
          sizeBytes: 30_995_906_560,
          fsType: "ext4",
          label: "rootfs",
          partLabel: "root",
        },
      ],
      stack: [],
    },
    {
      name: "nvme0n1",
      path: "/dev/nvme0n1",
      byId: [],
      model: "WDC PC SN530 SDBPNPZ-256G-1006",
      serial: "21234X800123",
      wwn: "eui.e8238fa6bf530001001b448b4a1b2c3d",
      transport: "nvme",
      sizeBytes: 256_060_514_304,
      rotational: false,
      removable: false,
      readOnly: false,
      mountpoints: [],
      holders: [],
      partitions: [],
      stack: [],
    },
    {
      name: "sda",
      path: "/dev/sda",
      byId: [],
      model: "Ultra Fit",
      serial: "4C530001230915113541",
      transport: "usb",
      sizeBytes: 30_752_636_928,
      rotational: true,
      removable: true,
      readOnly: false,
      mountpoints: [],
      holders: [
        { kind: "partition-table", device: "sda", detail: "dos" },
        { kind: "filesystem", device: "sda1", detail: "exfat" },
      ],
      partitions: [
        { number: 1, name: "sda1", path: "/dev/sda1", sizeBytes: 30_751_588_352, fsType: "exfat", label: "SANDISK" },
      ],
      stack: [],
    },
    {
      name: "sdb",
      path: "/dev/sdb",
      byId: [],
      model: "STORAGE DEVICE",
      transport: "usb",
      sizeBytes: 31_914_983_424,
      rotational: true,
      removable: true,
      readOnly: false,
      mountpoints: [],
      partitions: [],
      stack: [],
    },
  ],
  nics: [
    {
      name: "end0",
      mac: "dc:a6:32:01:02:03",
      permanentMac: "dc:a6:32:01:02:03",
      operState: "down",
      link: "unknown",
      mtu: 1500,
      driver: "bcmgenet",
      addresses: [],
      wireless: false,
      routes: [],
    },
    {
      name: "wlan0",
      mac: "dc:a6:32:01:02:04",
      permanentMac: "dc:a6:32:01:02:04",
      operState: "up",
      link: "up",
      mtu: 1500,
      driver: "brcmfmac",
      addresses: ["192.168.1.57/24", "fe80::dea6:32ff:fe01:204/64"],
      wireless: true,
      routes: ["192.168.1.0/24"],
    },
  ],
  cpu: { sockets: 1, cores: 4, threads: 4, virtualization: "" },
  memoryBytes: 3_885_072 * 1024,
};

describe("collectInventory on recorded roots", () => {
  it("reads a server: two NVMe disks, one under md RAID1 + LVM and mounted, one blank; NICs with routes", async () => {
    const inventory = await collectInventory({ root: SERVER });
    expect(inventory).toStrictEqual(SERVER_INVENTORY);
    expect(inventorySchema.parse(inventory)).toStrictEqual(inventory);
  });

  it("reads a BIOS-booted VM with virtio disks and no tools, udev or sysfs CPU topology", async () => {
    const inventory = await collectInventory({ root: VM });
    expect(inventory).toStrictEqual(VM_INVENTORY);
    expect(inventorySchema.parse(inventory)).toStrictEqual(inventory);
  });

  it("reads an arm64 board: eMMC without its boot areas, USB, a card nothing probed, Wi-Fi", async () => {
    const inventory = await collectInventory({ root: EDGE });
    expect(inventory).toStrictEqual(EDGE_INVENTORY);
    expect(inventorySchema.parse(inventory)).toStrictEqual(inventory);
  });

  it("gets the same disks from udev and sysfs when lsblk is missing", async () => {
    const inventory = await collectInventory({ root: SERVER, runCommand: recordedWithout(SERVER, "lsblk") });
    expect(inventory).toStrictEqual(SERVER_INVENTORY);
  });

  it("falls back to /proc/net/route when ip is missing, and leaves a recorded root's addresses unknown", async () => {
    const inventory = await collectInventory({ root: SERVER, runCommand: recordedWithout(SERVER, "ip") });
    const [eno1, eno2, virbr0] = SERVER_INVENTORY.nics!;
    const { addresses: _a1, ...eno1Rest } = eno1!;
    const { addresses: _a2, permanentMac: _p2, ...eno2Rest } = eno2!;
    const { addresses: _a3, ...virbr0Rest } = virbr0!;
    expect(inventory.nics).toStrictEqual([
      eno1Rest,
      // Only `ip` knows the permanent MAC under an override, and the kernel's table shows only
      // a multipath route's first hop.
      { ...eno2Rest, routes: ["192.168.50.0/24"] },
      virbr0Rest,
    ]);
    expect(inventory.disks).toStrictEqual(SERVER_INVENTORY.disks);
  });

  it("treats a tool that prints something other than JSON like a missing one", async () => {
    const garbage: RunCommand = async () => "Usage: lsblk [options] [<device> ...]\n";
    const [withGarbage, withNone] = await Promise.all([
      collectInventory({ root: SERVER, runCommand: garbage }),
      collectInventory({ root: SERVER, runCommand: noTools }),
    ]);
    expect(withGarbage).toStrictEqual(withNone);
    expect(withNone.disks).toStrictEqual(SERVER_INVENTORY.disks);
  });

  it("never runs the real tools for a recorded root", async () => {
    // The VM root has no recordings: had the real lsblk run, this host's disks would show up.
    const inventory = await collectInventory({ root: VM });
    expect(inventory.disks!.map((d) => d.name)).toStrictEqual(["vda", "vdb"]);
  });
});

describe("collectInventory options and failures", () => {
  const temp = mkdtempSync(path.join(tmpdir(), "stratum-inventory-"));
  afterAll(() => rmSync(temp, { recursive: true, force: true }));

  it("reads osDiskLayout from the install record given, and ignores a damaged or unknown one", async () => {
    const record = (name: string, text: string) => {
      const file = path.join(temp, name);
      writeFileSync(file, text);
      return file;
    };
    const layout = async (installRecord: string) => (await collectInventory({ root: VM, installRecord })).osDiskLayout;
    expect(await layout(record("whole.json", JSON.stringify({ osDiskLayout: "whole-disk" })))).toBe("whole-disk");
    expect(await layout(record("bad.json", "{ not json"))).toBeUndefined();
    expect(await layout(record("unknown.json", JSON.stringify({ osDiskLayout: "raid10" })))).toBeUndefined();
    expect(await layout(path.join(temp, "absent.json"))).toBeUndefined();
    expect("osDiskLayout" in (await collectInventory({ root: VM }))).toBe(false);
  });

  it("says whether NTP synchronises the clock where the system says, and nothing where it does not", async () => {
    const recorded = recordedWithout(VM);
    // timedatectl answers, as systemd's timedated does (yes/no), or is missing or failing.
    const timedatectl =
      (answer: string | Error): RunCommand =>
      async (file, args, options) => {
        if (file !== "timedatectl") return recorded(file, args, options);
        expect(args).toEqual(["show", "-p", "NTPSynchronized", "--value"]);
        if (answer instanceof Error) throw answer;
        return answer;
      };
    const clock = async (runCommand: RunCommand, root = VM) => (await collectInventory({ root, runCommand })).clock;
    expect(await clock(timedatectl("yes\n"))).toEqual({ ntpSynchronized: true });
    expect(await clock(timedatectl("no\n"))).toEqual({ ntpSynchronized: false });
    // No systemd to ask (a container, a minimal installer): not a guess, and not a failure.
    const failed = Object.assign(new Error("System has not been booted with systemd"), { code: 1 });
    expect(await clock(timedatectl(failed))).toBeUndefined();
    expect(await clock(timedatectl("maybe"))).toBeUndefined();
    // Without timedatectl, systemd-timesyncd's flag file says it synchronised.
    const root = path.join(temp, "timesync-root");
    execFileSync("cp", ["-a", VM, root]);
    mkdirSync(path.join(root, "run/systemd/timesync"), { recursive: true });
    writeFileSync(path.join(root, "run/systemd/timesync/synchronized"), "");
    expect(await clock(timedatectl(failed), root)).toEqual({ ntpSynchronized: true });
    // A recorded root answers from its recording, timedatectl-ntp.txt.
    writeFileSync(path.join(root, "timedatectl-ntp.txt"), "no\n");
    expect((await collectInventory({ root })).clock).toEqual({ ntpSynchronized: false });
    expect("clock" in (await collectInventory({ root: VM }))).toBe(false);
  });

  it("refuses a root without sys/ and proc/", async () => {
    mkdirSync(path.join(temp, "empty"), { recursive: true });
    const error = await collectInventory({ root: path.join(temp, "empty") }).catch((e: unknown) => e);
    expect(StratumError.is(error) && error.code).toBe("INVENTORY_UNSUPPORTED");
  });

  it("refuses the live system off Linux, but still reads a recorded root there", async () => {
    const original = Object.getOwnPropertyDescriptor(process, "platform")!;
    Object.defineProperty(process, "platform", { ...original, value: "darwin" });
    try {
      const error = await collectInventory().catch((e: unknown) => e);
      expect(StratumError.is(error) && error.code).toBe("INVENTORY_UNSUPPORTED");
      expect(await collectInventory({ root: VM })).toStrictEqual(VM_INVENTORY);
    } finally {
      Object.defineProperty(process, "platform", original);
    }
  });

  it("re-throws an abort as the signal's reason, before and while a tool runs", async () => {
    const reason = new Error("stop");
    await expect(collectInventory({ root: SERVER, signal: AbortSignal.abort(reason) })).rejects.toBe(reason);

    const controller = new AbortController();
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    // A tool that only ends when aborted, as execFile does with its signal.
    const hanging: RunCommand = (_file, _args, { signal }) =>
      new Promise((_resolve, reject) => {
        started();
        signal?.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" })));
      });
    const pending = collectInventory({ root: SERVER, signal: controller.signal, runCommand: hanging });
    await running;
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });
});

/** Whole disks and their sizes as /proc/partitions lists them (1 KiB blocks), an independent source. */
function procPartitions(): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const line of readFileSync("/proc/partitions", "utf8").split("\n").slice(2)) {
    const [, , blocks, name] = line.trim().split(/\s+/);
    if (name) sizes.set(name, Number(blocks) * 1024);
  }
  return sizes;
}

/** The kernel name of the block device `/` is mounted from, or undefined (overlay, tmpfs…). */
function rootDevice(): string | undefined {
  const line = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .find((l) => l.split(" ")[4] === "/");
  const majmin = line?.split(" ")[2];
  if (!majmin || majmin.startsWith("0:") || !existsSync(`/sys/dev/block/${majmin}`)) return undefined;
  return path.basename(readFileSync(`/sys/dev/block/${majmin}/uevent`, "utf8").match(/^DEVNAME=(.*)$/m)?.[1] ?? "");
}

describe.runIf(process.platform === "linux")("collectInventory on this machine", () => {
  it("returns memory, CPU, NICs and disks in the API's shape", async () => {
    const inventory = await collectInventory();
    inventorySchema.parse(inventory);

    expect(inventory.memoryBytes).toBe(totalmem());
    expect(inventory.cpu?.threads).toBe(cpus().length);
    expect(inventory.cpu?.sockets).toBeGreaterThanOrEqual(1);
    expect(inventory.cpu!.cores!).toBeLessThanOrEqual(inventory.cpu!.threads!);
    expect(typeof inventory.uefi).toBe("boolean");

    const names = readdirSync("/sys/class/net").filter((n) => n !== "lo");
    expect(inventory.nics!.map((n) => n.name).sort()).toStrictEqual(names.sort());

    const partitions = procPartitions();
    for (const d of inventory.disks!) {
      expect(partitions.get(d.name), d.name).toBe(d.sizeBytes);
      for (const p of d.partitions!) expect(partitions.get(p.name), p.name).toBe(p.sizeBytes);
    }
    const root = rootDevice();
    const holding = inventory.disks!.find((d) => d.name === root || d.partitions!.some((p) => p.name === root));
    if (root && holding) expect(holding.mountpoints).toContain("/");
  });

  it("gets the same facts without lsblk and ip as with them", async () => {
    const [withTools, without] = await Promise.all([collectInventory(), collectInventory({ runCommand: noTools })]);
    const structure = (inv: Inventory) =>
      inv.disks!.map((d) => ({
        name: d.name,
        sizeBytes: d.sizeBytes,
        rotational: d.rotational,
        removable: d.removable,
        readOnly: d.readOnly,
        mountpoints: d.mountpoints,
        partitions: d.partitions!.map((p) => [p.number, p.name, p.sizeBytes]),
        stack: d.stack,
      }));
    expect(structure(without)).toStrictEqual(structure(withTools));
    // getifaddrs and `ip` list the same addresses; the order of families may differ.
    const network = (inv: Inventory) =>
      inv.nics!.map(({ permanentMac: _, addresses, ...rest }) => ({
        ...rest,
        addresses: [...(addresses ?? [])].sort(),
      }));
    expect(network(without)).toStrictEqual(network(withTools));
    expect(without.cpu).toStrictEqual(withTools.cpu);
  });

  it("agrees with ip on the interface list", async () => {
    expectInstalled("iproute2");
    const links = JSON.parse(execFileSync("ip", ["-json", "link"], { encoding: "utf8" })) as { ifname: string }[];
    const inventory = await collectInventory();
    expect(inventory.nics!.map((n) => n.name).sort()).toStrictEqual(
      links
        .map((l) => l.ifname)
        .filter((n) => n !== "lo")
        .sort(),
    );
  });
});
