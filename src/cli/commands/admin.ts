/**
 * `stratum-join admin …`: the founder's side for scripts: mint, list and revoke join codes;
 * list, approve, reject, retry and fail joins. The token comes from `--token`, `--token-file` or
 * `STRATUM_TOKEN` and is only ever handed to the admin client: no output includes it, and the
 * SDK's errors carry no request header.
 * @module
 */

import { createAdminClient, type AdminClient } from "../../admin/index.js";
import { parsePairingCode, formatPairingCode } from "../../core/pairing.js";
import { JoinProtocolError } from "../../errors/index.js";
import type { Approval, Assignment, NodeJoin } from "../../types.js";
import { CliError, numberFlag, stringFlag, type CommandSpec, type FlagSpec, type ParsedArgs } from "../args.js";
import { readJsonFile, readTextFile } from "../files.js";
import { fingerprintLines, table } from "../output.js";
import type { Style } from "../style.js";
import { isJoinState, JOIN_STATES } from "../../core/join-states.js";

/** The flags every admin command takes. */
const API_FLAGS: Readonly<Record<string, FlagSpec>> = {
  api: {
    type: "string",
    value: "URL",
    env: "STRATUM_API",
    description: "the admin API's base URL, e.g. https://192.0.2.240 (required)",
  },
  token: {
    type: "string",
    value: "TOKEN",
    env: "STRATUM_TOKEN",
    description: "the admin API token (secret: prefer the env var or --token-file)",
  },
  "token-file": { type: "string", value: "FILE", description: "read the admin API token from FILE" },
};

/** How long one admin call may take. */
const CALL_TIMEOUT_MS = 30_000;

async function clientOf(args: ParsedArgs, command: CommandSpec): Promise<AdminClient> {
  const baseUrl = stringFlag(args, "api", command, true);
  const tokenFile = stringFlag(args, "token-file", command);
  // An explicit --token-file wins over a STRATUM_TOKEN inherited from the environment.
  const token =
    tokenFile !== undefined ? (await readTextFile(tokenFile, "token file")).trim() : stringFlag(args, "token", command);
  if (!token)
    throw new CliError("USAGE", "an admin token is required: --token, --token-file or STRATUM_TOKEN", {
      command: command.path.join(" "),
    });
  return createAdminClient({ baseUrl, token, timeoutMs: CALL_TIMEOUT_MS });
}

function joinLines(join: NodeJoin, style: Style): string[] {
  const lines = [
    `${style.bold(join.id)}  ${style.state(join.state)}${join.stalled ? style.yellow(" (stalled)") : ""}`,
    `  pairing code   ${join.pairingCode}`,
  ];
  const add = (label: string, value: unknown) => {
    if (value !== undefined && value !== null && value !== "") lines.push(`  ${label.padEnd(14)} ${String(value)}`);
  };
  add("hostname", join.hostname);
  add("serial", join.systemSerial);
  add("release", join.release);
  add("from", join.sourceAddr);
  if (join.keyFingerprint) lines.push(...fingerprintLines("  key", join.keyFingerprint, 17));
  add("node id", join.nodeId);
  add("waiting for", join.waitReason);
  if (join.upgrade) add("upgrade", `${join.upgrade.from} → ${join.upgrade.to}`);
  add("reason", join.reason);
  if (join.failedStep)
    add("failed at", `${join.failedStepTitle ?? join.failedStep}${join.failedError ? `: ${join.failedError}` : ""}`);
  if (join.assignment?.copiedFrom) add("copied from", join.assignment.copiedFrom);
  for (const note of join.assignment?.copyNotes ?? []) add("copy note", note);
  return lines;
}

/** `admin mint`. */
export const adminMint: CommandSpec = {
  path: ["admin", "mint"],
  summary: "Mint a join code. The code and its URL are shown once, here: they are not stored.",
  details:
    "Give the joining machine the join URL (or the endpoint and the code). Anyone with it can register a machine; the approval is the gate.",
  flags: {
    ...API_FLAGS,
    endpoint: {
      type: "string",
      value: "HOST[:PORT]",
      description: "where joiners reach the join listener (default: the server's choice)",
    },
    ttl: { type: "string", value: "SECONDS", description: "the code's lifetime (default 4 hours, at most 7 days)" },
  },
  examples: [
    {
      comment: "a join code for the next machines; the URL is shown once",
      command: "stratum-join admin mint --endpoint 192.0.2.240",
    },
    { comment: "in a script: only the URL", command: "stratum-join admin mint --json | jq -r .url" },
  ],
  async run(ctx, args) {
    const client = await clientOf(args, adminMint);
    const endpoint = stringFlag(args, "endpoint", adminMint);
    const ttlSeconds = numberFlag(args, "ttl", adminMint);
    const minted = await client.mintJoinCode(
      { ...(endpoint ? { endpoint } : {}), ...(ttlSeconds ? { ttlSeconds } : {}) },
      { signal: ctx.signal },
    );
    // The one output that carries a secret, on purpose: minting is for showing the code.
    ctx.out.resultWithSecret(
      {
        joinCode: minted.joinCode,
        endpoint: minted.endpoint,
        code: minted.code,
        url: minted.url,
        secret: ["code", "url"],
        notice: "code and url are secret and shown only now; they are not stored anywhere",
      },
      [
        `minted join code ${minted.joinCode.id} (selector ${minted.joinCode.selector}), expires ${minted.joinCode.expiresAt}`,
        `  endpoint  ${minted.endpoint}`,
        "",
        `  ${ctx.out.style.yellow(ctx.out.style.bold("SECRET, shown only now:"))}`,
        `  code      ${minted.code}`,
        `  url       ${minted.url}`,
      ],
    );
  },
};

