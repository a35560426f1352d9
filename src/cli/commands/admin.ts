/**
 * `stratum-join admin …`: the founder's side for scripts: mint, list and revoke join codes;
 * list, approve, reject, retry and fail joins. The token comes from `--token`, `--token-file` or
 * `STRATUM_TOKEN` and is only ever handed to the admin client: no output includes it, and the
 * SDK's errors carry no request header.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/admin.ts`, loaded only when it runs.
 * @module
 */

import { defineFlags, type CommandSpec } from "../args.js";

/** The flags every admin command takes. */
const API_FLAGS = defineFlags({
  api: {
    type: "string",
    value: "URL",
    env: "STRATUM_API",
    description: "the admin API's base URL, e.g. https://192.0.2.240",
    required: true,
  },
  token: {
    type: "string",
    value: "TOKEN",
    env: "STRATUM_TOKEN",
    description: "the admin API token (secret: prefer the env var or --token-file)",
  },
  "token-file": {
    type: "string",
    value: "FILE",
    description: "read the admin API token from FILE (wins over STRATUM_TOKEN)",
  },
});

const adminMintFlags = defineFlags({
  ...API_FLAGS,
  endpoint: {
    type: "string",
    value: "HOST[:PORT]",
    description: "where joiners reach the join listener (default: the server's choice)",
  },
  ttl: { type: "string", value: "SECONDS", description: "the code's lifetime (default 4 hours, at most 7 days)" },
});

/** `admin mint`. */
export const adminMint: CommandSpec<typeof adminMintFlags> = {
  path: ["admin", "mint"],
  summary: "Mint a join code. The code and its URL are shown once, here: they are not stored.",
  details:
    "Give the joining machine the join URL (or the endpoint and the code). Anyone with it can register a machine; the approval is the gate.",
  flags: adminMintFlags,
  examples: [
    {
      comment: "a join code for the next machines; the URL is shown once",
      command: "stratum-join admin mint --endpoint 192.0.2.240",
    },
    { comment: "in a script: only the URL", command: "stratum-join admin mint --json | jq -r .url" },
  ],
  result: '{joinCode, endpoint, code, url, secret: ["code","url"], notice}',
  load: async () => (await import("../actions/admin.js")).runAdminMint,
};

const adminCodesFlags = defineFlags({ ...API_FLAGS });

/** `admin codes`. */
export const adminCodes: CommandSpec<typeof adminCodesFlags> = {
  path: ["admin", "codes"],
  summary: "List the join codes, newest first (never the codes themselves: only ids and selectors).",
  flags: adminCodesFlags,
  examples: [
    {
      comment: "the codes, without the codes themselves",
      command: "stratum-join admin codes --token-file ~/.stratum-token",
    },
  ],
  result: "the API's list of join codes, {items: [...]}",
  load: async () => (await import("../actions/admin.js")).runAdminCodes,
};

const adminRevokeFlags = defineFlags({ ...API_FLAGS });

/** `admin revoke`. */
export const adminRevoke: CommandSpec<typeof adminRevokeFlags> = {
  path: ["admin", "revoke"],
  summary: "Revoke a join code: no machine can register with it any more (registrations made with it stay).",
  positionals: [{ name: "CODE_ID", description: "the join code's id (jc-…), as admin codes lists it" }],
  flags: adminRevokeFlags,
  examples: [{ comment: "a code that leaked", command: "stratum-join admin revoke jc-4f7k2q9m" }],
  result: "the join code, as the API answers it",
  load: async () => (await import("../actions/admin.js")).runAdminRevoke,
};

const adminJoinsFlags = defineFlags({
  ...API_FLAGS,
  state: { type: "string", value: "STATE", description: "list only joins in STATE" },
});

