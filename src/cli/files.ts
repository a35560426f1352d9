/**
 * The joiner's directory (`--identity DIR`): `cert.pem` (0644) and `key.pem` (0600), the
 * machine identity; `session.json`, the join session stage 2 needs; `release/<version>/`, a
 * downloaded release; `delivery/`, the delivery. Plus reading the files named on the command
 * line, each failure a `FILE_ERROR` naming the file (never its content).
 * @module
 */

import { chmod, lstat, mkdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { createMachineIdentity, loadMachineIdentity, type MachineIdentity } from "../node/identity.js";
import { parseJoinSession, serializeJoinSession, type JoinSession } from "../node/join-session.js";
import { errorCode, writeFileDurably } from "../fs/durable.js";
import { CliError } from "./args.js";

/** File names inside the identity directory. */
export const IDENTITY_FILES = {
  cert: "cert.pem",
  key: "key.pem",
  session: "session.json",
  release: "release",
  delivery: "delivery",
} as const;

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

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/**
 * A `FILE_ERROR` when `dir` exists and is not a directory (a file given as `--identity`),
 * rather than what creating or reading inside it would say (`EEXIST`, `ENOTDIR`).
 */
async function assertDirectory(dir: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (info && !info.isDirectory())
    throw new CliError("FILE_ERROR", `${dir} is not a directory: --identity names the machine's directory`);
}

/** The machine identity of `dir`, and whether it was created by this call. */
export interface IdentityDir {
  identity: MachineIdentity;
  created: boolean;
  dir: string;
}

/**
 * Loads the identity of `dir`, or, with `create` and neither file present, makes a new one
 * there (the directory 0700, `key.pem` 0600, `cert.pem` 0644). One file without the other is
 * refused: a half-written identity is not silently replaced by a new key, which would orphan
 * the registration pinned to the old one.
 */
export async function openIdentityDir(
  dir: string,
  options: { create: boolean; warn?: (text: string) => void },
): Promise<IdentityDir> {
  const certPath = join(dir, IDENTITY_FILES.cert);
  const keyPath = join(dir, IDENTITY_FILES.key);
  await assertDirectory(dir);
  const [hasCert, hasKey] = await Promise.all([exists(certPath), exists(keyPath)]);
  if (!hasCert && !hasKey) {
    if (!options.create)
      throw new CliError("FILE_ERROR", `${dir} holds no machine identity (cert.pem, key.pem): run register first`);
    try {
      await mkdir(dir, { recursive: true, mode: 0o700 });
    } catch (cause) {
      throw new CliError("FILE_ERROR", `cannot create ${dir}: ${(cause as NodeJS.ErrnoException).code ?? "error"}`, {
        cause,
      });
    }
    const identity = await createMachineIdentity();
    // Key first: a crash between the two leaves key.pem without cert.pem, which is refused
    // below rather than mistaken for an empty directory.
    await writeFileAtomic(keyPath, identity.keyPem, 0o600, { exclusive: true });
    await writeFileAtomic(certPath, identity.certPem, 0o644, { exclusive: true });
    return { identity, created: true, dir };
  }
  if (!hasCert || !hasKey) {
    throw new CliError(
      "FILE_ERROR",
      `${dir} holds ${hasKey ? "key.pem but no cert.pem" : "cert.pem but no key.pem"}: an incomplete identity; restore the missing file or use an empty directory`,
    );
  }
  const keyMode = (await lstat(keyPath)).mode & 0o777;
  if (keyMode & 0o077) {
    options.warn?.(
      `${keyPath} is readable by others (mode ${keyMode.toString(8).padStart(4, "0")}); tightening it to 0600`,
    );
    await chmod(keyPath, 0o600).catch(() => undefined);
  }
  const identity = loadMachineIdentity({
    certPem: await readTextFile(certPath, "certificate"),
    keyPem: await readTextFile(keyPath, "private key"),
  });
  return { identity, created: false, dir };
}

/** Saves the join session as `DIR/session.json` (public content, 0644); returns its path. */
export async function saveSession(dir: string, session: JoinSession): Promise<string> {
  const path = join(dir, IDENTITY_FILES.session);
  await writeFileAtomic(path, serializeJoinSession(session), 0o644);
  return path;
}

/** Reads `DIR/session.json`; `JOIN_SESSION_MISSING` when there is none, `JOIN_SESSION_INVALID` when it is tampered with or broken. */
export async function readSession(dir: string): Promise<JoinSession> {
  await assertDirectory(dir);
  const path = join(dir, IDENTITY_FILES.session);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "ENOENT") {
      throw new CliError(
        "JOIN_SESSION_MISSING",
        `${path} does not exist: this machine has not registered yet (run register)`,
      );
    }
    throw new CliError("FILE_ERROR", `cannot read ${path}: ${(cause as NodeJS.ErrnoException).code ?? "error"}`, {
      cause,
    });
  }
  return parseJoinSession(text);
}
