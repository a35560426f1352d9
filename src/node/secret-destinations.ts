/**
 * Where each secret of a delivery goes: the installer names a destination per field, the SDK
 * checks the whole plan before it writes anything, and then puts each secret in its home, one
 * home at a time, each all or nothing (docs/protocol.md#machine-keeps).
 *
 * Which fields need one: every field the spec marks `x-sensitive` (except `nodeKey`, whose home
 * the seed allows in the delivery directory, 0600), and every field the SDK does not know, in
 * the bundle or beside it (a newer founder's: nobody here can say it is not a secret). A field
 * that is absent, null or empty needs none: the seed says "empty" of a secret a cluster does not
 * hand out (the unseal key of a single-instance OpenBao, the admin password of a Postgres-only
 * replica).
 * @module
 */
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, normalize, relative } from "node:path";
import { knownFields } from "../../generated/fields.js";
import { sensitiveFields } from "../../generated/sensitive.js";
import { SecretDestinationError, TpmError } from "../errors/index.js";
import { errorCode, writeFileDurably } from "../fs/durable.js";
import type { Delivery } from "../types.js";
import { ENV_NAME, envValueProblem, upsertEnvLine } from "./env-file.js";
import { runWithStdin } from "./stdin-command.js";
import { plaintextDocument, sealToTpm, type TpmOptions } from "./tpm.js";

/** A file that holds the secret alone (mode 0600, written durably; missing directories are made 0700). */
export interface SecretFileDestination {
  /** Absolute path. */
  readonly file: string;
}

/** A `NAME=value` line upserted into an environment file (0600, durably); its other lines are kept. */
export interface SecretEnvDestination {
  /** Absolute path of the environment file (made when missing). */
  readonly env: string;
  /** The variable's name, e.g. `STRATUM_IAM_ADMIN_PASSWORD`. */
  readonly name: string;
}

/**
 * A program that receives the secret on its standard input (never in argv or the environment),
 * e.g. `["podman", "secret", "create", "stratum-postgres", "-"]`. Run without a shell; a
 * non-zero exit is a failure.
 */
export interface SecretCommandDestination {
  /** The program and its arguments. */
  readonly command: readonly string[];
}

/**
 * The secret sealed to this machine's TPM; the sealed file (0600) at `tpm`, which only this TPM
 * can unseal (`unsealSecret`, `stratum-join unseal FILE`). The OpenBao unseal key's only
 * destination besides a callback.
 */
export interface SecretTpmDestination {
  /** Absolute path of the sealed file. */
  readonly tpm: string;
  /**
   * `"plaintext"`: on a machine with no TPM (none, or no tpm2-tools), write the secret in
   * plaintext (0600) at `tpm` instead, with a warning. Without it no TPM is an error and nothing
   * is written.
   */
  readonly withoutTpm?: "plaintext" | undefined;
}

/** What a {@link SecretCallback} is told besides the secret. */
export interface SecretCallbackContext {
  /** The field (`postgresPassword`, or `delivery.<name>` for a field beside the bundle). */
  readonly field: string;
  /** Aborted when the delivery's write is: stop, and throw. */
  readonly signal: AbortSignal;
}

/** The installer's own code, given the secret in memory (library only). A throw is the destination's failure. */
export type SecretCallback = (secret: string, context: SecretCallbackContext) => void | Promise<void>;

/** One home of a secret. */
export type SecretDestination =
  SecretFileDestination | SecretEnvDestination | SecretCommandDestination | SecretTpmDestination | SecretCallback;

/**
 * Field → destination (or several: the seed keeps `adminPassword` in controlplane.env and in
 * bootstrap-credentials.txt). Keys are bundle fields, or `delivery.<name>` for a field beside
 * the bundle. A key whose field a delivery does not carry (or carries empty) is skipped.
 */
export type SecretDestinations = Readonly<Record<string, SecretDestination | readonly SecretDestination[]>>;

/** Where one secret was put, as {@link writeDelivery} reports it (paths and names, never the value). */
export interface PlacedSecret {
  /** `file`, `env`, `command`, `tpm`, `plaintext` (the TPM fallback), `callback`, or `delivery` (the node key in the delivery directory). */
  readonly kind: "file" | "env" | "command" | "tpm" | "plaintext" | "callback" | "delivery";
  /** The file written, for `file`, `env`, `tpm`, `plaintext` and `delivery`. */
  readonly path?: string;
  /** The variable, for `env`. */
  readonly name?: string;
  /** The program run, for `command`. */
  readonly command?: string;
}

