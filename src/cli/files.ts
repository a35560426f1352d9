/**
 * The machine directory (`--identity DIR`) is the library's
 * (`openMachineDirectory`, src/node/machine-dir.ts): `cert.pem` (0644) and `key.pem` (0600),
 * the machine identity; `session.json`, the join session stage 2 needs; `release/<version>/`,
 * a downloaded release; `delivery/`, the delivery. Plus reading and writing the files named on
 * the command line, each failure a `FILE_ERROR` naming the file (never its content).
 * @module
 */

import { readFile } from "node:fs/promises";
import type { MachineIdentity } from "../node/identity.js";
import type { JoinSession } from "../node/join-session.js";
import {
  MACHINE_DIRECTORY_FILES,
  openMachineDirectory,
  readSessionFile,
  writeSessionFile,
  type MachineDirectory,
} from "../node/machine-dir.js";
import { errorCode, writeFileDurably } from "../fs/durable.js";
import { CliError } from "../errors/cli.js";

/** File names inside the machine directory (`MACHINE_DIRECTORY_FILES` of `@stratum/join/node`). */
export const MACHINE_DIR_FILES = MACHINE_DIRECTORY_FILES;

/** Reads a text file named on the command line; a missing or unreadable file is `FILE_ERROR`. */
export async function readTextFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (cause) {
    throw new CliError(
      "FILE_ERROR",
      `cannot read the ${what} ${path}: ${(cause as NodeJS.ErrnoException).code ?? "error"}`,
      { cause },
    );
  }
}

/** Reads and parses a JSON file named on the command line. */
export async function readJsonFile(path: string, what: string): Promise<unknown> {
  const text = await readTextFile(path, what);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CliError("FILE_ERROR", `the ${what} ${path} is not valid JSON`);
  }
}

/**
 * Writes `content` to `path` with `mode`, durably (see `writeFileDurably`). With `exclusive`,
 * an existing `path` is refused rather than replaced. Failures are `FILE_ERROR` naming the file.
 */
export async function writeFileAtomic(
  path: string,
  content: string,
  mode: number,
  options: { exclusive?: boolean } = {},
): Promise<void> {
  try {
    await writeFileDurably(path, content, { mode, exclusive: options.exclusive ?? false });
  } catch (cause) {
    if (errorCode(cause) === "EEXIST") throw new CliError("FILE_ERROR", `${path} already exists; not overwriting it`);
    throw new CliError("FILE_ERROR", `cannot write ${path}: ${errorCode(cause) ?? (cause as Error).message}`, {
      cause,
    });
  }
}

/** The machine identity of `dir`, and whether it was created by this call. */
export interface OpenedMachineDir {
  identity: MachineIdentity;
  created: boolean;
  dir: string;
  /** The opened machine directory (its session, release and delivery paths). */
  machine: MachineDirectory;
}

/**
 * Loads the identity of `dir`, or, with `create` and neither file present, makes a new one
 * there: `openMachineDirectory` of `@stratum/join/node`, the one layout the library, the CLI
 * and the demo share.
 */
export async function openMachineDir(
  dir: string,
  options: { create: boolean; warn?: (text: string) => void },
): Promise<OpenedMachineDir> {
  const machine = await openMachineDirectory(dir, {
    create: options.create,
    ...(options.warn ? { onWarning: options.warn } : {}),
  });
  return { identity: machine.identity, created: machine.created, dir, machine };
}

/** Saves the join session as `DIR/session.json` (public content, 0644); returns its path. */
export function saveSession(dir: string, session: JoinSession): Promise<string> {
  return writeSessionFile(dir, session);
}

/**
 * Reads `DIR/session.json` before the identity is opened, so that a directory that never
 * registered says `JOIN_SESSION_MISSING` first; `JOIN_SESSION_INVALID` when it is tampered
 * with or broken.
 */
export function readSession(dir: string): Promise<JoinSession> {
  return readSessionFile(dir);
}
