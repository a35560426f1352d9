// The console's pure parts, without a browser: times, machine descriptions, install progress,
// failures in plain words, and the approval the dialog builds and previews.
import { describe, expect, it } from "vitest";
import {
  JOIN_STATES,
  NetworkError,
  StratumApiError,
  TimeoutError,
  type Assignment,
  type Inventory,
  type NodeJoin,
} from "../../src/index.js";
import {
  approvalFromDraft,
  describeAssignment,
  draftFromJoin,
  fieldsOf,
  fieldTarget,
  mgmtCandidates,
  needsConfirm,
  sentDiskNames,
} from "../../examples/console/src/assignment.js";
import { registerCommand } from "../../examples/console/src/codes.js";
import {
  canFail,
  canRetry,
  explainState,
  failureInWords,
  installProgress,
  matchesSearch,
  isRealNic,
  macsOf,
  machineName,
  shortFingerprint,
  summarizeHardware,
} from "../../examples/console/src/format.js";
import { describeFailure, fieldLabel } from "../../examples/console/src/messages.js";
import { formatAgo, formatCountdown, formatDuration, formatLocalTime } from "../../examples/console/src/time.js";

const NOW = Date.parse("2026-11-29T12:00:00Z");
const ago = (ms: number) => new Date(NOW - ms).toISOString();
const later = (ms: number) => new Date(NOW + ms).toISOString();
const plain = (text: string | undefined) => text?.replace(/\u00a0/g, " ");

const inventory: Inventory = {
  cpu: { model: "AMD EPYC 7313P", cores: 16, threads: 32 },
  disks: [
    { name: "nvme0n1", path: "/dev/nvme0n1", wwn: "eui.0", sizeBytes: 512e9, mountpoints: ["/"] },
    {
      name: "nvme1n1",
      path: "/dev/nvme1n1",
      wwn: "eui.1",
      sizeBytes: 3.84e12,
      holders: [{ kind: "filesystem", device: "nvme1n1", detail: "ext4" }],
    },
    { name: "sda", path: "/dev/sda", byId: ["/dev/disk/by-id/ata-X"], sizeBytes: 1e12, holders: [] },
    // No holders: the machine could not probe it.
    { name: "sdb", path: "/dev/sdb", sizeBytes: 1e12 },
  ],
  nics: [
    // collectInventory leaves loopback out; a founder given one would take it for the source address's card.
    { name: "lo", mac: "00:00:00:00:00:00", link: "unknown" },
    { name: "ifb0", link: "unknown", operState: "unknown" },
    { name: "tunnel9", link: "unknown" },
    { name: "wlp3s0", mac: "aa:bb:cc:00:00:01", link: "up", wireless: true, addresses: ["10.1.0.9/24"] },
    { name: "enp87s0", mac: "58:47:ca:70:11:22", link: "up", speedMbps: 1000, addresses: ["192.0.2.22/24"] },
    { name: "enp2s0f0", mac: "58:47:ca:70:12:22", permanentMac: "58:47:ca:70:12:99", link: "down", speedMbps: 25000 },
  ],
};

function join(overrides: Partial<NodeJoin> = {}): NodeJoin {
  return {
    id: "nj-8w2k4m1p",
    codeId: "jc-4f7k2q9m",
    state: "pending",
    pairingCode: "4F7-K2Q",
    hostname: "node-2",
    sourceAddr: "192.0.2.22",
    keyFingerprint: "3A:1B:2C:3D:4E:5F:60:71",
    inventory,
    stalled: false,
    steps: [],
    createdAt: ago(60_000),
    updatedAt: ago(60_000),
    ...overrides,
  };
}

