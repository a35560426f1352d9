/**
 * Sealing a secret to this machine's TPM, and unsealing it: how the OpenBao unseal key is kept
 * (docs/protocol.md#machine-keeps), and what the boot-time unseal service calls.
 *
 * Why tpm2-tools, run as processes, rather than `systemd-creds --with-key=tpm2` or a library:
 * - It reaches the TPM as every tpm2 tool does, the TCTI of `TPM2TOOLS_TCTI` when set (a
 *   software TPM in tests, `swtpm:host=…,port=…`), else the kernel's resource manager
 *   `/dev/tpmrm0`, so an operator's own `tpm2_*` commands and this SDK agree on the TPM. systemd-creds takes a device path of its own and
 *   needs systemd 250 or later, which a bare installer image may not have (an initramfs or a
 *   live image without systemd as PID 1); tpm2-tools needs only itself and the tss2 libraries.
 * - Its blobs are the TPM's own (a marshalled TPM2B_PUBLIC and TPM2B_PRIVATE under the standard
 *   storage root key template): any TSS can load them, so the boot-time service may be a shell
 *   unit running `tpm2_load` and `tpm2_unseal` (docs show it), not only this SDK.
 *   systemd-creds's format is its own, and it binds PCR 7 by default, so a Secure Boot
 *   database update (fwupd applies them) would lock OpenBao out after the next reboot.
 * - No npm package speaks TPM 2.0 over both a device and the swtpm socket protocol with the
 *   sessions a TPM needs; writing one would put a TSS in this SDK.
 *
 * The secret reaches tpm2_create on its standard input and never touches the disk; the files
 * in the private temporary directory are the TPM's context and sealed blobs, which only this
 * TPM can open. Without a kernel resource manager (a TCTI straight to a TPM or a simulator)
 * loaded objects stay loaded after a tool exits and the TPM runs out of its three object
 * slots, so transient objects are flushed before and after each step.
 * @module
 */
import { constants as fsc } from "node:fs";
import { access, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StratumError, TimeoutError, TpmError } from "../errors/index.js";
import { errorCode } from "../fs/durable.js";
import { runWithStdin } from "./stdin-command.js";

/** Where the TPM is, and how long to wait for it. */
export interface TpmOptions {
  /**
   * The TPM, as a tpm2-tools TCTI: `device:/dev/tpmrm0`, `swtpm:host=127.0.0.1,port=2321`, …
   * Default: `TPM2TOOLS_TCTI` when set, else `device:/dev/tpmrm0` when that device exists.
   */
  tcti?: string | undefined;
  /** Stops the TPM's tools and rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Deadline of one seal or unseal, in ms (default 30 000). */
  timeoutMs?: number | undefined;
}

/** What {@link unsealSecret} read. */
export interface UnsealedSecret {
  /** The bundle field the file holds (`openBaoUnsealKey`). */
  readonly field: string;
  /** False when the file is the plaintext fallback an installer asked for on a machine without a TPM. */
  readonly sealed: boolean;
  /** The secret. Not enumerable: absent from `util.inspect`, `JSON.stringify` and spreads. */
  readonly value: string;
}

/** The format names of the files this module writes. */
export const SEALED_FORMAT = "stratum-join/tpm-sealed/v1";
/** The plaintext fallback's format name (a machine without a TPM, asked for by name). */
export const PLAINTEXT_FORMAT = "stratum-join/plaintext/v1";

// The storage root key template of the TCG's provisioning guidance (ECC P-256, AES-128-CFB,
// SHA-256, restricted decrypt, noDA), under the owner hierarchy: the same TPM makes the same
// parent every time, from its owner seed, so nothing of it is stored; another TPM (or this one
// after a clear) makes another parent, under which the blob fails its integrity check.
const PARENT = "owner/ecc256:aes128cfb/sha256";
const PARENT_ARGS = [
  "-C",
  "o",
  "-G",
  "ecc256:aes128cfb",
  "-g",
  "sha256",
  "-a",
  "restricted|decrypt|fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda",
];
// The sealed object: no auth value and no PCR policy, so the boot-time service unseals with no
// person, and a firmware update does not lock the cluster's OpenBao out. noDA: a wrong attempt
// elsewhere never locks it.
const SEALED_ATTRIBUTES = "fixedtpm|fixedparent|userwithauth|noda";
// A TPM2B_SENSITIVE_DATA holds at most 128 bytes (MAX_SYM_DATA).
const MAX_SEALED_BYTES = 128;
const DEFAULT_TIMEOUT_MS = 30_000;
const KERNEL_RM = "/dev/tpmrm0";

