/**
 * `stratum-join code check CODE`: the join code's offline check, the same one every joiner
 * call makes before touching the network.
 *
 * The command's declaration (words, flags, help) is `src/cli/commands/code.ts`; this module is
 * loaded only when the command runs.
 * @module
 */

import { parseJoinCode } from "../../core/join-code.js";
import { parseJoinUrl } from "../../core/join-url.js";
import type { CommandAction } from "../args.js";
import type { codeCheck } from "../commands/code.js";

/** Runs `code check`. */
export const runCodeCheck: CommandAction<typeof codeCheck.flags> = async (ctx, args) => {
  const input = args.positionals[0]!;
  const isUrl = /^\s*stratum-join:\/\//i.test(input);
  const parsed = isUrl ? parseJoinUrl(input) : undefined;
  const code = parsed ? parsed.code : parseJoinCode(input);
  // Only the selector (10 public bits) is shown: the person has the code in front of them.
  ctx.out.result(
    { valid: true, selector: code.selector, ...(parsed ? { endpoint: parsed.endpoint } : {}) },
    `${ctx.out.style.green("ok:")} the join code is well formed (selector ${code.selector}${parsed ? `, listener ${parsed.endpoint}` : ""})`,
  );
};
