/**
 * `stratum-join check`: proves the join code to the join listener (with a throwaway key) and
 * runs the registration's checks on the code and the release, recording nothing.
 * @module
 */

import { checkJoinCode } from "../../node/joiner.js";
import { stringFlag, type CommandSpec } from "../args.js";
import { joinTargetOf, TARGET_FLAGS } from "../joiner.js";
import { fingerprintLines } from "../output.js";

/** `check`. */
export const check: CommandSpec = {
  path: ["check"],
  summary: "Check a join code against the cluster before installing: the code, its listener, and the release.",
  details: [
    "Proves the code to the join listener over TLS 1.3 (OPAQUE, with a throwaway key) and asks",
    "whether a machine on --release may register. Nothing is recorded on the cluster. With",
    "--self-upgrade, an older release within the cluster's upgrade rules is accepted and the",
    "answer names the upgrade.",
  ].join("\n"),
  flags: {
    ...TARGET_FLAGS,
    release: {
      type: "string",
      value: "VERSION",
      description: "the release this machine runs or would be installed from (required)",
    },
    "self-upgrade": { type: "boolean", description: "the machine can upgrade itself to the cluster's release" },
  },
  examples: [
    {
      comment: "prove the code and ask whether this release may register",
      command: "STRATUM_JOIN_URL=stratum-join://192.0.2.240/4F7K-2Q9M-ABD stratum-join check --release 0.6.0",
    },
    {
      comment: "an older installer that can upgrade itself",
      command: "stratum-join check --release 0.5.0 --self-upgrade",
    },
  ],
  async run(ctx, args) {
    const target = joinTargetOf(args, check);
    const release = stringFlag(args, "release", check, true);
    const result = await checkJoinCode({
      ...target,
      release,
      selfUpgrade: args.values["self-upgrade"] === true,
      signal: ctx.signal,
    });
    const lines = [
      `${ctx.out.style.green("ok:")} the join listener at ${result.endpoint} proved the code`,
      ...fingerprintLines("  cluster CA", result.caFingerprint, 19),
      `  cluster release  ${result.clusterRelease}`,
      `  code expires     ${result.expiresAt}`,
    ];
    if (result.upgrade) {
      lines.push(
        `  upgrade          ${result.upgrade.from} → ${result.upgrade.to} (${result.upgrade.source ? `from ${result.upgrade.source}` : result.upgrade.served ? "served by the founder" : "no source named"})`,
      );
    }
    ctx.out.result(
      {
        endpoint: result.endpoint,
        caFingerprint: result.caFingerprint,
        clusterRelease: result.clusterRelease,
        expiresAt: result.expiresAt,
        ...(result.upgrade ? { upgrade: result.upgrade } : {}),
      },
      lines,
    );
  },
};
