/**
 * What the machine keeps of its delivery: a secret the installer named no home for, a home that
 * cannot work or failed, and the TPM the OpenBao unseal key is sealed to. Messages name the
 * fields and the paths, never a secret's value.
 * @module
 */
import { StratumError } from "./stratum-error.js";

/** The codes a {@link SecretDestinationError} carries. */
export type SecretDestinationErrorCode =
  /** The delivery carries secrets the installer named no destination for (`fields`). Nothing was written. */
  | "SECRET_DESTINATION_MISSING"
  /** A destination can never work (a relative path, an env name that is not one, two fields on one file, the unseal key to a plaintext file). Nothing was written. */
  | "SECRET_DESTINATION_INVALID"
  /** A destination failed while it was written (`fields` names the field): no partial secret is left there; `placed` lists the fields already in their homes. */
  | "SECRET_DESTINATION_FAILED";

/**
 * A secret of the delivery that has no home, or whose home cannot take it
 * (docs/protocol.md#machine-keeps). Branch on `code`; `fields` names the bundle fields concerned.
 */
export class SecretDestinationError extends StratumError {
  /** Which of the three failures. */
  declare readonly code: SecretDestinationErrorCode;
  /** The bundle fields concerned (`delivery.<name>` for a field of the delivery itself), sorted. */
  readonly fields: readonly string[];
  /** With `SECRET_DESTINATION_FAILED`: the fields already written to their destinations before the failure. */
  readonly placed: readonly string[];

  constructor(
    code: SecretDestinationErrorCode,
    message: string,
    options: { fields: readonly string[]; placed?: readonly string[]; cause?: unknown },
  ) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SecretDestinationError";
    this.fields = [...options.fields].sort();
    this.placed = [...(options.placed ?? [])];
  }
}

/**
 * Why the TPM could not be used:
 * - `absent`: no TPM here (no `TPM2TOOLS_TCTI`, no `/dev/tpmrm0`);
 * - `tools-missing`: tpm2-tools is not installed (`tpm2_createprimary` not found);
 * - `unreachable`: the TPM named (the device, or `TPM2TOOLS_TCTI`) did not answer or refused access;
 * - `foreign`: the sealed file was sealed by another TPM (or the TPM was cleared since): it cannot be unsealed here;
 * - `malformed`: the file is not a sealed secret of this SDK;
 * - `failed`: a TPM command failed otherwise (the message carries the tool's words).
 */
export type TpmErrorReason = "absent" | "tools-missing" | "unreachable" | "foreign" | "malformed" | "failed";

/**
 * The TPM could not seal or unseal a secret (`code` `TPM_UNAVAILABLE` for `absent`,
 * `tools-missing` and `unreachable`, else `TPM_FAILED`). Nothing is ever written in plaintext
 * instead, unless the installer named the plaintext fallback.
 */
export class TpmError extends StratumError {
  /** `TPM_UNAVAILABLE`: no TPM can be used here; `TPM_FAILED`: the TPM refused or failed the operation. */
  declare readonly code: "TPM_UNAVAILABLE" | "TPM_FAILED";
  /** What went wrong; see {@link TpmErrorReason}. */
  readonly reason: TpmErrorReason;

  constructor(reason: TpmErrorReason, message: string, options?: { cause?: unknown }) {
    const unavailable = reason === "absent" || reason === "tools-missing" || reason === "unreachable";
    super(unavailable ? "TPM_UNAVAILABLE" : "TPM_FAILED", message, options);
    this.name = "TpmError";
    this.reason = reason;
  }
}