/** `admin joins`. */
export const adminJoins: CommandSpec<typeof adminJoinsFlags> = {
  path: ["admin", "joins"],
  summary: "List the machines that registered (with their pairing codes), or show one.",
  details: [
    "The list has a row per machine (id, state, pairing code, host name, serial, MAC, address)",
    "and, under it, what the join waits for, why it ended and what it was assigned (name, node",
    "id, addresses), then how many more machines the cluster can take: its control-plane nodes",
    "against the most it takes, and its waiting slots with the registrations they turned away.",
    "On a terminal those lines wrap between words; in a pipe each stays whole. A * after the",
    "state marks a join whose machine went silent.",
  ].join("\n"),
  positionals: [{ name: "JOIN_ID", description: "show this join (nj-…) in full", optional: true }],
  flags: adminJoinsFlags,
  examples: [
    { comment: "the machines waiting for an approval", command: "stratum-join admin joins --state pending" },
    { comment: "one join in full", command: "stratum-join admin joins nj-8w2k4m1p" },
  ],
  result: "the API's list of joins, {items: [...], capacity}; with JOIN_ID, the join",
  load: async () => (await import("../actions/admin.js")).runAdminJoins,
};

const adminApproveFlags = defineFlags({
  ...API_FLAGS,
  assignment: {
    type: "string",
    value: "FILE",
    description: "the assignment, JSON (the API's Assignment: role, rack, mgmt, links, disks, …)",
  },
  "copy-from": {
    type: "string",
    value: "NODE",
    description: "copy the assignment of this member (node id); --assignment fields override it",
  },
  "pairing-code": {
    type: "string",
    value: "CODE",
    description: "approve only if the join's pairing code is CODE (XXX-XXX)",
  },
  name: { type: "string", value: "NAME", description: "the node's name (default: the hostname, numbered if taken)" },
  role: { type: "string", value: "ROLE", description: "the node's role (default hybrid, the one role taken today)" },
  rack: { type: "string", value: "RACK", description: "the topology.rack label" },
  az: { type: "string", value: "AZ", description: "the availability zone" },
  "mgmt-interface": {
    type: "string",
    value: "NIC",
    description: "the management NIC (default: the one it registered from)",
  },
  address: {
    type: "string",
    value: "IP[/PREFIX]",
    description: "the management address (default: the NIC's own); a new one as a CIDR, with --gateway",
  },
  gateway: { type: "string", value: "IP", description: "the gateway of a new management address" },
  disk: {
    type: "string",
    multiple: true,
    value: "KEY=ROLE",
    description: "what a data disk becomes: compute, ceph-osd or unused (KEY: its WWN or by-id path)",
  },
  wipe: {
    type: "string",
    multiple: true,
    value: "KEY",
    description: "confirm wiping the disk KEY, which holds data (the typed confirmation)",
  },
});

/** `admin approve`. */
export const adminApprove: CommandSpec<typeof adminApproveFlags> = {
  path: ["admin", "approve"],
  summary:
    "Approve a join, with the fields to change (--name, --address, --disk, …), an assignment file or a member's; all defaults without any.",
  details: [
    "Approve only the machine whose console shows the same pairing code. With --pairing-code,",
    "the approval is refused (exit 10, PAIRING_MISMATCH) unless the join's pairing code is that",
    "one, so a script can carry what the person at the machine read out. The refusal never",
    "shows the join's code (it would be the one to copy): read it again on the machine's screen.",
    "The flags --name, --role, --rack, --az, --mgmt-interface, --address, --gateway,",
    "--disk and --wipe set those fields over --assignment FILE and --copy-from; what they",
    "leave out is the founder's default (a twin's default name and address skip those others",
    "hold: vm-2). Refused assignments exit 13 with each problem at its field (error.errors) and",
    "the flag that fixes it (mgmt.address: 192.0.2.22 is already held by member node-2 (n-…)",
    "(fix with --address)).",
  ].join("\n"),
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: adminApproveFlags,
  fieldHint: approvalFlagOf,
  examples: [
    {
      comment: "approve the machine whose screen shows 4F7-K2Q, with the defaults",
      command: "stratum-join admin approve nj-8w2k4m1p --pairing-code 4F7-K2Q",
    },
    {
      comment: "a twin: its own name and address, its data disk a Ceph OSD",
      command:
        "stratum-join admin approve nj-8w2k4m1p --name rack2-vm --address 192.0.2.31 --disk eui.0025388b91d1f0e2=ceph-osd",
    },
    {
      comment: "with an assignment, or one copied from a member",
      command: "stratum-join admin approve nj-8w2k4m1p --assignment node-2.json",
    },
  ],
  result: "the join, as the API answers it",
  load: async () => (await import("../actions/admin.js")).runAdminApprove,
};

