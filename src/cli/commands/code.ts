/**
 * `stratum-join code check CODE`: the join code's offline check, the same one every joiner
 * call makes before touching the network.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/code.ts`, loaded only when it runs.
 * @module
 */

import { defineFlags, type CommandSpec } from "../args.js";

const codeCheckFlags = defineFlags({});

/** `code check`. */
export const codeCheck: CommandSpec<typeof codeCheckFlags> = {
  path: ["code", "check"],
  summary: "Check a join code (or join URL) offline: its symbols and check symbol. Nothing is sent.",
  details: [
    "Case, dashes and spaces do not matter; O reads as 0, I and L as 1. A mistyped symbol is",
    "caught by the check symbol; when swapping two adjacent symbols makes the code valid, the",
    "error suggests that code. The code is never echoed back: it is a secret.",
  ].join("\n"),
  positionals: [
    { name: "CODE", description: "the join code XXXX-XXXX-XXX, or a join URL stratum-join://HOST/XXXX-XXXX-XXX" },
  ],
  flags: codeCheckFlags,
  examples: [
    {
      comment: "a code read out over the phone, before typing it into the installer",
      command: "stratum-join code check 4F7K-2Q9M-ABD",
    },
    {
      comment: "a join URL, with the listener it names",
      command: "stratum-join code check stratum-join://192.0.2.240/4F7K-2Q9M-ABD",
    },
  ],
  result: "{valid, selector, endpoint?}",
  load: async () => (await import("../actions/code.js")).runCodeCheck,
};
