/**
 * `stratum-join admin …`: the founder's side for scripts: mint, list and revoke join codes;
 * list, approve, reject and retry joins. The token comes from `--token`, `--token-file` or
 * `STRATUM_TOKEN` and is only ever handed to the admin client: no output includes it, and the
 * SDK's errors carry no request header.
 *
 * The command's declaration (words, flags, help) is `src/cli/commands/admin.ts`; this module is
 * loaded only when the command runs.
 * @module
 */

import { createAdminClient, type AdminClient } from "../../admin/index.js";
import { clockWarning } from "../../core/clock.js";
import { parsePairingCode, formatPairingCode } from "../../core/pairing.js";
import { JoinProtocolError } from "../../errors/index.js";
import type { Approval, Assignment, JoinCodeInfo, NodeJoin } from "../../types.js";
import { CliError, numberFlag, stringFlag, type ParsedArgs, type CommandAction, type CommandSpec } from "../args.js";
import { readJsonFile, readTextFile } from "../files.js";
import { fingerprintLines, table } from "../output.js";
import { printable, printableView, type Style } from "../style.js";
import { isJoinState, JOIN_STATES } from "../../core/join-states.js";
import {
  adminMint,
  adminCodes,
  adminRevoke,
  adminJoins,
  adminApprove,
  adminReject,
  adminRetry,
  adminFail,
} from "../commands/admin.js";

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

/** The lines of one join, for a person: every string of it is a registrant's or the founder's, made printable. */
function joinLines(unsafeJoin: NodeJoin, style: Style): string[] {
  const join = printableView(unsafeJoin);
  const lines = [
    `${style.bold(join.id)}  ${style.state(join.state)}${join.stalled ? style.yellow(" (stalled)") : ""}`,
    `  pairing code   ${join.pairingCode}`,
  ];
  const add = (label: string, value: unknown) => {
    if (value !== undefined && value !== null && value !== "") lines.push(`  ${label.padEnd(14)} ${String(value)}`);
  };
  add("hostname", join.hostname);
  const clock = clockWarning(join.inventory?.clock);
  if (clock) lines.push(`  ${"clock".padEnd(14)} ${style.yellow(clock)}`);
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

/** Runs `admin mint`. */
export const runAdminMint: CommandAction = async (ctx, args) => {
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
    ((shown) => [
      `minted join code ${shown.joinCode.id} (selector ${shown.joinCode.selector}), expires ${shown.joinCode.expiresAt}`,
      `  endpoint  ${shown.endpoint}`,
      "",
      `  ${ctx.out.style.yellow(ctx.out.style.bold("SECRET, shown only now:"))}`,
      `  code      ${shown.code}`,
      `  url       ${shown.url}`,
    ])(printableView({ joinCode: minted.joinCode, endpoint: minted.endpoint, code: minted.code, url: minted.url })),
  );
};

/** Runs `admin codes`. */
export const runAdminCodes: CommandAction = async (ctx, args) => {
  const client = await clientOf(args, adminCodes);
  const list = await client.listJoinCodes({ signal: ctx.signal });
  ctx.out.result(
    list,
    list.items.length === 0
      ? "no join codes"
      : [
          ...table(
            ["ID", "SELECTOR", "STATE", "ENDPOINT", "ATTEMPTS", "REGISTRATIONS", "EXPIRES"],
            list.items.map((c) => [
              c.id,
              c.selector,
              c.revokedBy === "system:too-many-attempts" ? "burned" : c.state,
              c.endpoint,
              String(c.attempts ?? 0),
              String(c.registrations ?? 0),
              c.expiresAt,
            ]),
          ),
          ...attemptLines(list.items),
        ],
  );
};

/**
 * Where the attempts of each code that has some came from: who is guessing at it, or burned
 * it (docs/protocol.md#attempts), so the operator can look at those addresses.
 */
function attemptLines(codes: readonly JoinCodeInfo[]): string[] {
  const lines = printableView(codes)
    .filter((c) => (c.attemptSources?.length ?? 0) > 0)
    .map((c) => {
      const from = c.attemptSources!.map((s) => `${s.source} (${s.attempts}, last ${s.lastAttemptAt})`).join(", ");
      return `  ${c.id}: ${c.attempts ?? 0} attempts that did not prove it, from ${from}`;
    });
  return lines.length > 0 ? ["", "attempts:", ...lines] : [];
}

/** Runs `admin revoke`. */
export const runAdminRevoke: CommandAction = async (ctx, args) => {
  const client = await clientOf(args, adminRevoke);
  const code = await client.revokeJoinCode(args.positionals[0]!, { signal: ctx.signal });
  const shown = printableView(code);
  ctx.out.result(code, `revoked ${shown.id} (selector ${shown.selector}): ${shown.state}`);
};

/** Runs `admin joins`. */
export const runAdminJoins: CommandAction = async (ctx, args) => {
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
  // A machine whose clock is off joins all the same (docs/protocol.md#founder-time); the
  // operator is told, on stderr so a --json document stays whole.
  for (const j of printableView(items)) {
    const clock = clockWarning(j.inventory?.clock);
    if (clock) ctx.out.warn(`${j.id}${j.hostname ? ` (${j.hostname})` : ""}: ${clock}`);
  }
};

/** Runs `admin approve`. */
export const runAdminApprove: CommandAction = async (ctx, args) => {
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
      // The founder's code is never repeated: shown here, it would be the one to copy, and the
      // check would prove nothing. The machine shows its own code; that is the one to compare.
      throw new JoinProtocolError(
        "PAIRING_MISMATCH",
        `the pairing code given, ${formatPairingCode(wanted)}, does not match join ${printable(joinId)}: not approved. Read the code again on the machine's own screen (register shows it in a box; status --identity DIR prints it) and compare; if it still differs, this join may not be the machine in front of you.`,
      );
    }
  }
  const copyFrom = stringFlag(args, "copy-from", adminApprove);
  const approval: Approval = { ...(assignment ? { assignment } : {}), ...(copyFrom ? { copyFrom } : {}) };
  const join = await client.approveNodeJoin(joinId, approval, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("approved"), ...joinLines(join, ctx.out.style)]);
};

/** Runs `admin reject`. */
export const runAdminReject: CommandAction = async (ctx, args) => {
  const client = await clientOf(args, adminReject);
  const reason = stringFlag(args, "reason", adminReject, true);
  const join = await client.rejectNodeJoin(args.positionals[0]!, { reason }, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("rejected"), ...joinLines(join, ctx.out.style)]);
};

/** Runs `admin fail`. */
export const runAdminFail: CommandAction = async (ctx, args) => {
  const client = await clientOf(args, adminFail);
  const reason = stringFlag(args, "reason", adminFail, true);
  const join = await client.failNodeJoin(args.positionals[0]!, { reason }, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("failed"), ...joinLines(join, ctx.out.style)]);
};

/** Runs `admin retry`. */
export const runAdminRetry: CommandAction = async (ctx, args) => {
  const client = await clientOf(args, adminRetry);
  const join = await client.retryNodeJoin(args.positionals[0]!, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("retried"), ...joinLines(join, ctx.out.style)]);
};
