/**
 * The delivery an approved joiner receives: node.yaml and the join bundle, with the cluster's
 * secrets. Secrets are concealed on the object (non-enumerable, so `util.inspect`,
 * `console.log` and `JSON.stringify` skip them), and written only where the installer says
 * (src/node/secret-destinations.ts): the delivery directory keeps the public files and the node
 * key (0600), nothing else secret, at any moment a crash can stop the write
 * (docs/protocol.md#machine-keeps).
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { knownFields } from "../../generated/fields.js";
import { sensitiveFields } from "../../generated/sensitive.js";
import { SecretDestinationError, StratumError, TimeoutError, isAbortError } from "../errors/index.js";
import { errorCode, fsyncDir, writeFileDurably } from "../fs/durable.js";
import type { Bundle, Delivery } from "../types.js";
import {
  planSecrets,
  placeSecret,
  prepareDirectory,
  sealAll,
  unknownFields,
  type PlaceContext,
  type PlacedSecret,
  type SecretDestinations,
} from "./secret-destinations.js";
import type { TpmOptions } from "./tpm.js";

const SENSITIVE = new Set<string>(sensitiveFields.Bundle);
const KNOWN_BUNDLE = new Set<string>(knownFields.Bundle);

/** Makes one field of `object` non-enumerable, keeping its value readable. */
function conceal(object: Record<string, unknown>, field: string): void {
  if (!Object.prototype.hasOwnProperty.call(object, field)) return;
  const value = object[field];
  Object.defineProperty(object, field, { value, enumerable: false, writable: false, configurable: true });
}

/**
 * Hides the delivery's secrets from every way an object gets printed or serialised by accident:
 * each secret field, and each field the SDK does not know (a newer founder's, which may be one),
 * becomes non-enumerable (readable as `bundle.nodeKey`, absent from `util.inspect`,
 * `JSON.stringify`, `Object.keys` and spreads). Returns the same object.
 */
export function concealSecrets<T extends Delivery>(delivery: T): T {
  const bundle = delivery.bundle as unknown as Record<string, unknown>;
  for (const field of Object.keys(bundle)) if (SENSITIVE.has(field) || !KNOWN_BUNDLE.has(field)) conceal(bundle, field);
  for (const field of unknownFields(delivery))
    if (field.startsWith("delivery.")) conceal(delivery as unknown as Record<string, unknown>, field.slice(9));
  return delivery;
}

/** Options of {@link writeDelivery}. */
export interface WriteDeliveryOptions {
  /**
   * Where each secret of the delivery goes (field → destination). Every secret the delivery
   * carries needs one, except `nodeKey` (default: `node.key` in the delivery directory, 0600);
   * a field the SDK does not know counts as a secret. Default: none.
   */
  secrets?: SecretDestinations | undefined;
  /** The TPM of the `{ tpm }` destinations (default: `TPM2TOOLS_TCTI`, else `/dev/tpmrm0`). */
  tpm?: Pick<TpmOptions, "tcti"> | undefined;
  /** Stops the write (a command killed, the staging directory removed) and rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Deadline of the whole write, in ms (default 120 000): the TPM and every command included. */
  timeoutMs?: number | undefined;
  /** Told what deserves a look: a secret written in plaintext because there is no TPM, as its destination asked. */
  onWarning?: ((message: string) => void) | undefined;
}

/** Where {@link writeDelivery} put everything. */
export interface WrittenDelivery {
  /** The delivery directory. */
  dir: string;
  /** Absolute paths of its files by role: `nodeYaml`, `bundle`, `caBundle`, `nodeCert`, and `nodeKey` when it is kept there. */
  files: Record<string, string>;
  /** Where each secret went, by field (a field with several destinations has several entries). */
  secrets: Record<string, PlacedSecret[]>;
  /** The fields of the bundle (or `delivery.<name>`) the SDK does not know, kept in memory on the delivery and written only where `secrets` names. */
  unknownFields: string[];
}