/** One secret of the delivery and its homes. */
export interface PlannedSecret {
  readonly field: string;
  readonly value: string;
  readonly destinations: readonly SecretDestination[];
}

const SENSITIVE = new Set<string>(sensitiveFields.Bundle);
const KNOWN_BUNDLE = new Set<string>(knownFields.Bundle);
const KNOWN_DELIVERY = new Set<string>(knownFields.Delivery);
/** The one secret the seed lets the delivery directory keep (0600). */
export const NODE_KEY = "nodeKey";
/** The secret that is never written in plaintext: sealed to the TPM (or given to a callback). */
export const UNSEAL_KEY = "openBaoUnsealKey";
// A command that receives a secret should end at once; one that hangs must not hold the install.
const COMMAND_TIMEOUT_MS = 60_000;

const isEmpty = (value: unknown) => value === undefined || value === null || value === "";
const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

/**
 * The secrets of `delivery` with their destinations, checked whole before anything is written:
 * every secret has one (or the node key its default home), every destination can work.
 * @throws SecretDestinationError `SECRET_DESTINATION_MISSING` (naming every field without one)
 *   or `SECRET_DESTINATION_INVALID`
 */
export function planSecrets(
  delivery: Delivery,
  destinations: SecretDestinations,
  deliveryDir: string,
): { secrets: PlannedSecret[]; nodeKeyInDelivery: string | undefined } {
  const carried = secretFields(delivery);
  const named = isRecord(destinations) ? destinations : {};
  const missing = [...carried.keys()].filter((field) => field !== NODE_KEY && !(field in named));
  if (missing.length)
    throw new SecretDestinationError(
      "SECRET_DESTINATION_MISSING",
      `the delivery carries secrets with no destination: ${missing.sort().join(", ")}; name one for each (a file, an env line, a command, the TPM)`,
      { fields: missing },
    );
  checkDestinations(destinations, deliveryDir, carried);
  const secrets: PlannedSecret[] = [];
  for (const [field, value] of carried) {
    const list = listOf(named[field]);
    if (list.length) secrets.push({ field, value, destinations: list });
  }
  // The unseal key first: sealed before any other step (the seed: "immediately on receipt").
  secrets.sort((a, b) => Number(b.field === UNSEAL_KEY) - Number(a.field === UNSEAL_KEY));
  const nodeKey = carried.get(NODE_KEY);
  return { secrets, nodeKeyInDelivery: nodeKey !== undefined && !(NODE_KEY in named) ? nodeKey : undefined };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const listOf = (named: SecretDestination | readonly SecretDestination[] | undefined): readonly SecretDestination[] =>
  named === undefined ? [] : Array.isArray(named) ? named : [named as SecretDestination];

/**
 * Checks destinations without a delivery (what can be checked before one arrives: the CLI does
 * before it touches the network), and with the secrets' `values` when given (whether each fits
 * its destination: an env line, the 128 bytes a TPM seals).
 * @throws SecretDestinationError `SECRET_DESTINATION_INVALID` naming the field
 */
export function checkDestinations(
  destinations: SecretDestinations,
  deliveryDir: string,
  values: ReadonlyMap<string, string> = new Map(),
): void {
  if (!isRecord(destinations))
    throw new SecretDestinationError(
      "SECRET_DESTINATION_INVALID",
      "the destinations are not an object of field → destination",
      {
        fields: [],
      },
    );
  const invalid = (field: string, why: string) =>
    new SecretDestinationError("SECRET_DESTINATION_INVALID", `the destination of ${field} ${why}`, {
      fields: [field],
    });
  const claimed = new Map<string, string>();
  for (const [field, named] of Object.entries(destinations)) {
    if (KNOWN_BUNDLE.has(field) && !SENSITIVE.has(field))
      throw invalid(field, `names a public field: ${field} is kept in bundle.json`);
    const list = listOf(named);
    if (list.length === 0) throw invalid(field, "is an empty list");
    for (const destination of list)
      checkDestination(field, values.get(field), destination, deliveryDir, claimed, invalid);
  }
}

/** The fields of `delivery` that are secrets and not empty, with their values as text. */
export function secretFields(delivery: Delivery): Map<string, string> {
  const found = new Map<string, string>();
  const bundle = delivery.bundle as unknown as Record<string, unknown>;
  // Own names, not keys: concealed fields are not enumerable.
  for (const name of Object.getOwnPropertyNames(bundle)) {
    if (KNOWN_BUNDLE.has(name) && !SENSITIVE.has(name)) continue;
    if (!isEmpty(bundle[name])) found.set(name, asText(bundle[name]));
  }
  const outer = delivery as unknown as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(outer))
    if (!KNOWN_DELIVERY.has(name) && !isEmpty(outer[name])) found.set(`delivery.${name}`, asText(outer[name]));
  return found;
}

