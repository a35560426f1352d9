/**
 * What a person does after an error: one or two lines under every human error message, by the
 * error's code first and its exit class otherwise. A script reads `error.code` and the exit
 * code instead; these lines are not part of the `--json` document.
 * @module
 */

import type { ErrorDocument } from "./output.js";

/** Where the error happened, for a next step that names the right command. */
export interface NextStepContext {
  /** The command that failed (`admin approve`), or "" before one was found. */
  command: string;
}

const TOKEN_HINT =
  "give the admin token with --token-file FILE or the STRATUM_TOKEN environment variable (a --token on the command line is visible to other local users)";

// By error code: where the code alone says more than its exit class.
const BY_CODE: Record<string, (doc: ErrorDocument, ctx: NextStepContext) => string | undefined> = {
  UNAUTHORIZED: () => `The admin API refused the token: check it, and ${TOKEN_HINT}.`,
  FORBIDDEN: () => `The token lacks this permission: use one that has it; ${TOKEN_HINT}.`,
  JOIN_CODE_MALFORMED: () =>
    "Check the code as it was given to you: case, dashes and spaces do not matter; O reads as 0, I and L as 1.",
  RELEASE_MISMATCH: () =>
    "Install the release the cluster runs (details.isoPath), or let the machine upgrade itself: register --self-upgrade --trusted-key FILE.",
  REGISTRATION_REJECTED: () =>
    "An operator rejected this machine (the reason is above): ask them before registering it again.",
  REGISTRATION_ENDED: () =>
    "See the registration with 'stratum-join status --identity DIR'; an operator can retry a failed join (stratum-join admin retry JOIN_ID).",
  STORAGE_UNAVAILABLE: () => "The founder cannot write (its disk is full): free space there, then run this again.",
  JOIN_CODE_BUSY: (doc) =>
    `Another machine is proving this code right now: run this again${typeof doc.retryAfter === "number" ? ` in ${doc.retryAfter} s` : " in a few seconds"}.`,
  JOIN_STATE_CONFLICT: (_doc, ctx) =>
    ctx.command.startsWith("admin")
      ? "Look at the join's state (stratum-join admin joins JOIN_ID): this needs another one."
      : "Look at the registration's state (stratum-join status --identity DIR): this needs another one.",
  STILL_WAITING: () =>
    "The cluster answers; the machine is waiting for an operator (or its turn, as said above). Run the same command again (the same --identity picks the registration up), or give a longer --timeout.",
  RATE_LIMITED: (doc) =>
    typeof (doc.details as { maxWaiting?: unknown } | undefined)?.maxWaiting === "number"
      ? `The cluster's waiting slots are full: ask an operator to approve, reject or expire waiting machines (stratum-join admin joins), then run this again${typeof doc.retryAfter === "number" ? ` (in ${doc.retryAfter} s or later)` : ""}.`
      : undefined,
  IDENTITY_MISMATCH: () => "Use the --identity directory this machine registered with.",
  JOIN_SESSION_MISSING: () => "Register first: stratum-join register --identity DIR …",
  SECRET_DESTINATION_MISSING: (_doc, ctx) =>
    `Write a --secrets FILE naming a destination for each field listed, then run 'stratum-join ${ctx.command === "status" ? "status --write-delivery" : ctx.command || "register"} --secrets FILE' again (see --help).`,
  SECRET_DESTINATION_INVALID: () => "Fix that field's destination in the --secrets file and run this again.",
  SECRET_DESTINATION_FAILED: () =>
    "Fix the destination named above (its directory, the command), then write the delivery again: stratum-join status --identity DIR --write-delivery --secrets FILE.",
  TPM_UNAVAILABLE: () =>
    'Check the TPM: /dev/tpmrm0 (or TPM2TOOLS_TCTI) and tpm2-tools. Without a TPM, a tpm destination may allow plaintext by name: "withoutTpm": "plaintext".',
  TPM_FAILED: () =>
    "Only the TPM that sealed the file unseals it: run this on that machine, with its TPM as it was when the delivery was written.",
  INVENTORY_FAILED: () =>
    "Give the inventory with --inventory FILE, or send none with --no-inventory (the approval then needs an assignment naming the NICs).",
  INVENTORY_UNSUPPORTED: () =>
    "Give the inventory with --inventory FILE, or send none with --no-inventory (the approval then needs an assignment naming the NICs).",
};