const DEFAULT_TIMEOUT_MS = 120_000;

type StepHook = (step: string) => void | Promise<void>;
let stepHook: StepHook | undefined;

/**
 * Called at each step of {@link writeDelivery} (`planned`, `sealed`, `swept`, `staged`,
 * `placed:<field>`, `old-key-removed`, `old-moved`, `swapped`, `node-key`, `done`), for the
 * test that kills the process at each of them and scans the disk.
 * @internal
 */
export function setDeliveryStepHook(hook: StepHook | undefined): void {
  stepHook = hook;
}

/**
 * Writes a delivery: its secrets to the installer's destinations, its public files to `dir`.
 *
 * In this order, so that nothing is written before every check has passed and no secret is
 * ever where it should not be: (1) every secret must have a destination that can work, else
 * SecretDestinationError and nothing is written; (2) each `{ tpm }` secret is sealed in
 * memory, the OpenBao unseal key first (no TPM: TpmError, nothing written); (3) what a crash
 * of an earlier write left (staging copies, an older SDK's `secrets/`) is removed; (4) the public
 * files (node.yaml, `bundle.json` with the public fields only, `ca.pem`, `node.crt`) are written
 * to a staging directory beside `dir`, mode 0600; (5) each secret goes to its destinations, each
 * all or nothing; (6) the staging directory replaces `dir` (the old one loses its node key
 * first, so no copy of a secret is left in it); (7) `node.key` (0600) is written into `dir`.
 * @throws SecretDestinationError `SECRET_DESTINATION_MISSING` (the fields without a
 *   destination), `SECRET_DESTINATION_INVALID`, `SECRET_DESTINATION_FAILED` (a destination
 *   failed; the old delivery is kept); TpmError; StratumError `DELIVERY_WRITE_FAILED` (the
 *   directory could not be written; the old delivery is kept); TimeoutError; the signal's reason
 */
export async function writeDelivery(
  dir: string,
  delivery: Delivery,
  options: WriteDeliveryOptions = {},
): Promise<WrittenDelivery> {
  const target = resolve(dir);
  const plan = planSecrets(delivery, options.secrets ?? {}, target);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const ctx: PlaceContext = { signal, tpm: options.tpm ?? {}, onWarning: options.onWarning ?? (() => {}) };
  try {
    return await carryOut(target, delivery, plan, ctx);
  } catch (error) {
    if (deadline.aborted && !options.signal?.aborted)
      throw new TimeoutError(`the delivery was not written within ${Math.round(timeoutMs / 1000)} s`);
    throw error;
  }
}

/** Steps (2) to (7) of {@link writeDelivery}, once the plan has passed. */
async function carryOut(
  target: string,
  delivery: Delivery,
  plan: ReturnType<typeof planSecrets>,
  ctx: PlaceContext,
): Promise<WrittenDelivery> {
  const step = async (name: string) => {
    await stepHook?.(name);
    if (ctx.signal.aborted) throw ctx.signal.reason;
  };
  await step("planned");
  const sealed = await sealAll(plan.secrets, ctx);
  await step("sealed");
  const parent = dirname(target);
  const staging = join(parent, `.${basename(target)}.staging-${randomBytes(6).toString("hex")}`);
  const placed: Record<string, PlacedSecret[]> = {};
  let files: Record<string, string>;
  try {
    await local(() => sweep(parent, target));
    await step("swept");
    files = await local(() => writePublicFiles(staging, delivery));
    await step("staged");
    for (const secret of plan.secrets) {
      for (const destination of secret.destinations)
        (placed[secret.field] ??= []).push(
          await placeSecret(secret, destination, sealed.get(destination), ctx).catch((error: unknown) => {
            throw withPlaced(error, Object.keys(placed));
          }),
        );
      await step(`placed:${secret.field}`);
    }
    await local(() => swapIn(staging, target, step));
  } catch (error) {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    throw error;
  }
  const written = Object.fromEntries(Object.entries(files).map(([role, path]) => [role, join(target, basename(path))]));
  if (plan.nodeKeyInDelivery !== undefined) {
    const path = join(target, "node.key");
    await local(() => writeFileDurably(path, plan.nodeKeyInDelivery!, { mode: 0o600 }));
    written.nodeKey = path;
    placed.nodeKey = [{ kind: "delivery", path }];
    await step("node-key");
  }
  await step("done");
  return { dir: target, files: written, secrets: placed, unknownFields: unknownFields(delivery) };
}

