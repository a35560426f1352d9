/**
 * The machine directory: the one place a joining machine keeps its state on disk, laid out the
 * same way by the installer's two stages, the `stratum-join` CLI (`--identity DIR`) and the demo:
 *
 * ```text
 * DIR/                 0700 when this module creates it
 *   cert.pem           0644  the machine identity's self-signed certificate
 *   key.pem            0600  its private key: the registration is pinned to it
 *   session.json       0644  the join session (public), what stage 2 reads after a reboot
 *   release/<version>/       a release downloaded by the self-upgrade
 *   delivery/                the delivery's public files and the node key (every file 0600;
 *                            no other secret: they go where the installer says, see writeDelivery)
 * ```
 *
 * Why one directory and not a path per file: stage 2 must find exactly the key stage 1
 * registered with, and a key lost or replaced orphans the registration (the founder pins it to
 * the key's fingerprint). Keeping the key beside its session, and refusing a half-written
 * identity instead of making a new key, is what prevents that.
 * @module
 */
import { chmod, lstat, mkdir, readFile, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { IdentityError, StratumError } from "../errors/index.js";
import { errorCode, fsyncDir, writeFileDurably } from "../fs/durable.js";
import { createMachineIdentity, loadMachineIdentity, type MachineIdentity } from "./identity.js";
import { parseJoinSession, serializeJoinSession, type JoinSession } from "./join-session.js";

/**
 * File names inside the machine directory.
 * @internal
 */
export const MACHINE_DIRECTORY_FILES = {
  cert: "cert.pem",
  key: "key.pem",
  session: "session.json",
  release: "release",
  delivery: "delivery",
} as const;

/**
 * A release name usable as a directory name. It comes from the cluster (`upgrade.to`) and
 * becomes `DIR/release/<version>`, so a name with a slash or a leading dot must never reach
 * the file system; 64 characters is far beyond any version string.
 * @internal
 */
export const SAFE_RELEASE_NAME = /^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$/;

/** Options of {@link openMachineDirectory}. */
export interface OpenMachineDirectoryOptions {
  /**
   * Make a new identity when the directory holds none (creating the directory, 0700, if it does
   * not exist). Default `false`: stage 2, which must go on with the key stage 1 registered,
   * never makes one by accident.
   */
  create?: boolean | undefined;
  /**
   * Told of what was fixed on the way, e.g. a `key.pem` readable by others tightened to 0600.
   * Default: nothing is said.
   */
  onWarning?: ((message: string) => void) | undefined;
}

/** An opened machine directory: its identity, and where everything else of the join goes. */
export interface MachineDirectory {
  /** The directory, as an absolute path. */
  readonly dir: string;
  /** The machine identity read from (or just written to) `cert.pem` and `key.pem`. */
  readonly identity: MachineIdentity;
  /** True when this call made the identity (the directory had none). */
  readonly created: boolean;
  /** `DIR/session.json`: where {@link MachineDirectory.saveSession} writes the join session. */
  readonly sessionFile: string;
  /** `DIR/delivery`: where the delivery goes (`writeDelivery(machine.deliveryDir, delivery)`). */
  readonly deliveryDir: string;
  /**
   * `DIR/release/<version>`: where a downloaded release goes (`downloadRelease`'s `destDir`).
   * @throws StratumError `INVALID_ARGUMENT` when `version` is not a safe directory name (it
   *   comes from the cluster: a slash, a leading dot or an empty name is refused)
   */
  releaseDir(version: string): string;
  /**
   * Saves the join session as `DIR/session.json` (0644: nothing in it is secret), durably: a
   * crash leaves the old file or the new one. Returns the file's path.
   * @throws StratumError `IDENTITY_MISMATCH` when the session is pinned to another key than
   *   this directory's (stage 2 could never use it); `FILE_ERROR` when it cannot be written
   */
  saveSession(session: JoinSession): Promise<string>;
  /**
   * Reads `DIR/session.json` back, checked (shape, endpoint, the CA against its fingerprint)
   * and pinned to this directory's key.
   * @throws StratumError `JOIN_SESSION_MISSING` (no session saved yet: register first),
   *   `JOIN_SESSION_INVALID` (malformed or tampered with), `IDENTITY_MISMATCH` (the session
   *   belongs to another key), `FILE_ERROR` (cannot be read)
   */
  readSession(): Promise<JoinSession>;
}

/** A file-system failure as the SDK reports it: `FILE_ERROR`, naming the path and the errno, never the content. */
function fileError(what: string, cause: unknown): StratumError {
  return new StratumError("FILE_ERROR", `${what}: ${errorCode(cause) ?? (cause as Error).message}`, { cause });
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (cause) {
    if (errorCode(cause) === "ENOENT") return false;
    throw fileError(`cannot read ${path}`, cause);
  }
}

/**
 * Refuses a `dir` that exists and is not a directory, with a message that says so rather than
 * what creating or reading inside it would say (`EEXIST`, `ENOTDIR`). A missing `dir` passes.
 * @internal
 */
export async function assertMachineDirectory(dir: string): Promise<void> {
  let info;
  try {
    info = await stat(dir);
  } catch (cause) {
    if (errorCode(cause) === "ENOENT") return;
    throw fileError(`cannot read ${dir}`, cause);
  }
  if (!info.isDirectory())
    throw new StratumError("FILE_ERROR", `${dir} is not a directory: a machine directory holds cert.pem, key.pem, …`);
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (cause) {
    throw fileError(`cannot read the ${what} ${path}`, cause);
  }
}

async function write(path: string, content: string, mode: number, exclusive: boolean): Promise<void> {
  try {
    await writeFileDurably(path, content, { mode, exclusive });
  } catch (cause) {
    if (errorCode(cause) === "EEXIST")
      throw new StratumError("FILE_ERROR", `${path} already exists; not overwriting it`, { cause });
    throw fileError(`cannot write ${path}`, cause);
  }
}

/** Makes a new identity in `dir` (created 0700 if missing). */
async function createIdentity(dir: string, certPath: string, keyPath: string): Promise<MachineIdentity> {
  let made: string | undefined;
  try {
    made = await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (cause) {
    throw fileError(`cannot create ${dir}`, cause);
  }
  // A directory made now must itself survive a crash, or the key written into it is lost with it.
  if (made !== undefined) await fsyncDir(dirname(made)).catch(() => undefined);
  const identity = await createMachineIdentity();
  // Key first: a crash between the two leaves key.pem without cert.pem, which is refused as a
  // half identity rather than mistaken for an empty directory and silently replaced.
  await write(keyPath, identity.keyPem, 0o600, true);
  await write(certPath, identity.certPem, 0o644, true);
  return identity;
}

/** Loads the identity of `dir`, tightening a `key.pem` readable by others. */
async function loadIdentity(
  certPath: string,
  keyPath: string,
  onWarning: ((message: string) => void) | undefined,
): Promise<MachineIdentity> {
  let keyMode: number;
  try {
    keyMode = (await lstat(keyPath)).mode & 0o777;
  } catch (cause) {
    throw fileError(`cannot read ${keyPath}`, cause);
  }
  if (keyMode & 0o077) {
    onWarning?.(
      `${keyPath} is readable by others (mode ${keyMode.toString(8).padStart(4, "0")}); tightening it to 0600`,
    );
    await chmod(keyPath, 0o600).catch(() => undefined);
  }
  return loadMachineIdentity({
    certPem: await readText(certPath, "certificate"),
    keyPem: await readText(keyPath, "private key"),
  });
}

/**
 * Opens a machine directory: loads its identity (`cert.pem`, `key.pem`), or, with `create` and
 * neither file there, makes a new one (the directory 0700, `key.pem` 0600, `cert.pem` 0644,
 * each written durably). One file without the other is refused, never replaced: a new key would
 * orphan the registration pinned to the old one.
 *
 * ```ts
 * const machine = await openMachineDirectory("/var/lib/stratum-join", { create: true });
 * const { session } = await registerMachine({ url, identity: machine.identity, release });
 * await machine.saveSession(session);
 * // stage 2, after a reboot:
 * const again = await openMachineDirectory("/var/lib/stratum-join");
 * const saved = await again.readSession();
 * ```
 * @throws StratumError `FILE_ERROR` when `dir` is not a directory, holds only one of
 *   `cert.pem` and `key.pem`, or cannot be read, created or written (the message names the path
 *   and the errno); IdentityError (`IDENTITY_INVALID`) when it holds no identity and `create` is
 *   not set, or the files are not a usable key and its certificate
 */
export async function openMachineDirectory(
  dir: string,
  options: OpenMachineDirectoryOptions = {},
): Promise<MachineDirectory> {
  const root = resolve(dir);
  const certPath = join(root, MACHINE_DIRECTORY_FILES.cert);
  const keyPath = join(root, MACHINE_DIRECTORY_FILES.key);
  await assertMachineDirectory(root);
  const [hasCert, hasKey] = await Promise.all([exists(certPath), exists(keyPath)]);
  let identity: MachineIdentity;
  let created = false;
  if (!hasCert && !hasKey) {
    if (!options.create) {
      throw new IdentityError(
        `${root} holds no machine identity (cert.pem and key.pem); open it with create to make one`,
      );
    }
    identity = await createIdentity(root, certPath, keyPath);
    created = true;
  } else if (!hasCert || !hasKey) {
    throw new StratumError(
      "FILE_ERROR",
      `${root} holds ${hasKey ? "key.pem but no cert.pem" : "cert.pem but no key.pem"}: an incomplete identity; restore the missing file or use an empty directory`,
    );
  } else {
    identity = await loadIdentity(certPath, keyPath, options.onWarning);
  }
  return machineDirectory(root, identity, created);
}

function machineDirectory(root: string, identity: MachineIdentity, created: boolean): MachineDirectory {
  const sessionFile = join(root, MACHINE_DIRECTORY_FILES.session);
  const pinnedHere = (session: JoinSession) => {
    if (session.keyFingerprint !== identity.keyFingerprint) {
      throw new StratumError(
        "IDENTITY_MISMATCH",
        `the join session is pinned to another key (${session.keyFingerprint.slice(0, 11)}…) than the identity in ${root} (${identity.keyFingerprint.slice(0, 11)}…)`,
      );
    }
    return session;
  };
  return {
    dir: root,
    identity,
    created,
    sessionFile,
    deliveryDir: join(root, MACHINE_DIRECTORY_FILES.delivery),
    releaseDir(version) {
      if (typeof version !== "string" || !SAFE_RELEASE_NAME.test(version)) {
        throw new StratumError(
          "INVALID_ARGUMENT",
          `the release name ${JSON.stringify(String(version).slice(0, 70))} is not a safe directory name`,
        );
      }
      return join(root, MACHINE_DIRECTORY_FILES.release, version);
    },
    async saveSession(session) {
      return writeSessionFile(root, pinnedHere(session));
    },
    async readSession() {
      return pinnedHere(await readSessionFile(root));
    },
  };
}

/**
 * Writes `DIR/session.json` (0644, durably) without opening the identity; returns its path.
 * @throws StratumError `FILE_ERROR` when it cannot be written
 * @internal
 */
export async function writeSessionFile(dir: string, session: JoinSession): Promise<string> {
  const path = join(dir, MACHINE_DIRECTORY_FILES.session);
  await write(path, serializeJoinSession(session), 0o644, false);
  return path;
}

/**
 * Reads `DIR/session.json` without opening the identity (the CLI reads it first, so that a
 * directory that never registered says so before anything else).
 * @throws as {@link MachineDirectory.readSession}, without `IDENTITY_MISMATCH`
 * @internal
 */
export async function readSessionFile(dir: string): Promise<JoinSession> {
  await assertMachineDirectory(dir);
  const path = join(dir, MACHINE_DIRECTORY_FILES.session);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (cause) {
    if (errorCode(cause) === "ENOENT") {
      throw new StratumError(
        "JOIN_SESSION_MISSING",
        `${path} does not exist: this machine has not registered yet (no join session was saved)`,
      );
    }
    throw fileError(`cannot read ${path}`, cause);
  }
  return parseJoinSession(text);
}
