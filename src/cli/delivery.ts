/**
 * Writing a delivery from the command line (`register`, `status --write-delivery`, the wait of
 * `register --wait`): the secrets go where `--secrets FILE` says, a JSON object of field →
 * destination, read and checked before the network is touched. Without it a delivery that
 * carries a secret is refused before anything is written, naming the fields and the flag.
 * @module
 */

import { join } from "node:path";
import { SecretDestinationError } from "../errors/index.js";
import { writeDelivery, type WrittenDelivery } from "../node/delivery.js";
import { checkDestinations, type PlacedSecret, type SecretDestinations } from "../node/secret-destinations.js";
import type { Delivery } from "../types.js";
import { stringFlag, type CommandContext, type ParsedArgs, type SECRETS_FLAG } from "./args.js";
import { MACHINE_DIR_FILES, readJsonFile } from "./files.js";
import { printable } from "./style.js";

/** An example `--secrets` file, as the refusal shows it. */
const EXAMPLE =
  '{"adminPassword": {"env": "/etc/stratum/controlplane.env", "name": "STRATUM_IAM_ADMIN_PASSWORD"}, "openBaoUnsealKey": {"tpm": "/var/lib/stratum-join/openbao-unseal.sealed"}, …}';

/**
 * The destinations of `--secrets FILE`, read and checked (every destination can work), or
 * undefined without the flag.
 * @throws CliError `FILE_ERROR` (unreadable, not JSON); SecretDestinationError `SECRET_DESTINATION_INVALID`
 */
export async function readSecretsFlag(
  args: ParsedArgs<{ readonly secrets: typeof SECRETS_FLAG }>,
  dir: string,
): Promise<SecretDestinations | undefined> {
  const file = stringFlag(args, "secrets");
  if (file === undefined) return undefined;
  const destinations = (await readJsonFile(file, "secrets file")) as SecretDestinations;
  checkDestinations(destinations, join(dir, MACHINE_DIR_FILES.delivery));
  return destinations;
}

/** Where a secret went, in a few words (the field is printed before it, padded). */
function describePlaced(placed: PlacedSecret): string {
  switch (placed.kind) {
    case "env":
      return `${placed.path}: ${placed.name}`;
    case "command":
      return `stdin of ${placed.command}`;
    case "tpm":
      return `TPM-sealed ${placed.path}`;
    case "plaintext":
      return `NOT SEALED ${placed.path}`;
    case "callback":
      return "callback";
    default:
      return placed.path ?? "";
  }
}

/**
 * Writes `delivery` to `DIR/delivery`, its secrets to `secrets`' destinations, and says where
 * each went.
 * @throws SecretDestinationError `SECRET_DESTINATION_MISSING` (naming the fields and the
 *   flag) when a secret has no destination; as `writeDelivery` otherwise
 */
export async function writeDeliveryOf(
  ctx: CommandContext,
  dir: string,
  delivery: Delivery,
  secrets: SecretDestinations | undefined,
): Promise<WrittenDelivery> {
  const target = join(dir, MACHINE_DIR_FILES.delivery);
  let written: WrittenDelivery;
  try {
    written = await writeDelivery(target, delivery, {
      ...(secrets ? { secrets } : {}),
      // The TPM of the command's environment (tpm2-tools' own variable), else /dev/tpmrm0.
      ...(ctx.env.TPM2TOOLS_TCTI ? { tpm: { tcti: ctx.env.TPM2TOOLS_TCTI } } : {}),
      signal: ctx.signal,
      onWarning: (text) => ctx.out.warn(text),
    });
  } catch (error) {
    if (error instanceof SecretDestinationError && error.code === "SECRET_DESTINATION_MISSING") {
      throw new SecretDestinationError(
        error.code,
        `the delivery carries secrets with no destination: ${error.fields.join(", ")}; nothing was written. ` +
          `Name where each goes with --secrets FILE, a JSON object of field → destination, e.g. ${EXAMPLE}`,
        { fields: error.fields },
      );
    }
    throw error;
  }
  // One short line per home: the field, then where (as wide as a real machine's paths allow).
  ctx.out.say(`delivery for ${printable(delivery.nodeId)} written to ${target}`);
  for (const [field, list] of Object.entries(written.secrets))
    for (const placed of list) ctx.out.say(`  ${field.padEnd(16)} ${describePlaced(placed)}`);
  return written;
}