/** `admin codes`. */
export const adminCodes: CommandSpec = {
  path: ["admin", "codes"],
  summary: "List the join codes, newest first (never the codes themselves: only ids and selectors).",
  flags: { ...API_FLAGS },
  examples: [
    {
      comment: "the codes, without the codes themselves",
      command: "stratum-join admin codes --token-file ~/.stratum-token",
    },
  ],
  async run(ctx, args) {
    const client = await clientOf(args, adminCodes);
    const list = await client.listJoinCodes({ signal: ctx.signal });
    ctx.out.result(
      list,
      list.items.length === 0
        ? "no join codes"
        : table(
            ["ID", "SELECTOR", "STATE", "ENDPOINT", "ATTEMPTS", "REGISTRATIONS", "EXPIRES"],
            list.items.map((c) => [
              c.id,
              c.selector,
              c.state,
              c.endpoint,
              String(c.attempts ?? 0),
              String(c.registrations ?? 0),
              c.expiresAt,
            ]),
          ),
    );
  },
};

/** `admin revoke`. */
export const adminRevoke: CommandSpec = {
  path: ["admin", "revoke"],
  summary: "Revoke a join code: no machine can register with it any more (registrations made with it stay).",
  positionals: [{ name: "CODE_ID", description: "the join code's id (jc-…), as admin codes lists it" }],
  flags: { ...API_FLAGS },
  examples: [{ comment: "a code that leaked", command: "stratum-join admin revoke jc-4f7k2q9m" }],
  async run(ctx, args) {
    const client = await clientOf(args, adminRevoke);
    const code = await client.revokeJoinCode(args.positionals[0]!, { signal: ctx.signal });
    ctx.out.result(code, `revoked ${code.id} (selector ${code.selector}): ${code.state}`);
  },
};

/** `admin joins`. */
export const adminJoins: CommandSpec = {
  path: ["admin", "joins"],
  summary: "List the machines that registered (with their pairing codes), or show one.",
  positionals: [{ name: "JOIN_ID", description: "show this join (nj-…) in full", optional: true }],
  flags: {
    ...API_FLAGS,
    state: { type: "string", value: "STATE", description: "list only joins in STATE" },
  },
  examples: [
    { comment: "the machines waiting for an approval", command: "stratum-join admin joins --state pending" },
    { comment: "one join in full", command: "stratum-join admin joins nj-8w2k4m1p" },
  ],
  async run(ctx, args) {
    const client = await clientOf(args, adminJoins);
    const joinId = args.positionals[0];
    if (joinId !== undefined) {
      const join = await client.getNodeJoin(joinId, { signal: ctx.signal });
      ctx.out.result(join, joinLines(join, ctx.out.style));
      return;
    }
    const state = stringFlag(args, "state", adminJoins);
    if (state !== undefined && !isJoinState(state)) {
      throw new CliError("USAGE", `--state takes one of ${JOIN_STATES.join(", ")}`, { command: "admin joins" });
    }
    const list = await client.listNodeJoins({ signal: ctx.signal });
    const items = state === undefined ? list.items : list.items.filter((j) => j.state === state);
    ctx.out.result(
      { ...list, items },
      items.length === 0
        ? "no joins"
        : table(
            ["ID", "STATE", "PAIRING", "HOSTNAME", "RELEASE", "FROM", "NOTE"],
            items.map((j) => [
              j.id,
              `${j.state}${j.stalled ? "*" : ""}`,
              j.pairingCode,
              j.hostname ?? "",
              j.release ?? "",
              j.sourceAddr ?? "",
              j.waitReason ?? j.reason ?? (j.failedStep ? `failed at ${j.failedStep}` : ""),
            ]),
            // The state in its colour, and the pairing code an operator compares in bold.
            {
              style: ctx.out.style,
              paint: (cell, column, raw) =>
                column === 1
                  ? cell.replace(raw, ctx.out.style.state(raw.replace(/\*$/, "")) + (raw.endsWith("*") ? "*" : ""))
                  : column === 2
                    ? ctx.out.style.bold(cell)
                    : cell,
            },
          ),
    );
  },
};

