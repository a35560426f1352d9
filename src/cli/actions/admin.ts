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
import type { Approval, Assignment, DiskAssignment, JoinCodeInfo } from "../../types.js";
import { CliError } from "../../errors/cli.js";
import {
  listFlag,
  numberFlag,
  requiredFlag,
  stringFlag,
  type CommandAction,
  type ParsedArgs,
  type StringFlagName,
} from "../args.js";
import { readJsonFile, readTextFile } from "../files.js";
import { formatMoment, table } from "../output.js";
import { printable, printableView } from "../style.js";
import { joinLines, joinListLines } from "./admin-joins.js";
import { isJoinState, JOIN_STATES } from "../../core/join-states.js";
import type {
  adminMint,
  adminCodes,
  adminRevoke,
  adminJoins,
  adminApprove,
  adminReject,
  adminRetry,
  adminFail,
  adminExpire,
} from "../commands/admin.js";

/** How long one admin call may take. */
const CALL_TIMEOUT_MS = 30_000;

/** The admin client of `--api` and the token (`--token-file`, `--token` or `STRATUM_TOKEN`). */
async function clientOf(args: ParsedArgs<typeof adminCodes.flags>): Promise<AdminClient> {
  const baseUrl = requiredFlag(args, "api");
  const tokenFile = stringFlag(args, "token-file");
  // An explicit --token-file wins over a STRATUM_TOKEN inherited from the environment.
  const token =
    tokenFile !== undefined ? (await readTextFile(tokenFile, "token file")).trim() : stringFlag(args, "token");
  if (!token)
    throw new CliError("USAGE", "an admin token is required: --token, --token-file or STRATUM_TOKEN", {
      command: args.command.path.join(" "),
    });
  return createAdminClient({ baseUrl, token, timeoutMs: CALL_TIMEOUT_MS });
}

/** Runs `admin mint`. */
export const runAdminMint: CommandAction<typeof adminMint.flags> = async (ctx, args) => {
  const client = await clientOf(args);
  const endpoint = stringFlag(args, "endpoint");
  const ttlSeconds = numberFlag(args, "ttl");
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
      `minted join code ${shown.joinCode.id} (selector ${shown.joinCode.selector}), expires ${formatMoment(minted.joinCode.expiresAt)}`,
      `  endpoint  ${shown.endpoint}`,
      "",
      `  ${ctx.out.style.yellow(ctx.out.style.bold("SECRET, shown only now:"))}`,
      `  code      ${shown.code}`,
      `  url       ${shown.url}`,
    ])(printableView({ joinCode: minted.joinCode, endpoint: minted.endpoint, code: minted.code, url: minted.url })),
  );
};