/** The fields of the bundle and the delivery the SDK does not know (a newer founder's). */
export function unknownFields(delivery: Delivery): string[] {
  const bundle = Object.getOwnPropertyNames(delivery.bundle).filter((name) => !KNOWN_BUNDLE.has(name));
  const outer = Object.getOwnPropertyNames(delivery).filter((name) => !KNOWN_DELIVERY.has(name));
  return [...bundle, ...outer.map((name) => `delivery.${name}`)];
}

function checkDestination(
  field: string,
  value: string | undefined,
  destination: SecretDestination,
  deliveryDir: string,
  claimed: Map<string, string>,
  invalid: (field: string, why: string) => SecretDestinationError,
): void {
  if (typeof destination === "function") return;
  const d = (typeof destination === "object" && destination !== null ? destination : {}) as Record<string, unknown>;
  const kinds = ["file", "env", "command", "tpm"].filter((k) => k in d);
  if (kinds.length !== 1) throw invalid(field, "is not one of { file }, { env, name }, { command }, { tpm }");
  const kind = kinds[0]!;
  const extra = Object.keys(d).filter(
    (k) => k !== kind && !(kind === "env" && k === "name") && !(kind === "tpm" && k === "withoutTpm"),
  );
  if (extra.length)
    throw invalid(field, `has ${extra.map((k) => `"${k}"`).join(", ")}, which a ${kind} destination does not take`);
  if (field === UNSEAL_KEY && kind !== "tpm")
    throw invalid(field, "must be { tpm } (or a callback): the unseal key is never written in plaintext");
  if (kind === "command") {
    const argv = d.command;
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string") || argv[0] === "")
      throw invalid(field, "is not a command: a list of strings, the program first");
    return;
  }
  const path = d[kind];
  if (typeof path !== "string" || !isAbsolute(path) || path.endsWith("/"))
    throw invalid(field, `needs an absolute file path, not ${JSON.stringify(path)}`);
  const inside = relative(deliveryDir, normalize(path));
  if (inside === "" || (!inside.startsWith("..") && !isAbsolute(inside)))
    throw invalid(field, `is inside the delivery directory ${deliveryDir}, which is replaced as a whole`);
  if (kind === "env") {
    if (typeof d.name !== "string" || !ENV_NAME.test(d.name))
      throw invalid(field, "needs a variable name (letters, digits, _)");
    const problem = value === undefined ? undefined : envValueProblem(value);
    if (problem) throw invalid(field, `cannot be an env line: ${problem}; give it a file instead`);
  }
  if (kind === "tpm" && d.withoutTpm !== undefined && d.withoutTpm !== "plaintext")
    throw invalid(field, `takes withoutTpm "plaintext" or nothing, not ${JSON.stringify(d.withoutTpm)}`);
  if (kind === "tpm" && value !== undefined && Buffer.byteLength(value) > 128)
    throw invalid(field, "is over the 128 bytes a TPM seals; give it another destination");
  const file = normalize(path);
  const whole = claimed.get(`whole:${file}`);
  if (kind === "env") {
    const line = `line:${file}:${String(d.name)}`;
    const other = whole ?? claimed.get(line);
    if (other !== undefined)
      throw invalid(field, `writes ${path} ${String(d.name)}, as the destination of ${other} does`);
    claimed.set(line, field);
    claimed.set(`env:${file}`, field);
  } else {
    // A file or a sealed file is the whole file: no other destination may write it.
    const other = whole ?? claimed.get(`env:${file}`);
    if (other !== undefined) throw invalid(field, `writes ${path}, as the destination of ${other} does`);
    claimed.set(`whole:${file}`, field);
  }
}

/** What placing secrets needs besides the plan. */
export interface PlaceContext {
  readonly signal: AbortSignal;
  readonly tpm: TpmOptions;
  readonly onWarning: (message: string) => void;
}

