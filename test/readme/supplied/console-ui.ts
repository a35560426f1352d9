// What the README test supplies for the console snippet's `// yours:` import: the page, played
// by a script. Showing the QR code makes a machine scan it and register (with the packed
// package's joiner); when that machine's row appears, the operator approves it, first with an
// assignment the founder refuses (the fields are marked), then with the defaults; when its row
// moves on, the page goes away, which must end the snippet's watch. Every call is a line on
// stdout, which the test reads.
import type { Assignment, NodeJoin } from "@stratum/join";
import { createMachineIdentity, registerMachine } from "@stratum/join/node";

/** The machine this page's QR code brings. */
const HOSTNAME = "console-node";

/** A machine's hardware as the default approval needs it: a system disk, a data disk, one NIC. */
const INVENTORY = {
  uefi: true,
  disks: [
    { name: "vda", path: "/dev/vda", byId: ["/dev/disk/by-id/virtio-SYS"], sizeBytes: 64e9, mountpoints: ["/"] },
    { name: "vdb", path: "/dev/vdb", byId: ["/dev/disk/by-id/virtio-DATA"], sizeBytes: 512e9, mountpoints: [] },
  ],
  nics: [{ name: "enp1s0", mac: "58:47:ca:70:11:09", addresses: ["127.0.0.1/8"], link: "up", mtu: 1500 }],
  cpu: { model: "Test CPU", sockets: 1, cores: 4, threads: 8 },
  memoryBytes: 17179869184,
};

type ApproveHandler = (joinId: string, assignment?: Assignment) => Promise<void>;
let approve: ApproveHandler | undefined;
const pageHideHandlers: Array<() => void> = [];
let approving = false;

function hidePage(): void {
  console.log("page hidden");
  for (const handler of pageHideHandlers.splice(0)) handler();
}

/** The signed-in operator's admin token. */
export function currentToken(): string {
  const token = process.env.README_ADMIN_TOKEN;
  if (!token) throw new Error("README_ADMIN_TOKEN is not set");
  return token;
}

/** Shows the join URL as a QR code: here, a machine scans it and registers. */
export function showQr(url: string): void {
  console.log(`qr ${url.startsWith("stratum-join://") ? "shown" : "not a join URL"}`);
  void (async () => {
    const identity = await createMachineIdentity();
    const { registration } = await registerMachine({
      url,
      identity,
      release: "0.6.0",
      hostname: HOSTNAME,
      inventory: INVENTORY,
    });
    console.log(`machine registered, pairing code ${registration.pairingCode}`);
  })().catch((error: unknown) => {
    console.log(`machine failed to register: ${String(error)}`);
    process.exitCode = 1;
    hidePage();
  });
}

async function operatorApproves(joinId: string): Promise<void> {
  if (!approve) throw new Error("no approve handler registered");
  // A disk named by its kernel name, which does not survive a reboot: refused at disks[0].key.
  await approve(joinId, { disks: [{ key: "/dev/vdb", role: "ceph-osd" }] });
  await approve(joinId, undefined); // all defaults
}

/** A machine arrived: a new row. */
export function addRow(join: NodeJoin): void {
  if (join.hostname !== HOSTNAME) return;
  console.log(`added ${join.hostname} ${join.state} ${join.pairingCode}`);
  if (join.state === "pending" && !approving) {
    approving = true;
    operatorApproves(join.id).catch((error: unknown) => showError(error));
  }
}

/** A row's join moved on. */
export function updateRow(join: NodeJoin): void {
  if (join.hostname !== HOSTNAME) return;
  console.log(`changed ${join.hostname} ${join.state}`);
  if (join.state !== "pending") hidePage();
}

/** A join left the list. */
export function removeRow(id: string): void {
  console.log(`removed ${id}`);
}

/** Marks a field of the approval dialog with the founder's message. */
export function markField(field: string, message: string): void {
  console.log(`field ${field}: ${message}`);
}

/** Shows an error the operator must see. */
export function showError(error: unknown): void {
  console.log(`ERROR ${String(error)}`);
  process.exitCode = 1;
}

/** Registers what the Approve button of a row does. */
export function onApprove(handler: ApproveHandler): void {
  approve = handler;
}

/** Registers what happens when the page goes away. */
export function onPageHide(handler: () => void): void {
  pageHideHandlers.push(handler);
}