// By exit code, for everything else.
const BY_EXIT: Record<number, (doc: ErrorDocument, ctx: NextStepContext) => string | undefined> = {
  1: () =>
    "This was not expected: report it, with the request id if one is shown; STRATUM_DEBUG=1 prints the stack trace.",
  2: (doc, ctx) =>
    /token/i.test(doc.message) && ctx.command.startsWith("admin")
      ? `${TOKEN_HINT[0]!.toUpperCase()}${TOKEN_HINT.slice(1)}.`
      : undefined,
  3: () => "Check what was typed; nothing was sent, so a retry costs nothing.",
  4: () =>
    "Check the code with whoever minted it, and that the endpoint is the cluster's join listener; repeated wrong tries burn the code.",
  5: () => "Ask an operator for a new join code (stratum-join admin mint) and run this again with it.",
  8: (doc) =>
    typeof doc.retryAfter === "number" ? `Run this again in ${doc.retryAfter} s.` : "Run this again in a minute.",
  9: (_doc, ctx) =>
    ctx.command.startsWith("admin")
      ? "Check that the founder's admin API runs at the address named above (--api or STRATUM_API) and that this machine reaches it, then run this again."
      : "Check that this machine reaches the host named above (address, port, firewall, routes), then run this again; a wait picks up where it stopped.",
  10: () =>
    "Someone may be on the line between this machine and the cluster. Do not approve this machine, do not retry blindly: check the network path first.",
  11: () => "Never install it. Check that --trusted-key names the cluster's release keys, and fetch the release again.",
  13: (doc) =>
    Array.isArray(doc.errors) && doc.errors.length > 0
      ? "Fix the fields listed above and run this again."
      : "Fix the input, or wait until the join is in a state that allows this.",
  14: (_doc, ctx) =>
    ctx.command.startsWith("admin")
      ? "List what there is: stratum-join admin joins, or stratum-join admin codes."
      : "Check that --identity is the directory this machine registered with.",
  15: () => "Check the file or directory named above: the path, its permissions, free space.",
  16: () => "Run the same command again: the download resumes from its .partial files.",
  17: () => "Run this command with Node 20.19 or later (or Bun): npx stratum-join …",
};

// A refusal from a listener not proven at the time (docs/protocol.md#unproven): whatever it
// claimed, the person is told that first, and only the claim's own class of next step follows.
const UNPROVEN =
  "The join listener had not proven it is the cluster's when it refused: this may not be the cluster speaking, so nothing it said is advice. If it persists, check the network path to the join listener.";

/** The lines that tell a person what to do about `doc` (none for an interruption). */
export function nextSteps(doc: ErrorDocument, ctx: NextStepContext): string[] {
  const lines: string[] = [];
  if (doc.proven === false) lines.push(UNPROVEN);
  const specific =
    (doc.proven === false ? undefined : BY_CODE[doc.code]?.(doc, ctx)) ?? BY_EXIT[doc.exitCode]?.(doc, ctx);
  if (specific) lines.push(specific);
  // Exit 10 always carries the warning, even when a code has its own line above.
  if (doc.exitCode === 10 && BY_CODE[doc.code]) lines.push(BY_EXIT[10]!(doc, ctx)!);
  if (doc.exitCode === 2) lines.push(`Run 'stratum-join ${ctx.command ? `${ctx.command} ` : ""}--help' for usage.`);
  return lines;
}
