/**
 * `stratum-join status`: the registration as the cluster sees it now, from the saved join
 * session and the machine identity: one GET over a connection pinned to the session's CA and
 * the machine's key. No join code is needed.
 *
 * The command's declaration (words, flags, help) is `src/cli/commands/status.ts`; this module is
 * loaded only when the command runs.
 * @module
 */

import type { WrittenDelivery } from "../../node/delivery.js";
import { CliError } from "../../errors/cli.js";
import { requiredFlag, stringFlag, type CommandAction } from "../args.js";
import { readSecretsFlag, writeDeliveryOf } from "../delivery.js";
import { openMachineDir, readSession } from "../files.js";
import { getRegistration } from "../../node/registration.js";
import { describeState } from "../joiner-steps.js";
import { fingerprintLines } from "../output.js";
import type { status } from "../commands/status.js";
import { printable } from "../style.js";

/** Runs `status`. */
export const runStatus: CommandAction<typeof status.flags> = async (ctx, args) => {
  const dir = requiredFlag(args, "identity");
  const writing = args.values["write-delivery"] === true;
  if (!writing && stringFlag(args, "secrets") !== undefined)
    throw new CliError("USAGE", "--secrets goes with --write-delivery", { command: "status" });
  const secrets = await readSecretsFlag(args, dir);
  const session = await readSession(dir);
  const { identity } = await openMachineDir(dir, { create: false, warn: (text) => ctx.out.warn(text) });
  const registration = await getRegistration(session, identity, { signal: ctx.signal });
  let written: WrittenDelivery | undefined;
  if (registration.delivery && writing) written = await writeDeliveryOf(ctx, dir, registration.delivery, secrets);
  const { delivery, ...view } = registration;
  const lines = [
    `${session.joinId} at ${session.endpoint}: ${describeState(registration, ctx.out.style)}`,
    `  pairing code  ${printable(registration.pairingCode)}`,
    `  release       ${session.release}`,
    ...fingerprintLines("  cluster CA", session.caFingerprint, 16),
  ];
  if (delivery)
    lines.push(
      `  delivery      node ${printable(delivery.nodeId)}${written ? `, written to ${written.dir}` : " (use --write-delivery to write it)"}`,
    );
  ctx.out.result(
    {
      joinId: session.joinId,
      endpoint: session.endpoint,
      caFingerprint: session.caFingerprint,
      keyFingerprint: session.keyFingerprint,
      release: session.release,
      state: registration.state,
      pairingCode: registration.pairingCode,
      registration: view,
      ...(delivery
        ? {
            delivery: {
              nodeId: delivery.nodeId,
              ...(written ? { dir: written.dir, files: written.files, secrets: written.secrets } : {}),
            },
          }
        : {}),
    },
    lines,
    // The delivery's file paths and each secret's destination, keyed by role and field: paths
    // and names, not secrets.
    { local: ["delivery"] },
  );
};