/**
 * The TCTI to use: the option, `TPM2TOOLS_TCTI`, or the kernel's resource manager.
 * @throws TpmError `absent` when none is set and `/dev/tpmrm0` does not exist
 */
export async function resolveTcti(options: Pick<TpmOptions, "tcti"> = {}): Promise<string> {
  const named = options.tcti || process.env.TPM2TOOLS_TCTI;
  if (named) return named;
  try {
    await access(KERNEL_RM, fsc.F_OK);
    return `device:${KERNEL_RM}`;
  } catch {
    throw new TpmError("absent", `no TPM: ${KERNEL_RM} does not exist and TPM2TOOLS_TCTI is not set`);
  }
}

/** One step's tool, run against the TPM; its stdout. */
type Tool = (name: string, args: readonly string[], input?: string) => Promise<Buffer>;

/** Runs `work` with a private temporary directory and a tool runner bound to the TPM, flushing around it. */
async function withTpm<T>(options: TpmOptions, work: (tool: Tool, dir: string) => Promise<T>): Promise<T> {
  const tcti = await resolveTcti(options);
  const deadline = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const dir = await mkdtemp(join(tmpdir(), "stratum-tpm-"));
  const tool: Tool = async (name, args, input = "") => {
    let result;
    try {
      result = await runWithStdin([name, ...args], input, {
        env: { TPM2TOOLS_TCTI: tcti },
        signal,
        timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        what: `the TPM (${name})`,
      });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (deadline.aborted || error instanceof TimeoutError)
        throw new TimeoutError(
          `the TPM (${tcti}) did not answer within ${(options.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000} s`,
        );
      if (errorCode(error) === "ENOENT")
        throw new TpmError(
          "tools-missing",
          `tpm2-tools is not installed (${name} not found); install it (Debian: apt-get install tpm2-tools)`,
          { cause: error },
        );
      throw error;
    }
    if (result.exitCode !== 0) throw toolFailure(name, tcti, result.stderr.replaceAll(dir, "…"));
    return result.stdout;
  };
  const flush = () => tool("tpm2_flushcontext", ["-t"]);
  try {
    await flush();
    return await work(tool, dir);
  } finally {
    await flush().catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** A tool's failure as a TpmError, with the tool's own last words (they never carry the secret). */
function toolFailure(name: string, tcti: string, stderr: string): TpmError {
  const words = stderr
    .split("\n")
    .filter((line) => /^ERROR/.test(line))
    .slice(-2)
    .map((line) => line.replace(/^ERROR:\s*/, "").trim())
    .join("; ");
  if (/Could not load tcti|Failed to instantiate TCTI|Cannot connect|Permission denied/i.test(stderr))
    return new TpmError("unreachable", `the TPM ${tcti} cannot be reached: ${words || name + " failed"}`);
  if (/0x1df|0x000001df|integrity check failed/i.test(stderr))
    return new TpmError(
      "foreign",
      "the secret was sealed by another TPM (or this TPM was cleared since): this machine's TPM cannot unseal it",
    );
  return new TpmError("failed", `${name} failed against ${tcti}: ${words || "no message"}`);
}

/** The parent key, made again from the TPM's owner seed, saved as `primary.ctx`. */
async function makeParent(tool: Tool, dir: string): Promise<string> {
  const ctx = join(dir, "primary.ctx");
  await tool("tpm2_createprimary", ["-Q", ...PARENT_ARGS, "-c", ctx]);
  return ctx;
}

/**
 * Unseals the blobs with this TPM, under `parent` (a saved context of the parent key; made
 * again from the owner seed when not given).
 */
async function unsealBlobs(
  tool: Tool,
  dir: string,
  publicBlob: Buffer,
  privateBlob: Buffer,
  parent?: string,
): Promise<Buffer> {
  const pub = join(dir, "sealed.pub");
  const priv = join(dir, "sealed.priv");
  await writeFile(pub, publicBlob, { mode: 0o600 });
  await writeFile(priv, privateBlob, { mode: 0o600 });
  parent ??= await makeParent(tool, dir);
  const sealed = join(dir, "sealed.ctx");
  await tool("tpm2_load", ["-Q", "-C", parent, "-u", pub, "-r", priv, "-c", sealed]);
  await tool("tpm2_flushcontext", ["-t"]);
  return tool("tpm2_unseal", ["-c", sealed]);
}

/**
 * Seals `secret` to this machine's TPM, in memory, and returns the sealed file's text (JSON:
 * the format, the field, the parent template and the TPM's two blobs, base64). The blob is
 * unsealed once before it is returned: a seal that this TPM cannot open again never replaces a
 * secret that exists nowhere else.
 * @throws TpmError (`absent`, `tools-missing`, `unreachable`, `failed`); StratumError
 *   `INVALID_ARGUMENT` for a secret over 128 bytes (a TPM seals no more); TimeoutError; the
 *   signal's reason
 */
export async function sealToTpm(field: string, secret: string, options: TpmOptions = {}): Promise<string> {
  const bytes = Buffer.from(secret, "utf8");
  if (bytes.length > MAX_SEALED_BYTES)
    throw new StratumError(
      "INVALID_ARGUMENT",
      `${field} is ${bytes.length} bytes: a TPM seals at most ${MAX_SEALED_BYTES}; give it another destination`,
    );
  return withTpm(options, async (tool, dir) => {
    const parent = await makeParent(tool, dir);
    const pub = join(dir, "new.pub");
    const priv = join(dir, "new.priv");
    await tool(
      "tpm2_create",
      ["-Q", "-C", parent, "-g", "sha256", "-a", SEALED_ATTRIBUTES, "-i", "-", "-u", pub, "-r", priv],
      secret,
    );
    await tool("tpm2_flushcontext", ["-t"]);
    const [publicBlob, privateBlob] = await Promise.all([readFile(pub), readFile(priv)]);
    // The parent's saved context loads again after the flush: no second key derivation.
    const back = await unsealBlobs(tool, dir, publicBlob, privateBlob, parent);
    if (!back.equals(bytes)) throw new TpmError("failed", `the TPM did not unseal ${field} to what it sealed`);
    const document = {
      format: SEALED_FORMAT,
      field,
      parent: PARENT,
      public: publicBlob.toString("base64"),
      private: privateBlob.toString("base64"),
    };
    return `${JSON.stringify(document, null, 2)}\n`;
  });
}

/** The plaintext fallback's file text: the installer asked for it by name, on a machine without a TPM. */
export function plaintextDocument(field: string, secret: string): string {
  const document = {
    format: PLAINTEXT_FORMAT,
    field,
    note: "not sealed: this machine had no TPM, and its installer asked for plaintext instead",
    value: secret,
  };
  return `${JSON.stringify(document, null, 2)}\n`;
}

function unsealed(field: string, sealed: boolean, value: string): UnsealedSecret {
  const result = { field, sealed } as UnsealedSecret;
  Object.defineProperty(result, "value", { value, enumerable: false });
  return result;
}

/**
 * Unseals a secret sealed by this SDK (a `{ tpm: FILE }` destination of `writeDelivery`) with
 * this machine's TPM: what the boot-time unseal service runs on every boot
 * (`stratum-join unseal FILE` is the same from a shell). A plaintext fallback file is read as
 * it is, with `sealed: false`.
 * @throws TpmError `malformed` (not such a file), `foreign` (sealed by another TPM, or this one
 *   was cleared), `absent`, `tools-missing`, `unreachable`, `failed`; StratumError `FILE_ERROR`
 *   when the file cannot be read; TimeoutError; the signal's reason
 */
export async function unsealSecret(path: string, options: TpmOptions = {}): Promise<UnsealedSecret> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (cause) {
    throw new StratumError("FILE_ERROR", `cannot read ${path}: ${errorCode(cause) ?? (cause as Error).message}`, {
      cause,
    });
  }
  const document = parseSealed(path, text);
  if (document.format === PLAINTEXT_FORMAT) return unsealed(document.field, false, document.value!);
  const bytes = await withTpm(options, (tool, dir) =>
    unsealBlobs(tool, dir, Buffer.from(document.public!, "base64"), Buffer.from(document.private!, "base64")),
  );
  return unsealed(document.field, true, bytes.toString("utf8"));
}

interface SealedDocument {
  format: string;
  field: string;
  parent?: string;
  public?: string;
  private?: string;
  value?: string;
}

function parseSealed(path: string, text: string): SealedDocument {
  let document: Partial<SealedDocument> | undefined;
  try {
    document = JSON.parse(text) as Partial<SealedDocument>;
  } catch {
    document = undefined;
  }
  const base64 = (value: unknown) => typeof value === "string" && /^[A-Za-z0-9+/]+={0,2}$/.test(value);
  const ok =
    typeof document === "object" &&
    document !== null &&
    typeof document.field === "string" &&
    ((document.format === SEALED_FORMAT &&
      document.parent === PARENT &&
      base64(document.public) &&
      base64(document.private)) ||
      (document.format === PLAINTEXT_FORMAT && typeof document.value === "string"));
  if (!ok) throw new TpmError("malformed", `${path} is not a secret sealed by ${SEALED_FORMAT}`);
  return document as SealedDocument;
}
