/**
 * `stratum-join unseal FILE`: the secret sealed to this machine's TPM, on stdout.
 *
 * The command's declaration (words, flags, help) is `src/cli/commands/unseal.ts`; this module is
 * loaded only when the command runs.
 * @module
 */

import { unsealSecret } from "../../node/tpm.js";
import type { CommandAction } from "../args.js";
import type { unseal } from "../commands/unseal.js";

/** Runs `unseal`. */
export const runUnseal: CommandAction<typeof unseal.flags> = async (ctx, args) => {
  const file = args.positionals[0]!;
  const tcti = ctx.env.TPM2TOOLS_TCTI;
  const secret = await unsealSecret(file, { signal: ctx.signal, ...(tcti ? { tcti } : {}) });
  if (!secret.sealed)
    ctx.out.warn(`${file} is not sealed: its installer wrote ${secret.field} in plaintext, for want of a TPM`);
  // Printing the secret is this command's purpose; the document marks it, as `admin mint` does.
  ctx.out.resultWithSecret(
    { field: secret.field, sealed: secret.sealed, value: secret.value, secret: ["value"] },
    secret.value,
  );
};