/**
 * The flag of `admin approve` that sets a refused field: `name` → `--name`, `mgmt.address` →
 * `--address`, `disks[1].confirm` → `--wipe KEY`; the rest is the assignment file's.
 */
function approvalFlagOf(field: string): string | undefined {
  const path = field.replace(/^assignment\./, "");
  const direct: Record<string, string> = {
    name: "--name",
    role: "--role",
    rack: "--rack",
    az: "--az",
    "mgmt.interface": "--mgmt-interface",
    "mgmt.address": "--address",
    "mgmt.gateway": "--gateway",
    copyFrom: "--copy-from",
  };
  if (direct[path]) return `fix with ${direct[path]}`;
  if (/^disks\[\d+\]\.confirm$/.test(path)) return "fix with --wipe KEY";
  if (/^disks\[\d+\]/.test(path)) return "fix with --disk KEY=ROLE";
  return path ? "fix in --assignment FILE" : undefined;
}

const adminExpireFlags = defineFlags({ ...API_FLAGS });

/** `admin expire`. */
export const adminExpire: CommandSpec<typeof adminExpireFlags> = {
  path: ["admin", "expire"],
  summary:
    "Expire a waiting join (pending or needs-upgrade) now: its waiting slot is freed, and the machine may register again later.",
  details:
    "For machines the cluster cannot take now (it is full): unlike a rejection, the key is not refused for good. A join in any other state is refused (exit 13, JOIN_STATE_CONFLICT).",
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: adminExpireFlags,
  examples: [
    {
      comment: "the cluster is full; this machine can come back when a place is free",
      command: "stratum-join admin expire nj-8w2k4m1p",
    },
  ],
  result: "the join, as the API answers it",
  load: async () => (await import("../actions/admin.js")).runAdminExpire,
};

const adminRejectFlags = defineFlags({
  ...API_FLAGS,
  reason: {
    type: "string",
    value: "TEXT",
    description: "why, shown on the console and to the joiner",
    required: true,
  },
});

/** `admin reject`. */
export const adminReject: CommandSpec<typeof adminRejectFlags> = {
  path: ["admin", "reject"],
  summary: "Reject a join. Its key is refused from then on; the reason is shown to the joiner.",
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: adminRejectFlags,
  examples: [
    {
      comment: "a machine nobody expected",
      command: "stratum-join admin reject nj-8w2k4m1p --reason 'unknown serial'",
    },
  ],
  result: "the join, as the API answers it",
  load: async () => (await import("../actions/admin.js")).runAdminReject,
};

const adminRetryFlags = defineFlags({ ...API_FLAGS });

/** `admin retry`. */
export const adminRetry: CommandSpec<typeof adminRetryFlags> = {
  path: ["admin", "retry"],
  summary: "Retry a failed join: it is queued for delivery again with the assignment it had.",
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: adminRetryFlags,
  examples: [
    {
      comment: "deliver a failed join again, once its cause is fixed",
      command: "stratum-join admin retry nj-8w2k4m1p",
    },
  ],
  result: "the join, as the API answers it",
  load: async () => (await import("../actions/admin.js")).runAdminRetry,
};

const adminFailFlags = defineFlags({
  ...API_FLAGS,
  reason: {
    type: "string",
    value: "TEXT",
    description: "why, shown on the console and to the joiner",
    required: true,
  },
});

/** `admin fail`. */
export const adminFail: CommandSpec<typeof adminFailFlags> = {
  path: ["admin", "fail"],
  summary:
    "Fail a running join (delivering or installing) now, e.g. a machine that will never report again: the next join can run.",
  details:
    "The join becomes failed with the reason as its error; its delivery is withdrawn. Retry it (admin retry) once the machine is back. A join in any other state is refused (exit 13, JOIN_STATE_CONFLICT).",
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: adminFailFlags,
  examples: [
    {
      comment: "a machine that lost power for good while installing holds the queue",
      command: "stratum-join admin fail nj-8w2k4m1p --reason 'powered off; reinstalling'",
    },
  ],
  result: "the join, as the API answers it",
  load: async () => (await import("../actions/admin.js")).runAdminFail,
};
