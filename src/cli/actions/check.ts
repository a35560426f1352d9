/**
 * `stratum-join check`: proves the join code to the join listener (with a throwaway key) and
 * runs the registration's checks on the code and the release, recording nothing.
 *
 * The command's declaration (words, flags, help) is `src/cli/commands/check.ts`; this module is
 * loaded only when the command runs.
 * @module
 */

import { clockIsOff } from "../../core/clock.js";
import { checkJoinCode } from "../../node/join-calls.js";
import { requiredFlag, type CommandAction } from "../args.js";
import { joinTargetOf, retryNotice } from "../joiner-steps.js";
import { clockLine, fingerprintLines, formatMoment } from "../output.js";
import type { check } from "../commands/check.js";
import { printableView } from "../style.js";

/** Runs `check`. */
export const runCheck: CommandAction<typeof check.flags> = async (ctx, args) => {
  const target = joinTargetOf(args);
  const release = requiredFlag(args, "release");
  const result = await checkJoinCode({
    ...target,
    release,
    selfUpgrade: args.values["self-upgrade"] === true,
    signal: ctx.signal,
    onRetry: retryNotice(ctx),
  });
  const shown = printableView({ ...result });
  const lines = [
    `${ctx.out.style.green("ok:")} the join listener at ${shown.endpoint} proved the code`,
    ...fingerprintLines("  cluster CA", shown.caFingerprint, 19),
    `  cluster release  ${shown.clusterRelease}`,
    // Counted on the founder's clock: this machine's may be off.
    `  code expires     ${formatMoment(result.expiresAt, Date.now() + result.clockOffsetMs)}`,
  ];
  if (shown.upgrade) {
    lines.push(
      `  upgrade          ${shown.upgrade.from} → ${shown.upgrade.to} (${shown.upgrade.source ? `from ${shown.upgrade.source}` : shown.upgrade.served ? "served by the founder" : "no source named"})`,
    );
  }
  ctx.out.result(
    {
      endpoint: result.endpoint,
      caFingerprint: result.caFingerprint,
      clusterRelease: result.clusterRelease,
      expiresAt: result.expiresAt,
      clockOffsetSeconds: Math.round(result.clockOffsetMs / 1000),
      ...(result.upgrade ? { upgrade: result.upgrade } : {}),
    },
    lines,
  );
  if (clockIsOff(result.clockOffsetMs / 1000)) ctx.out.warn(clockLine(result.clockOffsetMs));
};
