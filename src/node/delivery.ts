/**
 * The delivery an approved joiner receives: node.yaml and the join bundle, with the cluster's
 * secrets. Secrets are concealed on the object (non-enumerable, so `util.inspect`,
 * `console.log` and `JSON.stringify` skip them) and written to disk only with mode 0600.
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdir, open, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { sensitiveFields } from "../../generated/sensitive.js";
import { StratumError } from "../errors/index.js";
import { fsyncDir } from "../fs/durable.js";
import type { Bundle, Delivery } from "../types.js";

/** The bundle's secret fields, as openapi.yaml marks them (`x-sensitive`). */
const BUNDLE_SECRETS: readonly string[] = sensitiveFields.Bundle;

/**
 * Hides the bundle's secrets from every way an object gets printed or serialised by accident:
 * each secret field becomes non-enumerable (readable as `bundle.nodeKey`, absent from
 * `util.inspect`, `JSON.stringify`, `Object.keys` and spreads). Returns the same object.
 */
export function concealSecrets<T extends Delivery>(delivery: T): T {
  const bundle = delivery.bundle as unknown as Record<string, unknown>;
  for (const field of BUNDLE_SECRETS) {
    if (Object.prototype.hasOwnProperty.call(bundle, field)) {
      const value = bundle[field];
      Object.defineProperty(bundle, field, { value, enumerable: false, writable: false, configurable: true });
    }
  }
  return delivery;
}

/** Where {@link writeDelivery} put each file. */
export interface WrittenDelivery {
  /** The directory written. */
  dir: string;
  /** Absolute paths by role: `nodeYaml`, `bundle`, `caBundle`, `nodeCert`, `nodeKey`, and `secret:<field>` for each secret. */
  files: Record<string, string>;
}

/** The file name each secret of the bundle is written to, under `secrets/`. */
const SECRET_FILES: Record<string, string> = {
  postgresPassword: "postgres-password",
  adminPassword: "admin-password",
  openBaoToken: "openbao.token",
  openBaoNodeToken: "openbao-node.token",
  dnsEncryptionKey: "dns-encryption.key",
  openBaoUnsealKey: "openbao-unseal.key",
};

/**
 * Writes a delivery to `dir`, all or nothing: node.yaml, `bundle.json` (the bundle without its
 * secrets), `ca.pem`, `node.crt`, `node.key` and each secret under `secrets/`, every file with
 * mode 0600. The files are written and fsynced in a staging directory beside `dir`, which then
 * replaces `dir` by rename, so a crash leaves either the old delivery or the new one, never a
 * mix (a crash between the two renames leaves the old one at `dir.old-*`).
 */
export async function writeDelivery(dir: string, delivery: Delivery): Promise<WrittenDelivery> {
  const target = resolve(dir);
  const parent = dirname(target);
  await mkdir(parent, { recursive: true });
  const suffix = randomBytes(6).toString("hex");
  const staging = join(parent, `.${basename(target)}.staging-${suffix}`);
  await mkdir(staging, { mode: 0o700 });
  const bundle = delivery.bundle as Bundle & Record<string, unknown>;
  const relative: Record<string, string> = {};
  try {
    const write = async (role: string, name: string, content: string) => {
      const path = join(staging, name);
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      const handle = await open(path, "wx", 0o600);
      try {
        await handle.writeFile(content);
        await handle.sync();
      } finally {
        await handle.close();
      }
      relative[role] = name;
    };
    await write("nodeYaml", "node.yaml", delivery.nodeYaml);
    const publicBundle: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(bundle)) if (!BUNDLE_SECRETS.includes(key)) publicBundle[key] = value;
    await write(
      "bundle",
      "bundle.json",
      `${JSON.stringify({ nodeId: delivery.nodeId, bundle: publicBundle }, null, 2)}\n`,
    );
    if (bundle.caBundle) await write("caBundle", "ca.pem", bundle.caBundle);
    if (bundle.nodeCert) await write("nodeCert", "node.crt", bundle.nodeCert);
    for (const field of BUNDLE_SECRETS) {
      const value = bundle[field];
      if (typeof value !== "string" || value === "") continue;
      if (field === "nodeKey") await write("nodeKey", "node.key", value);
      else await write(`secret:${field}`, join("secrets", SECRET_FILES[field] ?? field), value);
    }
    await fsyncDir(join(staging, "secrets")).catch(() => undefined);
    await fsyncDir(staging);

    const old = join(parent, `.${basename(target)}.old-${suffix}`);
    const existed = await stat(target).then(
      () => true,
      () => false,
    );
    if (existed) await rename(target, old);
    await rename(staging, target);
    await fsyncDir(parent);
    if (existed) await rm(old, { recursive: true, force: true });
  } catch (error) {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined);
    throw new StratumError(
      "DELIVERY_WRITE_FAILED",
      `could not write the delivery to ${target}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const files: Record<string, string> = {};
  for (const [role, name] of Object.entries(relative)) files[role] = join(target, name);
  return { dir: target, files };
}