/** Runs `admin codes`. */
export const runAdminCodes: CommandAction<typeof adminCodes.flags> = async (ctx, args) => {
  const client = await clientOf(args);
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
              formatMoment(c.expiresAt),
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
export const runAdminRevoke: CommandAction<typeof adminRevoke.flags> = async (ctx, args) => {
  const client = await clientOf(args);
  const code = await client.revokeJoinCode(args.positionals[0]!, { signal: ctx.signal });
  const shown = printableView(code);
  ctx.out.result(code, `revoked ${shown.id} (selector ${shown.selector}): ${shown.state}`);
};

/** Runs `admin joins`. */
export const runAdminJoins: CommandAction<typeof adminJoins.flags> = async (ctx, args) => {
  const client = await clientOf(args);
  const joinId = args.positionals[0];
  if (joinId !== undefined) {
    const join = await client.getNodeJoin(joinId, { signal: ctx.signal });
    ctx.out.result(join, joinLines(join, ctx.out.style));
    return;
  }
  const state = stringFlag(args, "state");
  if (state !== undefined && !isJoinState(state)) {
    throw new CliError("USAGE", `--state takes one of ${JOIN_STATES.join(", ")}`, { command: "admin joins" });
  }
  const list = await client.listNodeJoins({ signal: ctx.signal });
  const items = state === undefined ? list.items : list.items.filter((j) => j.state === state);
  ctx.out.result(
    { ...list, items },
    joinListLines(items, list.capacity, { style: ctx.out.style, width: ctx.out.resultWidth }),
  );
  // A machine whose clock is off joins all the same (docs/protocol.md#founder-time); the
  // operator is told, on stderr so a --json document stays whole.
  for (const j of printableView(items)) {
    const clock = clockWarning(j.inventory?.clock);
    if (clock) ctx.out.warn(`${j.id}${j.hostname ? ` (${j.hostname})` : ""}: ${clock}`);
  }
};

/** The disk roles `--disk KEY=ROLE` takes (spec: DiskAssignment.role). */
const DISK_ROLES: readonly DiskAssignment["role"][] = ["compute", "ceph-osd", "unused"];

/**
 * The assignment with the field flags over it: `--name`, `--role`, `--rack`, `--az`, the
 * management link (`--mgmt-interface`, `--address`, `--gateway`), and each `--disk KEY=ROLE`
 * (replacing the file's entry for that key), `--wipe KEY` as its typed confirmation.
 */
function withFlags(base: Assignment, args: ParsedArgs<typeof adminApprove.flags>): Assignment {
  const usage = (message: string) => new CliError("USAGE", message, { command: "admin approve" });
  const a: Assignment = { ...base };
  const flag = (name: StringFlagName<typeof adminApprove.flags>) => stringFlag(args, name);
  const name = flag("name");
  if (name !== undefined) a.name = name;
  const role = flag("role");
  // Sent as typed: the founder's refusal at `role` names the roles it takes (capacity.roles).
  if (role !== undefined) a.role = role as Assignment["role"];
  const rack = flag("rack");
  if (rack !== undefined) a.rack = rack;
  const az = flag("az");
  if (az !== undefined) a.az = az;
  const mgmt = { ...(a.mgmt ?? {}) };
  const [iface, address, gateway] = [flag("mgmt-interface"), flag("address"), flag("gateway")];
  if (iface !== undefined) mgmt.interface = iface;
  if (address !== undefined) mgmt.address = address;
  if (gateway !== undefined) mgmt.gateway = gateway;
  if (Object.keys(mgmt).length) a.mgmt = mgmt;
  const disks = [...(a.disks ?? [])];
  for (const spec of listFlag(args, "disk")) {
    const at = spec.lastIndexOf("=");
    const key = spec.slice(0, at);
    const diskRole = spec.slice(at + 1) as DiskAssignment["role"];
    if (at <= 0 || !DISK_ROLES.includes(diskRole))
      throw usage(`--disk takes KEY=ROLE, ROLE one of ${DISK_ROLES.join(", ")} (KEY: the disk's WWN or by-id path)`);
    const i = disks.findIndex((d) => d.key === key);
    const entry: DiskAssignment = { ...(i >= 0 ? disks[i] : {}), key, role: diskRole };
    if (i >= 0) disks[i] = entry;
    else disks.push(entry);
  }
  for (const key of listFlag(args, "wipe")) {
    const disk = disks.find((d) => d.key === key);
    if (!disk) throw usage(`--wipe ${key} names no disk given a role: add --disk ${key}=ROLE`);
    disk.confirm = key;
  }
  if (disks.length) a.disks = disks;
  return a;
}

/** Runs `admin approve`. */
export const runAdminApprove: CommandAction<typeof adminApprove.flags> = async (ctx, args) => {
  const client = await clientOf(args);
  const joinId = args.positionals[0]!;
  const file = stringFlag(args, "assignment");
  let assignment: Assignment | undefined;
  if (file !== undefined) {
    const value = await readJsonFile(file, "assignment");
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new CliError("FILE_ERROR", `the assignment ${file} is not a JSON object`);
    assignment = value as Assignment;
  }
  const expected = stringFlag(args, "pairing-code");
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
  const copyFrom = stringFlag(args, "copy-from");
  const edited = withFlags(assignment ?? {}, args);
  const approval: Approval = {
    ...(Object.keys(edited).length ? { assignment: edited } : {}),
    ...(copyFrom ? { copyFrom } : {}),
  };
  const join = await client.approveNodeJoin(joinId, approval, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("approved"), ...joinLines(join, ctx.out.style)]);
};

/** Runs `admin reject`. */
export const runAdminReject: CommandAction<typeof adminReject.flags> = async (ctx, args) => {
  const client = await clientOf(args);
  const reason = requiredFlag(args, "reason");
  const join = await client.rejectNodeJoin(args.positionals[0]!, { reason }, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("rejected"), ...joinLines(join, ctx.out.style)]);
};

/** Runs `admin fail`. */
export const runAdminFail: CommandAction<typeof adminFail.flags> = async (ctx, args) => {
  const client = await clientOf(args);
  const reason = requiredFlag(args, "reason");
  const join = await client.failNodeJoin(args.positionals[0]!, { reason }, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("failed"), ...joinLines(join, ctx.out.style)]);
};

/** Runs `admin expire`. */
export const runAdminExpire: CommandAction<typeof adminExpire.flags> = async (ctx, args) => {
  const client = await clientOf(args);
  const join = await client.expireNodeJoin(args.positionals[0]!, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("expired"), ...joinLines(join, ctx.out.style)]);
};

/** Runs `admin retry`. */
export const runAdminRetry: CommandAction<typeof adminRetry.flags> = async (ctx, args) => {
  const client = await clientOf(args);
  const join = await client.retryNodeJoin(args.positionals[0]!, { signal: ctx.signal });
  ctx.out.result(join, [ctx.out.style.green("retried"), ...joinLines(join, ctx.out.style)]);
};
