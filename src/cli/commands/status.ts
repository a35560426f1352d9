/**
 * `stratum-join status`: the registration as the cluster sees it now, from the saved join
 * session and the machine identity: one GET over a connection pinned to the session's CA and
 * the machine's key. No join code is needed.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/status.ts`, loaded only when it runs.
 * @module
 */

import type { CommandSpec } from "../args.js";

/** `status`. */
export const status: CommandSpec = {
  path: ["status"],
  summary: "Show this machine's registration: one GET of its view, pinned to the saved session and key.",
  details: [
    "Reads DIR/session.json and the identity in DIR (as register left them). Retries nothing:",
    "a listener that cannot be reached is exit 9. With --write-delivery, a delivery the view",
    "carries is written to DIR/delivery (all files 0600).",
  ].join("\n"),
  flags: {
    identity: { type: "string", value: "DIR", description: "the machine's directory, as given to register (required)" },
    "write-delivery": { type: "boolean", description: "write the delivery, if the view carries one, to DIR/delivery" },
  },
  examples: [
    { comment: "where the registration stands", command: "stratum-join status --identity /var/lib/stratum-join" },
    {
      comment: "write the delivery the view carries",
      command: "stratum-join status --identity /var/lib/stratum-join --write-delivery",
    },
  ],
  load: async () => (await import("../actions/status.js")).runStatus,
};
