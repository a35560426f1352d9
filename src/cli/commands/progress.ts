/**
 * `stratum-join progress`: the joiner's half after the delivery, from a shell. Reports one
 * step (and install log lines) to the founder over the session's pinned connection; the
 * founder moves the join on: the first report makes it `installing`, step `join` done makes it
 * `joined`, a failed step makes it `failed`.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/progress.ts`, loaded only when it runs.
 * @module
 */

import { defineFlags, type CommandSpec } from "../args.js";

const progressFlags = defineFlags({
  identity: {
    type: "string",
    value: "DIR",
    description: "the machine directory, as given to register",
    required: true,
  },
  step: {
    type: "string",
    value: "NAME",
    description: "the step: join, upgrade, storage, join/patroni, …",
    required: true,
  },
  status: { type: "string", value: "STATUS", description: "running, done or failed", required: true },
  title: { type: "string", value: "TEXT", description: "what the console calls the step (default: from its name)" },
  message: { type: "string", value: "TEXT", description: "a message for the step, e.g. why it failed" },
  log: { type: "string", value: "FILE", description: "install log lines to send: a file, or - for stdin" },
  "total-steps": {
    type: "string",
    value: "N",
    description: "how many steps the install plans in all, so the console says step 1 of N from the first",
  },
});

/** `progress`. */
export const progress: CommandSpec<typeof progressFlags> = {
  path: ["progress"],
  summary: "Report a step of the install (and its log lines) to the cluster: how a join reaches joined.",
  details: [
    "Reads DIR/session.json and the identity in DIR, as register left them. The first report",
    "of a delivered join makes it installing; step join reported done makes it joined; a failed",
    "step makes it failed (an operator may retry it). Prints the state after the report.",
    "",
    "--log FILE sends the file's lines as install log; --log - reads them from stdin as they",
    "come (sent every 2 s, or 2,000 lines, whichever is first). A running step is reported",
    "before the log, a done or failed one after it, so the log is in before the join ends.",
  ].join("\n"),
  flags: progressFlags,
  examples: [
    {
      comment: "the install is done: the join becomes joined",
      command: "stratum-join progress --identity /var/lib/stratum-join --step join --status done",
    },
    {
      comment: "stream an install script's output while its step runs",
      command:
        "./install.sh 2>&1 | stratum-join progress --identity /var/lib/stratum-join --step storage --status running --log -",
    },
    {
      comment: "a step failed: the join becomes failed, with the message",
      command:
        "stratum-join progress --identity /var/lib/stratum-join --step storage --status failed --message 'no disk for data'",
    },
  ],
  result: "{joinId, state, step: {name, title, status, message?}, logLines, reports, registration}",
  load: async () => (await import("../actions/progress.js")).runProgress,
};
