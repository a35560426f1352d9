/**
 * Errors of the join itself: the pinned TLS connection, the listener's certificate, the
 * channel binding, the machine identity, and a registration that ended. They extend
 * {@link StratumError}, so `StratumError.is` and the `code` branch work as everywhere else.
 * @module
 */

import type { Registration } from "../types.js";
import { StratumApiError } from "./api.js";
import { StratumError } from "./stratum-error.js";

/** The codes a {@link JoinProtocolError} carries. */
export type JoinProtocolErrorCode =
  /** `finishLogin` failed: the listener did not prove the code (mistyped, or not this cluster's listener). */
  | "LISTENER_NOT_PROVEN"
  /** The listener's TLS leaf failed a check against the pinned CA; see {@link JoinProtocolError.check}. */
  | "LISTENER_CERTIFICATE"
  /** The server's `Join-Binding` did not match the transcript: the connection is relayed or tampered with. */
  | "BINDING_MISMATCH"
  /**
   * The connection was intercepted: the listener verified this machine's proof of the code
   * (KE3) but not its channel binding (401 `JOIN_BINDING_FAILED`), so something between the
   * two terminates TLS and relays the exchange. The code itself is right. Nothing was recorded;
   * do not retry on this network path, find the relay (a TLS-inspecting proxy, a wrong route).
   */
  | "CONNECTION_INTERCEPTED"
  /** The server's pairing code differs from the one computed locally. */
  | "PAIRING_MISMATCH"
  /** The exchange would have continued over a second socket, which breaks the TLS channel binding. */
  | "CONNECTION_CHANGED"
  /** The TLS handshake failed (wrong version, alert, reset during the handshake). */
  | "TLS_FAILED";

/** Which check of the listener's certificate failed (with `LISTENER_CERTIFICATE`). */
export type ListenerCertificateCheck =
  /** The peer presented no certificate, or one that could not be parsed. */
  | "missing"
  /** The leaf is not signed by the pinned CA (directly or through one intermediate the CA signed). */
  | "chain"
  /** A certificate of the chain is not valid at the time of the check. */
  | "validity"
  /** The leaf's SANs do not name the dialled host or IP. */
  | "name"
  /** The leaf lacks the listener role (URI SAN `urn:stratum:join-listener`). */
  | "role"
  /**
   * On a later connection: the leaf is neither the one the join proved (its key) nor one the
   * CA issued since (a reissue), but an older leaf of the cluster's CA.
   */
  | "pinned";

/**
 * The join protocol could not go on safely: the listener is not who it claims, the channel
 * is not the one the PAKE was bound to, or TLS itself failed. Branch on `code`; never retry
 * a `LISTENER_*`, `BINDING_MISMATCH`, `CONNECTION_INTERCEPTED` or `PAIRING_MISMATCH` blindly, they mean someone else
 * may be on the line.
 */
export class JoinProtocolError extends StratumError {
  /** What went wrong; stable, meant to be branched on. */
  declare readonly code: JoinProtocolErrorCode;
  /** With `LISTENER_CERTIFICATE`: the check that failed. */
  readonly check: ListenerCertificateCheck | undefined;

  constructor(
    code: JoinProtocolErrorCode,
    message: string,
    options?: { cause?: unknown; check?: ListenerCertificateCheck },
  ) {
    super(code, message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "JoinProtocolError";
    this.check = options?.check;
  }
}

/**
 * A machine identity (certificate + private key) that cannot be used: unparsable PEM, an
 * encrypted or unsupported key, or a key that does not belong to the certificate. The
 * message never contains key material.
 */
export class IdentityError extends StratumError {
  /** Always `IDENTITY_INVALID`. */
  declare readonly code: "IDENTITY_INVALID";

  constructor(message: string, options?: { cause?: unknown }) {
    super("IDENTITY_INVALID", message, options);
    this.name = "IdentityError";
  }
}

/** The registration is over in a state the caller did not wait for (`rejected`, `expired`, or another final state). */
export class RegistrationEndedError extends StratumError {
  /** Always `REGISTRATION_ENDED`. */
  declare readonly code: "REGISTRATION_ENDED";
  /** The registration's last view. */
  readonly registration: Registration;

  constructor(registration: Registration) {
    const why = registration.state === "rejected" && registration.reason ? `: ${registration.reason}` : "";
    super("REGISTRATION_ENDED", `the registration ${registration.joinId} ended ${registration.state}${why}`);
    this.name = "RegistrationEndedError";
    this.registration = registration;
  }
}

/**
 * When an unproven refusal came: `ke1`, in answer to the PAKE's first message, before the
 * listener proved it holds the join code; `ke3`, in answer to the call that carried KE3,
 * without the `Join-Binding` that would prove it comes from the listener that proved the code.
 */
export type UnprovenRefusalStep = "ke1" | "ke3";

/**
 * A join listener refused before anything proved it is the cluster's (docs/protocol.md#unproven):
 * in answer to KE1, or after KE3 without a valid `Join-Binding`. Anyone on the network path can
 * send such an answer, so nothing of it is kept as the cluster's word: no `detail`, `details`
 * or field `errors` of the peer (a path, a URL, advice), only its status, its code and its
 * `Retry-After`.
 *
 * `code` is the code the peer claimed when a founder does send it at that step (a busy or
 * rate-limited founder, an upgrade, a full disk, a stale code at KE1, a restart of the exchange
 * at KE3, a malformed request, an internal error), so waiting out a busy founder works as
 * ever; otherwise `code` is `REFUSAL_UNPROVEN` (a refusal a founder never sends there, such as
 * `RELEASE_MISMATCH` at KE1 or without a binding: someone may be on the line) and the claim is
 * in {@link UnprovenRefusalError.claimedCode}.
 */
export class UnprovenRefusalError extends StratumApiError {
  /** Always false: this refusal is not proven to come from the cluster. */
  readonly proven = false;
  /** The code the peer's answer claimed (`RELEASE_MISMATCH`, …), when it was a code at all; else undefined. */
  readonly claimedCode: string | undefined;
  /** When it came ({@link UnprovenRefusalStep}). */
  readonly step: UnprovenRefusalStep;

  constructor(options: {
    status: number;
    /** `REFUSAL_UNPROVEN`, or the peer's code when a founder sends it at this step. */
    code: string;
    claimedCode: string | undefined;
    step: UnprovenRefusalStep;
    message: string;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
  }) {
    super(
      options.status,
      { code: options.code, detail: options.message, ...(options.requestId ? { requestId: options.requestId } : {}) },
      options.retryAfter,
    );
    this.name = "UnprovenRefusalError";
    this.claimedCode = options.claimedCode;
    this.step = options.step;
  }
}
