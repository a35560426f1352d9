/**
 * `stratum-join status`: the registration as the cluster sees it now, from the saved join
 * session and the machine identity: one GET over a connection pinned to the session's CA and
 * the machine's key. No join code is needed.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/status.ts`, loaded only when it runs.
 * @module
 */

import { defineFlags, SECRETS_FLAG, type CommandSpec } from "../args.js";

const statusFlags = defineFlags({
  identity: {
    type: "string",
    value: "DIR",
    description: "the machine directory, as given to register",
    required: true,
  },
  "write-delivery": { type: "boolean", description: "write the delivery, if the view carries one, to DIR/delivery" },
  secrets: SECRETS_FLAG,
});

/** `status`. */
export const status: CommandSpec<typeof statusFlags> = {
  path: ["status"],
  summary: "Show this machine's registration: one GET of its view, pinned to the saved session and key.",
  details: [
    "Reads DIR/session.json and the identity in DIR (as register left them). Retries nothing:",
    "a listener that cannot be reached is exit 9. With --write-delivery, a delivery the view",
    "carries is written: its public files and the node key to DIR/delivery (0600), each secret",
    "where --secrets FILE says (as register --wait does).",
  ].join("\n"),
  flags: statusFlags,
  examples: [
    { comment: "where the registration stands", command: "stratum-join status --identity /var/lib/stratum-join" },
    {
      comment: "write the delivery the view carries",
      command: "stratum-join status --identity /var/lib/stratum-join --write-delivery --secrets secrets.json",
    },
  ],
  result:
    "{joinId, endpoint, caFingerprint, keyFingerprint, release, state, pairingCode, registration, delivery?: {nodeId, dir?, files?, secrets?}}",
  load: async () => (await import("../actions/status.js")).runStatus,
};