/**
 * The sealed text of every `{ tpm }` destination, made in memory before anything is written:
 * the unseal key first. No TPM (and no plaintext fallback asked for) throws here, so nothing of
 * the delivery is written.
 */
export async function sealAll(
  secrets: readonly PlannedSecret[],
  ctx: PlaceContext,
): Promise<Map<SecretDestination, { text: string; sealed: boolean }>> {
  const sealed = new Map<SecretDestination, { text: string; sealed: boolean }>();
  for (const secret of secrets)
    for (const destination of secret.destinations) {
      if (typeof destination === "function" || !("tpm" in destination)) continue;
      try {
        sealed.set(destination, {
          text: await sealToTpm(secret.field, secret.value, { ...ctx.tpm, signal: ctx.signal }),
          sealed: true,
        });
      } catch (error) {
        const noTpm = error instanceof TpmError && (error.reason === "absent" || error.reason === "tools-missing");
        if (!noTpm || destination.withoutTpm !== "plaintext") throw error;
        ctx.onWarning(
          `${secret.field} is NOT sealed: ${error.message}; written in plaintext (0600) to ${destination.tpm}, as its destination asks`,
        );
        sealed.set(destination, { text: plaintextDocument(secret.field, secret.value), sealed: false });
      }
    }
  return sealed;
}

/**
 * Puts one secret in one home, all or nothing: a file or env file is replaced durably (a failed
 * write leaves the old file, never a torn one), a command is run with the secret on stdin.
 * @throws SecretDestinationError `SECRET_DESTINATION_FAILED`; the signal's reason
 */
export async function placeSecret(
  secret: PlannedSecret,
  destination: SecretDestination,
  sealed: { text: string; sealed: boolean } | undefined,
  ctx: PlaceContext,
): Promise<PlacedSecret> {
  const failed = (what: string, cause?: unknown) =>
    new SecretDestinationError("SECRET_DESTINATION_FAILED", `${secret.field} could not be written to ${what}`, {
      fields: [secret.field],
      ...(cause === undefined ? {} : { cause }),
    });
  if (typeof destination === "function") {
    try {
      await destination(secret.value, { field: secret.field, signal: ctx.signal });
    } catch (error) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw failed("its callback", error);
    }
    return { kind: "callback" };
  }
  if ("command" in destination) {
    const [program] = destination.command;
    let result;
    try {
      result = await runWithStdin(destination.command, secret.value, {
        signal: ctx.signal,
        timeoutMs: COMMAND_TIMEOUT_MS,
        what: `the command ${program}`,
      });
    } catch (error) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      throw failed(`the command ${program} (${errorCode(error) ?? (error as Error).message})`, error);
    }
    if (result.exitCode !== 0) {
      const said = result.stderr
        .split("\n")
        .find((line) => line.trim() !== "")
        ?.replaceAll(secret.value, "[secret]")
        .slice(0, 200);
      throw failed(
        `the command ${program}: it exited ${result.exitCode ?? result.signal}${said ? ` (${said.trim()})` : ""}`,
      );
    }
    return { kind: "command", command: program! };
  }
  const path = "file" in destination ? destination.file : "env" in destination ? destination.env : destination.tpm;
  try {
    await prepareDirectory(path);
    if ("env" in destination) {
      let text = "";
      try {
        text = await readFile(path, "utf8");
      } catch (error) {
        if (errorCode(error) !== "ENOENT") throw error;
      }
      await writeFileDurably(path, upsertEnvLine(text, destination.name, secret.value), { mode: 0o600 });
      return { kind: "env", path, name: destination.name };
    }
    if ("tpm" in destination) {
      await writeFileDurably(path, sealed!.text, { mode: 0o600 });
      return { kind: sealed!.sealed ? "tpm" : "plaintext", path };
    }
    await writeFileDurably(path, secret.value, { mode: 0o600 });
    return { kind: "file", path };
  } catch (error) {
    throw failed(`${path} (${errorCode(error) ?? (error as Error).message})`, error);
  }
}

/**
 * Makes `path`'s directory (0700) when missing, and removes what a crash left beside `path`:
 * the temporary files of an earlier durable write (`.NAME.tmp-*`), which may hold a whole secret.
 */
export async function prepareDirectory(path: string): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const stale = `.${basename(path)}.tmp-`;
  for (const name of await readdir(dir)) if (name.startsWith(stale)) await rm(join(dir, name), { force: true });
}
