/**
 * A reference server per test file on loopback (ports 0, a temp data directory, the log
 * captured so tests can assert no secret reaches it) and an admin client on it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ReferenceServerConfig } from "../../examples/reference-server/config.js";
import { startReferenceServer, type ReferenceServer } from "../../examples/reference-server/server.js";
import { createAdminClient, type AdminClient } from "../../src/index.js";

export interface Harness {
  server: ReferenceServer;
  admin: AdminClient;
  log: string[];
  dataDir: string;
  close(): Promise<void>;
}

export async function startHarness(config: Partial<ReferenceServerConfig> = {}): Promise<Harness> {
  const dataDir = config.dataDir ?? mkdtempSync(join(tmpdir(), "stratum-joiner-"));
  const log: string[] = [];
  const server = await startReferenceServer({
    adminAddr: "127.0.0.1:0",
    joinAddr: "127.0.0.1:0",
    log: (line) => log.push(line),
    ...config,
    dataDir,
  });
  const admin = createAdminClient({ baseUrl: server.adminUrl, token: server.adminToken });
  return {
    server,
    admin,
    log,
    dataDir,
    close: async () => {
      await server.close();
      if (!config.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls `check` until it returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  what = "condition",
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

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