describe("times", () => {
  it("says durations in at most two units, never splitting an amount from its unit", () => {
    expect(plain(formatDuration(45_000))).toBe("45 s");
    expect(plain(formatDuration(192_000))).toBe("3 min 12 s");
    expect(plain(formatDuration((3 * 60 + 12) * 60_000 + 40_000))).toBe("3 h 12 min");
    expect(plain(formatDuration(2 * 86_400_000 + 4 * 3_600_000))).toBe("2 d 4 h");
    expect(plain(formatDuration(3_600_000))).toBe("1 h");
    expect(formatDuration(45_000)).toBe("45\u00a0s");
  });

  it("counts down to an expiry, rounding up to the minute, and says when it has passed", () => {
    expect(plain(formatCountdown(later(3 * 3_600_000 + 11 * 60_000 + 1_000), NOW))).toBe("in 3 h 12 min");
    expect(plain(formatCountdown(later(30_000), NOW))).toBe("in 30 s");
    expect(plain(formatCountdown(ago(300_000), NOW))).toBe("5 min ago");
    expect(formatCountdown(undefined, NOW)).toBeUndefined();
    expect(plain(formatAgo(ago(2_000), NOW))).toBe("just now");
    expect(plain(formatAgo(ago(240_000), NOW))).toBe("4 min ago");
  });

  it("gives moments in local time with the zone", () => {
    expect(formatLocalTime("2026-11-29T12:00:00Z")).toMatch(/2026.*12:00.*(UTC|GMT)/);
  });
});

