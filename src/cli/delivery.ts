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
import { stringFlag, type CommandContext, type CommandSpec, type ParsedArgs } from "./args.js";
import { IDENTITY_FILES, readJsonFile } from "./files.js";

/** An example `--secrets` file, as the refusal shows it. */
const EXAMPLE =
  '{"adminPassword": {"env": "/etc/stratum/controlplane.env", "name": "STRATUM_IAM_ADMIN_PASSWORD"}, "openBaoUnsealKey": {"tpm": "/var/lib/stratum-join/openbao-unseal.sealed"}, …}';

/**
 * The destinations of `--secrets FILE`, read and checked (every destination can work), or
 * undefined without the flag.
 * @throws CliError `FILE_ERROR` (unreadable, not JSON); SecretDestinationError `SECRET_DESTINATION_INVALID`
 */
export async function readSecretsFlag(
  args: ParsedArgs,
  command: CommandSpec,
  dir: string,
): Promise<SecretDestinations | undefined> {
  const file = stringFlag(args, "secrets", command);
  if (file === undefined) return undefined;
  const destinations = (await readJsonFile(file, "secrets file")) as SecretDestinations;
  checkDestinations(destinations, join(dir, IDENTITY_FILES.delivery));
  return destinations;
}

/** One line per secret: where it went. */
function describePlaced(field: string, placed: PlacedSecret): string {
  switch (placed.kind) {
    case "env":
      return `${field} → ${placed.name} in ${placed.path}`;
    case "command":
      return `${field} → the command ${placed.command} (on its stdin)`;
    case "tpm":
      return `${field} → sealed to this machine's TPM in ${placed.path}`;
    case "plaintext":
      return `${field} → NOT sealed (no TPM): plaintext in ${placed.path}`;
    default:
      return `${field} → ${placed.path}`;
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
  const target = join(dir, IDENTITY_FILES.delivery);
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
  ctx.out.say(`delivery for ${delivery.nodeId} written to ${target} (public files and node.key, 0600)`);
  for (const [field, list] of Object.entries(written.secrets))
    for (const placed of list) if (placed.kind !== "delivery") ctx.out.say(`  ${describePlaced(field, placed)}`);
  return written;
}
