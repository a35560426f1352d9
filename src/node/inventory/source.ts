/**
 * Where the inventory reads from: files under a root (the live `/`, or a recorded fixture)
 * and the JSON of `lsblk` and `ip`. Every reader here answers `undefined` when its source
 * is missing or unreadable, because one unreadable attribute must never cost the whole
 * inventory; only an abort propagates.
 * @module
 */

import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, open, readdir, readFile, readlink, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { abortReason } from "../../core/retry.js";

/**
 * Runs a tool and resolves with its standard output. Rejects when the tool is missing,
 * fails or is aborted through `signal`; the inventory then falls back to /sys and /proc.
 */
export type RunCommand = (
  file: string,
  args: readonly string[],
  options: { signal?: AbortSignal | undefined },
) => Promise<string>;

/** What every collector is given. */
export interface SourceContext {
  /** Absolute path standing in for `/`. */
  readonly root: string;
  /** True when `root` is the real `/`, so live-only sources (Node's view of the interfaces) apply. */
  readonly live: boolean;
  readonly signal: AbortSignal | undefined;
  readonly run: RunCommand;
}

/** `root` joined with an absolute in-system path such as `/sys/block`. */
export function at(ctx: SourceContext, systemPath: string, ...more: string[]): string {
  return path.join(ctx.root, systemPath, ...more);
}

/** A file's whole text, or undefined. Sysfs answers EINVAL for attributes that do not apply right now (a down NIC's speed). */
export async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch {
    return undefined;
  }
}

/** A sysfs-style attribute: trimmed, and undefined when unreadable or empty. */
export async function readAttr(file: string): Promise<string | undefined> {
  const text = await readText(file);
  const value = text?.trim();
  return value ? value : undefined;
}

/** A file's bytes, or undefined (binary sysfs attributes such as `vpd_pg80`). */
export async function readBytes(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch {
    return undefined;
  }
}

/** An attribute read as a decimal integer, or undefined. */
export async function readInt(file: string): Promise<number | undefined> {
  const value = await readAttr(file);
  if (value === undefined || !/^-?\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A directory's entries, sorted so the inventory's order does not depend on the filesystem; [] when absent. */
export async function listDir(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((name) => !name.startsWith(".")).sort(compareNatural);
  } catch {
    return [];
  }
}

/** The last path component of a symlink's target (`…/drivers/igb` → `igb`), or undefined. */
export async function linkName(file: string): Promise<string | undefined> {
  try {
    return path.basename(await readlink(file));
  } catch {
    return undefined;
  }
}

/** True when the path exists (following symlinks). */
export async function exists(file: string): Promise<boolean> {
  try {
    await access(file, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}

/** True when the path is a directory. */
export async function isDirectory(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The resolved path of `file` as seen from inside the root (`/sys/devices/pci…/nvme0n1`), or
 * undefined. Relative to the root so that the root's own location never leaks into a
 * match on the path (a fixture under `/tmp/usb-tests` is not a USB disk).
 */
export async function realSystemPath(ctx: SourceContext, file: string): Promise<string | undefined> {
  try {
    const real = await realpath(file);
    const rel = path.relative(ctx.root, real);
    return rel.startsWith("..") ? undefined : `/${rel}`;
  } catch {
    return undefined;
  }
}

/**
 * True when this process can open `file` for reading. Opening a block device reads nothing
 * from it; it tells whether lsblk, running as this same user, could have probed its content.
 */
export async function canOpen(file: string): Promise<boolean> {
  try {
    const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
    await handle.close();
    return true;
  } catch {
    return false;
  }
}

/** Orders `sda2` before `sda10` and `cpu2` before `cpu10`. */
export function compareNatural(a: string, b: string): number {
  return a.localeCompare(b, "en", { numeric: true });
}

/**
 * Runs the real tool. A timeout, because a dying disk can make lsblk hang in a probe and
 * the inventory must still come back; `LC_ALL=C` so nothing localised leaks into values.
 */
export const defaultRunCommand: RunCommand = (file, args, options) =>
  new Promise((resolve, reject) => {
    execFile(
      file,
      [...args],
      {
        signal: options.signal,
        timeout: 15_000,
        maxBuffer: 64 * 1024 * 1024,
        encoding: "utf8",
        env: { ...process.env, LC_ALL: "C" },
      },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });

/** The recorded output a fixture root may hold for each command the inventory runs. */
const RECORDED: Record<string, string> = {
  "lsblk --json --bytes --output-all": "lsblk.json",
  "ip -json addr": "ip-addr.json",
  "ip -json route": "ip-route.json",
  "timedatectl show -p NTPSynchronized --value": "timedatectl-ntp.txt",
};

/**
 * The runner used with a root other than `/`: it answers from the files recorded in the
 * root and never runs the real tool, which would describe this host instead of the root.
 * A missing recording behaves like a missing tool.
 */
export function recordedRunCommand(root: string): RunCommand {
  return async (file, args, options) => {
    if (options.signal?.aborted) throw abortReason(options.signal);
    const name = RECORDED[[file, ...args].join(" ")];
    if (!name) throw Object.assign(new Error(`no recording for ${file}`), { code: "ENOENT" });
    return readFile(path.join(root, name), { encoding: "utf8", signal: options.signal });
  };
}

/**
 * A tool's JSON output, or undefined when the tool is missing, fails, times out or prints
 * something that is not JSON (an iproute2 too old for `-json`). An abort of the caller's
 * signal is re-thrown as the signal's reason.
 */
export async function runJson(ctx: SourceContext, file: string, args: readonly string[]): Promise<unknown> {
  let output: string;
  try {
    output = await ctx.run(file, args, ctx.signal ? { signal: ctx.signal } : {});
  } catch {
    if (ctx.signal?.aborted) throw abortReason(ctx.signal);
    return undefined;
  }
  if (ctx.signal?.aborted) throw abortReason(ctx.signal);
  try {
    return JSON.parse(output) as unknown;
  } catch {
    return undefined;
  }
}

/** Drops the keys whose value is undefined, so the inventory serialises without holes and compares exactly. */
export function compact<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}

/** A JSON value as a plain object, or undefined. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** A JSON value as a trimmed non-empty string, or undefined. */
export function asString(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  return text ? text : undefined;
}

/** A JSON value as a boolean; older lsblk prints `"1"`/`"0"` where newer prints `true`/`false`. */
export function asBool(value: unknown): boolean | undefined {
  if (typeof value === "boolean") return value;
  if (value === 1 || value === "1") return true;
  if (value === 0 || value === "0") return false;
  return undefined;
}

/** A JSON value as a safe integer; older lsblk prints sizes as strings even with `--bytes`. */
export function asInt(value: unknown): number | undefined {
  const n =
    typeof value === "number" ? value : typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : NaN;
  return Number.isSafeInteger(n) ? n : undefined;
}