describe("machines", () => {
  it("leaves out virtual and MAC-less devices, and the memory a machine did not report", () => {
    expect(inventory.nics!.filter(isRealNic).map((n) => n.name)).toEqual(["wlp3s0", "enp87s0", "enp2s0f0"]);
    expect(macsOf(inventory)).toEqual(["aa:bb:cc:00:00:01", "58:47:ca:70:11:22", "58:47:ca:70:12:99"]);
    const rows = summarizeHardware(inventory);
    expect(rows.map((r) => r.term)).toEqual(["CPU", "Disks", "Network"]);
    expect(rows.find((r) => r.term === "Disks")!.value).toEqual([
      "nvme0n1, 512 GB, system",
      "nvme1n1, 3.8 TB, holds data",
      "sda, 1.0 TB, blank",
      "sdb, 1.0 TB, not probed",
    ]);
    expect(rows.find((r) => r.term === "Network")!.value).toContain("enp2s0f0: 58:47:ca:70:12:99, no link, 25 Gb/s");
    expect(summarizeHardware(undefined)).toEqual([{ term: "Hardware", value: "not reported by the machine" }]);
    expect(summarizeHardware({ memoryBytes: 8 * 2 ** 30 })).toEqual([{ term: "Memory", value: "8 GiB" }]);
  });

  it("names a machine so that twins are told apart", () => {
    expect(machineName(join())).toBe("node-2 (nj-8w2k4m1p, pairing code 4F7-K2Q)");
    expect(machineName(join({ hostname: undefined }))).toBe("unnamed machine (nj-8w2k4m1p, pairing code 4F7-K2Q)");
    expect(shortFingerprint("3A:1B:2C:3D:4E:5F")).toBe("3A:1B:2C:3D");
  });

  it("says where a join stands in words", () => {
    expect(plain(explainState(join({ expiresAt: later(3_600_000) }), NOW))).toMatch(
      /pairing code.*Unless approved, it expires in 1 h \(/,
    );
    // The API's waitReason is what follows "waiting for".
    expect(explainState(join({ state: "approved", waitReason: "its turn: delivery starts shortly" }), NOW)).toBe(
      "Approved; waiting for its turn: delivery starts shortly.",
    );
    expect(
      plain(explainState(join({ waitReason: "a free place: the cluster is full", expiresAt: later(3_600_000) }), NOW)),
    ).toMatch(/^It cannot be approved now: it is waiting for a free place: the cluster is full\. Unless approved/);
    expect(explainState(join({ state: "delivering", deliveredAt: ago(12_000) }), NOW)).toMatch(
      /waiting for the machine to collect it/,
    );
    expect(
      explainState(join({ state: "failed", failedStepTitle: "Preparing disks", failedError: "no space" }), NOW),
    ).toBe(
      "Preparing disks failed: no space. Retry queues it again with the same assignment; approve it again to change the assignment first.",
    );
    // Failed by an operator: who, and their reason as written.
    const byOperator = join({
      state: "failed",
      failedStep: "operator",
      failedStepTitle: "Failed by alice",
      failedError: "Powered off for good.",
    });
    expect(failureInWords(byOperator)).toBe("Failed by alice: Powered off for good");
    expect(explainState(byOperator, NOW)).toMatch(/^Failed by alice: Powered off for good\. Retry queues it again/);
    expect(failureInWords(join({ state: "failed", failedStep: "storage" }))).toBe("storage failed");
    expect(explainState(join({ state: "rejected", reason: "Not ours" }), NOW)).toBe("Rejected: Not ours");
    const upgrading = join({
      state: "needs-upgrade",
      upgrade: { from: "0.5.0", to: "0.6.0" },
      failedError: "disk full",
    });
    expect(explainState(upgrading, NOW)).toMatch(
      /^Upgrading itself from 0\.5\.0 to 0\.6\.0; it can be approved once .*disk full/,
    );
  });

  it("offers Fail only while a join runs, and Retry once it failed", () => {
    expect(JOIN_STATES.filter(canFail)).toEqual(["delivering", "installing"]);
    expect(JOIN_STATES.filter(canRetry)).toEqual(["failed"]);
  });

  it("counts the install's steps and the time since delivery", () => {
    const steps: NodeJoin["steps"] = [
      { name: "storage", title: "Preparing disks", status: "done" },
      { name: "join/patroni", title: "Joining Postgres", status: "running" },
      { name: "join/x", title: "Later", status: "done" },
    ];
    const progress = installProgress(join({ state: "installing", steps, deliveredAt: ago(90_000) }), NOW)!;
    expect(progress).toMatchObject({
      current: 2,
      total: 3,
      headline: "Step 2 of 3: Joining Postgres",
      elapsedMs: 90_000,
    });
    expect(installProgress(join(), NOW)).toBeUndefined();
    expect(plain(explainState(join({ state: "installing", steps, deliveredAt: ago(90_000) }), NOW))).toBe(
      "Installing, step 2 of 3: Joining Postgres, 1 min 30 s elapsed.",
    );
  });

  it("counts against the plan's total from the first step, and stops the clock when the join ends", () => {
    const first: NodeJoin["steps"] = [{ name: "storage", title: "Preparing disks", status: "running" }];
    expect(installProgress(join({ state: "installing", steps: first, totalSteps: 7 }), NOW)!.headline).toBe(
      "Step 1 of 7: Preparing disks",
    );
    // Without the plan's total, the steps reported so far.
    expect(installProgress(join({ state: "installing", steps: first }), NOW)!.headline).toBe(
      "Step 1 of 1: Preparing disks",
    );
    // A failed join's time ends where the join did, not at the page's clock.
    const failed = join({ state: "failed", steps: first, deliveredAt: ago(120_000), updatedAt: ago(60_000) });
    expect(installProgress(failed, NOW)!.elapsedMs).toBe(60_000);
    expect(installProgress(failed, NOW + 3_600_000)!.elapsedMs).toBe(60_000);
  });

  it("finds a machine by its pairing code however typed, host name, serial, MAC with or without colons, address", () => {
    const j = join({
      pairingCode: "SX7-BPM",
      hostname: "rack2-vm",
      systemSerial: "VM-A-0001",
      sourceAddr: "10.0.2.15",
      inventory: { nics: [{ name: "ens3", mac: "52:54:00:12:34:56", addresses: ["10.0.2.15/24"] }] },
    });
    for (const query of [
      "SX7-BPM",
      "sx7bpm",
      "SX7",
      "rack2",
      "VM-A",
      "52:54:00:12",
      "525400123456",
      "10.0.2.15",
      "rack2 sx7",
    ])
      expect(matchesSearch(j, query), query).toBe(true);
    for (const query of ["ZZZ-999", "rack3", "10.0.3", "rack2 zzz"]) expect(matchesSearch(j, query), query).toBe(false);
    expect(matchesSearch(j, "  ")).toBe(true);
  });
});

describe("failures in plain words", () => {
  it("words a refusal by its code, with the server's detail, the fields and a reference", () => {
    const refusal = new StratumApiError(409, {
      code: "JOIN_APPROVAL_REFUSED",
      detail: "The assignment does not fit.",
      requestId: "req-1",
      errors: [{ field: "mgmt.address", message: "192.0.2.2 is already held" }],
    });
    const report = describeFailure(refusal, { action: "approve node-2 (nj-1)" });
    expect(report).toMatchObject({
      kind: "refused",
      summary:
        "Could not approve node-2 (nj-1): the cluster refused this assignment. Fix the marked fields and approve again.",
      fields: [{ field: "mgmt.address", message: "192.0.2.2 is already held" }],
      reference: "Reference: code JOIN_APPROVAL_REFUSED, request req-1.",
    });
    expect(describeFailure(new StratumApiError(401, { code: "UNAUTHORIZED" })).kind).toBe("auth");
    expect(
      describeFailure(new StratumApiError(403, { code: "FORBIDDEN", details: { permission: "ha:ApproveNodeJoin" } }))
        .summary,
    ).toBe("This token is not allowed to do that (it needs ha:ApproveNodeJoin).");
  });

  it("says no answer without the operation's path template, and marks it as passing", () => {
    const report = describeFailure(new NetworkError("POST /v1/admin/cluster/joins/{joinId}/approve got no answer"), {
      action: "approve node-2",
      apiUrl: "http://127.0.0.1:8080",
    });
    expect(report.kind).toBe("network");
    expect(report.summary).toMatch(
      /^Could not approve node-2: the server at http:\/\/127\.0\.0\.1:8080 did not answer\./,
    );
    expect(report.summary).not.toMatch(/\/v1\/|\{joinId\}|NETWORK/);
    expect(describeFailure(new TimeoutError("x got no answer within 10 ms")).summary).toBe(
      "The server took too long to answer. Try again in a moment.",
    );
  });

  it("labels field paths as a person reads them", () => {
    expect(fieldLabel("mgmt.address")).toBe("Management address");
    expect(fieldLabel("assignment.role")).toBe("Role");
    expect(fieldLabel("disks[1].confirm")).toBe("Disk 2: wipe confirmation");
    expect(fieldLabel("links[0].interface")).toBe("Link 1: interface");
    expect(fieldLabel("provider.upstreamInterface")).toBe("VM uplink interface");
    expect(fieldLabel("")).toBe("The request");
  });
});

describe("the approval", () => {
  it("starts from nothing chosen: the founder's preview fills the fields, the inventory lists the disks", () => {
    const draft = draftFromJoin(join());
    expect(draft.fields).toEqual({});
    // Nothing chosen is nothing sent: the founder applies its own defaults.
    expect(approvalFromDraft(draft)).toEqual({});
    expect(draft.disks.map((d) => [d.name, d.key, d.system, d.data])).toEqual([
      ["nvme0n1", "eui.0", true, expect.stringContaining("not probed")],
      ["nvme1n1", "eui.1", false, "holds data: filesystem (ext4) on nvme1n1"],
      ["sda", "/dev/disk/by-id/ata-X", false, undefined],
      ["sdb", undefined, false, expect.stringContaining("not probed")],
    ]);
    expect(draftFromJoin(join({ inventory: undefined })).disks).toEqual([]);
    expect(mgmtCandidates(join()).map((c) => [c.name, c.address])).toEqual([
      ["enp87s0", "192.0.2.22"],
      ["enp2s0f0", undefined],
      ["wlp3s0", "10.1.0.9"],
    ]);
    expect(fieldsOf({ name: "node-2", mgmt: { interface: "enp87s0", address: "192.0.2.22" } })).toEqual({
      name: "node-2",
      role: "hybrid",
      mgmtInterface: "enp87s0",
      mgmtAddress: "192.0.2.22",
      mgmtGateway: "",
    });
  });

  it("sends only what the operator chose, the disks given a role with their typed confirmation, in the order field errors count", () => {
    const draft = draftFromJoin(join());
    draft.disks[1]!.choice = "ceph-osd";
    draft.disks[1]!.confirm = " eui.1 ";
    draft.disks[2]!.choice = "compute";
    draft.fields = { mgmtAddress: "192.0.2.40/24", mgmtGateway: " 192.0.2.1 ", name: "  " };
    expect(approvalFromDraft(draft)).toEqual({
      assignment: {
        mgmt: { address: "192.0.2.40/24", gateway: "192.0.2.1" },
        disks: [
          { key: "eui.1", role: "ceph-osd", confirm: "eui.1" },
          { key: "/dev/disk/by-id/ata-X", role: "compute" },
        ],
      },
    });
    // Another role is sent as chosen: the founder's refusal at `role` says why.
    expect(approvalFromDraft({ fields: { role: "storage" }, disks: [] })).toEqual({ assignment: { role: "storage" } });
    const sent = sentDiskNames(draft);
    expect(sent).toEqual(["nvme1n1", "sda"]);
    expect(fieldTarget("disks[0].confirm", sent)).toEqual({ kind: "disk", disk: "nvme1n1", part: "confirm" });
    expect(fieldTarget("assignment.disks[1].role", sent)).toEqual({ kind: "disk", disk: "sda", part: "choice" });
    expect(fieldTarget("mgmt.address", sent)).toEqual({ kind: "mgmtAddress" });
    expect(fieldTarget("role", sent)).toEqual({ kind: "role" });
    expect(fieldTarget("links[0].interface", sent)).toEqual({ kind: "general" });
    expect(fieldTarget("disks[5].key", sent)).toEqual({ kind: "general" });
  });

  it("never calls an unprobed disk blank: giving it a role asks for its typed key, and says why", () => {
    const unprobed = { name: "sdc", path: "/dev/sdc", wwn: "naa.c", sizeBytes: 1e12 };
    const draft = draftFromJoin(
      join({ inventory: { disks: [unprobed, { ...unprobed, name: "sdd", wwn: "naa.d", holders: [] }] } }),
    );
    const [sdc, sdd] = draft.disks;
    expect(sdc!.data).toBe("not probed: the machine could not read what is on it, so it may hold data");
    expect(sdd!.data).toBeUndefined();
    sdc!.choice = "ceph-osd";
    sdd!.choice = "ceph-osd";
    expect(needsConfirm(sdc!)).toBe(true);
    expect(needsConfirm(sdd!)).toBe(false);
    expect(summarizeHardware({ disks: [unprobed] })[0]!.value).toEqual(["sdc, 1.0 TB, not probed"]);
  });

  it("describes the founder's assignment in lines a person checks, disks by their kernel names", () => {
    const draft = draftFromJoin(join());
    const assignment: Assignment = {
      name: "node-2",
      role: "hybrid",
      mgmt: { interface: "enp2s0f0" },
      disks: [{ key: "eui.1", role: "ceph-osd", confirm: "eui.1" }],
      provider: { topology: "bridged", vlan: 100, upstreamInterface: "enp2s0f0" },
    };
    expect(describeAssignment(assignment, draft.disks)).toEqual([
      ["Name", "node-2"],
      ["Role", "hybrid"],
      ["Management", "enp2s0f0"],
      ["Disks", "nvme1n1 becomes a Ceph OSD (wiped)"],
      ["VM uplink", "enp2s0f0, bridged, VLAN 100"],
    ]);
    expect(describeAssignment({}, draft.disks)[3]).toEqual(["Disks", "all left as they are"]);
  });
});

describe("the register command", () => {
  it("is ready to paste, quoted for a POSIX shell", () => {
    expect(registerCommand("stratum-join://192.0.2.240/4F7K-2Q9M-ABD", "0.6.0")).toBe(
      "stratum-join register --url 'stratum-join://192.0.2.240/4F7K-2Q9M-ABD' --identity /var/lib/stratum-join --release '0.6.0'",
    );
    expect(registerCommand("stratum-join://h/C", "it's")).toContain(`--release 'it'\\''s'`);
    expect(registerCommand("stratum-join://h/C", "")).toMatch(/--release RELEASE$/);
    expect(registerCommand("stratum-join://h/C", "")).not.toMatch(/[<>]/);
  });
});
