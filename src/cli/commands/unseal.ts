/**
 * `stratum-join unseal FILE`: a secret sealed to this machine's TPM by a `{"tpm": FILE}`
 * destination, unsealed and printed, for the boot-time service that unseals OpenBao.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/unseal.ts`, loaded only when it runs.
 * @module
 */

import { defineFlags, type CommandSpec } from "../args.js";

const unsealFlags = defineFlags({});

/** `unseal`. */
export const unseal: CommandSpec<typeof unsealFlags> = {
  path: ["unseal"],
  summary: "Unseal a secret sealed to this machine's TPM (the OpenBao unseal key) and print it on stdout.",
  details: [
    'FILE is what a {"tpm": FILE} destination of --secrets wrote when the delivery arrived. Only',
    "this machine's TPM unseals it: on another machine, or after the TPM was cleared, it fails",
    "(exit 15, TPM_FAILED). The TPM is TPM2TOOLS_TCTI's when set, else /dev/tpmrm0 (tpm2-tools",
    "must be installed). The secret is printed on stdout, followed by a newline, and nowhere",
    "else; pipe it into the program that needs it rather than into a file. A plaintext file of",
    "the withoutTpm fallback is printed as it is, with a warning.",
  ].join("\n"),
  positionals: [{ name: "FILE", description: "the sealed file, e.g. /var/lib/stratum-join/openbao-unseal.sealed" }],
  flags: unsealFlags,
  examples: [
    {
      comment: "at boot: the unseal key straight into the local OpenBao (its /v1/sys/unseal), never in argv",
      command:
        "stratum-join unseal /var/lib/stratum-join/openbao-unseal.sealed | jq -Rc '{key: .}' | curl -sf --data @- http://127.0.0.1:8200/v1/sys/unseal",
    },
  ],
  result: '{field, sealed, value, secret: ["value"]}',
  load: async () => (await import("../actions/unseal.js")).runUnseal,
};
