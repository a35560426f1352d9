/**
 * `stratum-join check`: proves the join code to the join listener (with a throwaway key) and
 * runs the registration's checks on the code and the release, recording nothing.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/check.ts`, loaded only when it runs.
 * @module
 */

import { defineFlags, TARGET_FLAGS, type CommandSpec } from "../args.js";

const checkFlags = defineFlags({
  ...TARGET_FLAGS,
  release: {
    type: "string",
    value: "VERSION",
    description: "the release this machine runs or would be installed from",
    required: true,
  },
  "self-upgrade": { type: "boolean", description: "the machine can upgrade itself to the cluster's release" },
});

/** `check`. */
export const check: CommandSpec<typeof checkFlags> = {
  path: ["check"],
  summary: "Check a join code against the cluster before installing: the code, its listener, and the release.",
  details: [
    "Proves the code to the join listener over TLS 1.3 (OPAQUE, with a throwaway key) and asks",
    "whether a machine on --release may register. Nothing is recorded on the cluster. With",
    "--self-upgrade, an older release within the cluster's upgrade rules is accepted and the",
    "answer names the upgrade.",
  ].join("\n"),
  flags: checkFlags,
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
  result: "{endpoint, caFingerprint, clusterRelease, expiresAt, clockOffsetSeconds, upgrade?}",
  load: async () => (await import("../actions/check.js")).runCheck,
};