/** A file-system failure of the delivery directory, as `DELIVERY_WRITE_FAILED`; everything else as is. */
async function local<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (StratumError.is(error) || isAbortError(error)) throw error;
    throw new StratumError(
      "DELIVERY_WRITE_FAILED",
      `could not write the delivery: ${errorCode(error) ?? (error as Error).message}`,
      { cause: error },
    );
  }
}

/** A destination's failure, saying which fields were already in their homes. */
function withPlaced(error: unknown, fields: string[]): unknown {
  if (!(error instanceof SecretDestinationError)) return error;
  return new SecretDestinationError(error.code, error.message, {
    fields: error.fields,
    placed: fields.filter((field) => !error.fields.includes(field)),
    cause: error.cause,
  });
}

/**
 * Removes what an interrupted write left: staging and old copies of the delivery beside it
 * (an older SDK put secrets in them), the `secrets/` directory an older SDK kept in the
 * delivery, and a half-written node key.
 */
async function sweep(parent: string, target: string): Promise<void> {
  await mkdir(parent, { recursive: true });
  const name = basename(target);
  for (const entry of await readdir(parent))
    if (entry.startsWith(`.${name}.staging-`) || entry.startsWith(`.${name}.old-`))
      await rm(join(parent, entry), { recursive: true, force: true });
  if (await exists(target)) {
    await rm(join(target, "secrets"), { recursive: true, force: true });
    await prepareDirectory(join(target, "node.key"));
  }
}

/** The public files of the delivery, written and fsynced in `staging` (created 0700); their paths by role. */
async function writePublicFiles(staging: string, delivery: Delivery): Promise<Record<string, string>> {
  await mkdir(staging, { mode: 0o700 });
  const bundle = delivery.bundle as Bundle & Record<string, unknown>;
  const files: Record<string, string> = {};
  const write = async (role: string, name: string, content: string) => {
    const path = join(staging, name);
    const handle = await open(path, "wx", 0o600);
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    files[role] = path;
  };
  await write("nodeYaml", "node.yaml", delivery.nodeYaml);
  const publicBundle: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(bundle))
    if (KNOWN_BUNDLE.has(key) && !SENSITIVE.has(key)) publicBundle[key] = value;
  await write(
    "bundle",
    "bundle.json",
    `${JSON.stringify({ nodeId: delivery.nodeId, bundle: publicBundle }, null, 2)}\n`,
  );
  if (bundle.caBundle) await write("caBundle", "ca.pem", bundle.caBundle);
  if (bundle.nodeCert) await write("nodeCert", "node.crt", bundle.nodeCert);
  await fsyncDir(staging);
  return files;
}

/**
 * `staging` replaces `target`. The old delivery's node key goes first, so the old copy that
 * stands beside the new one for a moment holds public files only; a crash in between leaves a
 * delivery without its key, which the next write completes (the founder hands the delivery out
 * until the machine reports its first step).
 */
async function swapIn(staging: string, target: string, step: (name: string) => Promise<void>): Promise<void> {
  const parent = dirname(target);
  const old = join(parent, `.${basename(target)}.old-${randomBytes(6).toString("hex")}`);
  const existed = await exists(target);
  if (existed) {
    await rm(join(target, "node.key"), { force: true });
    await fsyncDir(target);
    await step("old-key-removed");
    await rename(target, old);
    await step("old-moved");
  }
  await rename(staging, target);
  await fsyncDir(parent);
  await step("swapped");
  if (existed) await rm(old, { recursive: true, force: true });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