/** `admin approve`. */
export const adminApprove: CommandSpec = {
  path: ["admin", "approve"],
  summary: "Approve a join, with an assignment (JSON file) or one copied from a member; all defaults without either.",
  details: [
    "Approve only the machine whose console shows the same pairing code. With --pairing-code,",
    "the approval is refused (exit 10, PAIRING_MISMATCH) unless the join's pairing code is that",
    "one, so a script can carry what the person at the machine read out.",
    "Refused assignments exit 13 with each problem at its field (error.errors).",
  ].join("\n"),
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: {
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
  },
  examples: [
    {
      comment: "approve the machine whose screen shows 4F7-K2Q, with the defaults",
      command: "stratum-join admin approve nj-8w2k4m1p --pairing-code 4F7-K2Q",
    },
    {
      comment: "with an assignment, or one copied from a member",
      command: "stratum-join admin approve nj-8w2k4m1p --assignment node-2.json",
    },
  ],
  async run(ctx, args) {
    const client = await clientOf(args, adminApprove);
    const joinId = args.positionals[0]!;
    const file = stringFlag(args, "assignment", adminApprove);
    let assignment: Assignment | undefined;
    if (file !== undefined) {
      const value = await readJsonFile(file, "assignment");
      if (typeof value !== "object" || value === null || Array.isArray(value))
        throw new CliError("FILE_ERROR", `the assignment ${file} is not a JSON object`);
      assignment = value as Assignment;
    }
    const expected = stringFlag(args, "pairing-code", adminApprove);
    if (expected !== undefined) {
      const wanted = parsePairingCode(expected);
      const join = await client.getNodeJoin(joinId, { signal: ctx.signal });
      let actual = "";
      try {
        actual = parsePairingCode(join.pairingCode);
      } catch {
        // a malformed code on the server never matches
      }
      if (actual !== wanted) {
        throw new JoinProtocolError(
          "PAIRING_MISMATCH",
          `the join ${joinId} shows pairing code ${join.pairingCode}, not ${formatPairingCode(wanted)}: not approved; this may not be the machine in front of you`,
        );
      }
    }
    const copyFrom = stringFlag(args, "copy-from", adminApprove);
    const approval: Approval = { ...(assignment ? { assignment } : {}), ...(copyFrom ? { copyFrom } : {}) };
    const join = await client.approveNodeJoin(joinId, approval, { signal: ctx.signal });
    ctx.out.result(join, [ctx.out.style.green("approved"), ...joinLines(join, ctx.out.style)]);
  },
};

/** `admin reject`. */
export const adminReject: CommandSpec = {
  path: ["admin", "reject"],
  summary: "Reject a join. Its key is refused from then on; the reason is shown to the joiner.",
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: {
    ...API_FLAGS,
    reason: { type: "string", value: "TEXT", description: "why, shown on the console and to the joiner (required)" },
  },
  examples: [
    {
      comment: "a machine nobody expected",
      command: "stratum-join admin reject nj-8w2k4m1p --reason 'unknown serial'",
    },
  ],
  async run(ctx, args) {
    const client = await clientOf(args, adminReject);
    const reason = stringFlag(args, "reason", adminReject, true);
    const join = await client.rejectNodeJoin(args.positionals[0]!, { reason }, { signal: ctx.signal });
    ctx.out.result(join, [ctx.out.style.green("rejected"), ...joinLines(join, ctx.out.style)]);
  },
};

/** `admin retry`. */
export const adminRetry: CommandSpec = {
  path: ["admin", "retry"],
  summary: "Retry a failed join: it is queued for delivery again with the assignment it had.",
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: { ...API_FLAGS },
  examples: [
    {
      comment: "deliver a failed join again, once its cause is fixed",
      command: "stratum-join admin retry nj-8w2k4m1p",
    },
  ],
  async run(ctx, args) {
    const client = await clientOf(args, adminRetry);
    const join = await client.retryNodeJoin(args.positionals[0]!, { signal: ctx.signal });
    ctx.out.result(join, [ctx.out.style.green("retried"), ...joinLines(join, ctx.out.style)]);
  },
};

/** `admin fail`. */
export const adminFail: CommandSpec = {
  path: ["admin", "fail"],
  summary:
    "Fail a running join (delivering or installing) now, e.g. a machine that will never report again: the next join can run.",
  details:
    "The join becomes failed with the reason as its error; its delivery is withdrawn. Retry it (admin retry) once the machine is back. A join in any other state is refused (exit 13, JOIN_STATE_CONFLICT).",
  positionals: [{ name: "JOIN_ID", description: "the join (nj-…)" }],
  flags: {
    ...API_FLAGS,
    reason: { type: "string", value: "TEXT", description: "why, shown on the console and to the joiner (required)" },
  },
  examples: [
    {
      comment: "a machine that lost power for good while installing holds the queue",
      command: "stratum-join admin fail nj-8w2k4m1p --reason 'powered off; reinstalling'",
    },
  ],
  async run(ctx, args) {
    const client = await clientOf(args, adminFail);
    const reason = stringFlag(args, "reason", adminFail, true);
    const join = await client.failNodeJoin(args.positionals[0]!, { reason }, { signal: ctx.signal });
    ctx.out.result(join, [ctx.out.style.green("failed"), ...joinLines(join, ctx.out.style)]);
  },
};
