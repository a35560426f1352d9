/**
 * The two calls that prove a join code to the join listener: a code check (`POST
 * /v1/join/code-checks`) and a registration (`POST /v1/join/registrations`). The exchange
 * itself, on one pinned TLS 1.3 connection within the call's deadline, is `./proof.ts`; here,
 * what each call sends and what its answer must be (on a new registration, the pairing code
 * computed locally must equal the listener's).
 * @module
 */
import { derivePairingCode, formatPairingCode, parsePairingCode } from "../core/pairing.js";
import { JoinProtocolError } from "../errors/index.js";
import type { CodeCheck, Inventory, Registration } from "../types.js";
import { parseAnswer } from "./answers.js";
import { concealSecrets } from "./delivery.js";
import { createThrowawayIdentity, type MachineIdentity } from "./identity.js";
import type { JoinSession } from "./join-session.js";
import { requireTlsExporter } from "../protocol/tls-exporter.js";
import { proveAndCall, readTarget, startLoadingProof, type JoinTarget, type ProveOptions } from "./proof.js";

export { DEFAULT_JOIN_TIMEOUT_MS, type JoinTarget, type ProveOptions } from "./proof.js";

/** What `checkJoinCode` needs. */
export type CheckJoinCodeOptions = JoinTarget &
  ProveOptions & {
    /** The release the machine would be installed from. */
    release: string;
    /** The machine can upgrade itself to the cluster's release. */
    selfUpgrade?: boolean | undefined;
    /** The client certificate to use; default a throwaway one (a check records no key). */
    identity?: MachineIdentity | undefined;
  };

/** A join code that passed the listener's checks. */
export interface CodeCheckResult extends CodeCheck {
  /** The join listener, `host:port`. */
  endpoint: string;
  /** The cluster CA the listener proved it holds, PEM. */
  caPem: string;
  /** Its SHA-256, colon hex. */
  caFingerprint: string;
  /**
   * The founder's time minus this machine's, in ms, measured at the PAKE (positive: this
   * machine's clock is behind). Past 5 minutes the listener's certificate was judged by the
   * founder's time (docs/protocol.md#founder-time), and the machine's clock needs fixing.
   */
  clockOffsetMs: number;
}

/** What `registerMachine` needs. */
export type RegisterMachineOptions = JoinTarget &
  ProveOptions & {
    /** The machine's identity: every later call is pinned to its key. */
    identity: MachineIdentity;
    /** The release the machine was installed from. */
    release: string;
    /** The machine can upgrade itself to the cluster's release before it registers. */
    selfUpgrade?: boolean | undefined;
    /** The machine's host name, as the console shows it. */
    hostname?: string | undefined;
    /** The machine's serial number (SMBIOS system serial), as the console shows it. */
    systemSerial?: string | undefined;
    /** The machine's hardware (see `collectInventory`). */
    inventory?: Inventory | undefined;
  };

/** A registration made (or found again) by `registerMachine`. */
export interface RegisterResult {
  /** What stage 2 needs to go on: save it with `serializeJoinSession`. */
  session: JoinSession;
  /** The joiner's view of its registration right after the call. */
  registration: Registration;
  /** True for a new registration (201), false when this key's registration was returned (200). */
  created: boolean;
  /**
   * The founder's time minus this machine's, in ms, measured at the PAKE (positive: this
   * machine's clock is behind), as the registration reported it (the inventory's `clock`) and
   * the session keeps it. Past 5 minutes certificates are judged by the founder's time
   * (docs/protocol.md#founder-time), and the machine's clock needs fixing.
   */
  clockOffsetMs: number;
}

/**
 * The inventory to send: the caller's (or none) with the clock offset measured at the PAKE
 * added to its `clock`, so the operator sees a machine whose clock needs fixing
 * (docs/protocol.md#founder-time). What the caller's inventory says of NTP is kept.
 */
function withClock(inventory: Inventory | undefined, clockOffsetMs: number): Inventory {
  return { ...inventory, clock: { ...inventory?.clock, offsetSeconds: Math.round(clockOffsetMs / 1000) } };
}

/**
 * Checks a join code before installing: proves it to the join listener with a throwaway
 * client certificate and runs the registration's checks on the code and the release, recording
 * nothing. A typo is caught locally, before any network call.
 * @returns the cluster's release, when the code expires, and `upgrade` when the machine must
 *   upgrade itself first (with `selfUpgrade`)
 * @throws JoinCodeError / JoinUrlError for a malformed code or URL (no network call made);
 *   RuntimeUnsupportedError `tls-exporter` on a runtime whose TLS has no exporter (Deno; nothing
 *   sent); JoinProtocolError `LISTENER_NOT_PROVEN` (mistyped code, or not this cluster's listener),
 *   `LISTENER_CERTIFICATE`, `BINDING_MISMATCH`, `TLS_FAILED`; StratumApiError with the refusal's
 *   code (`JOIN_CODE_EXPIRED`, `JOIN_CODE_REVOKED`, `JOIN_CODE_STALE`, `RELEASE_MISMATCH` with
 *   `details.clusterRelease` and `details.isoPath`, `RATE_LIMITED` with `retryAfter`, …);
 *   JoinProtocolError `CONNECTION_INTERCEPTED` (the code is right, but a relay terminates TLS
 *   between the machine and the listener); StratumApiError `JOIN_CODE_BUSY` (503, with
 *   `retryAfter`) only when the deadline leaves no room to wait it out (busy KE1s are retried
 *   within it); NetworkError; TimeoutError (`TIMEOUT`) after `timeoutMs` (default 120 s);
 *   the signal's reason on abort, as is
 */
export async function checkJoinCode(options: CheckJoinCodeOptions): Promise<CodeCheckResult> {
  const target = readTarget(options);
  requireTlsExporter();
  startLoadingProof();
  const identity = options.identity ?? (await createThrowawayIdentity());
  const { response, proof } = await proveAndCall(
    target,
    identity,
    {
      path: "/v1/join/code-checks",
      body: (pake) => ({
        pake,
        release: options.release,
        ...(options.selfUpgrade !== undefined ? { selfUpgrade: options.selfUpgrade } : {}),
      }),
      release: options.release,
      selfUpgrade: options.selfUpgrade,
    },
    options,
  );
  const check = await parseAnswer("CodeCheckSchema", "POST /v1/join/code-checks", response.json);
  return {
    ...check,
    endpoint: target.endpoint,
    caPem: proof.caPem,
    caFingerprint: proof.caFingerprint,
    clockOffsetMs: proof.clockOffsetMs,
  };
}

/**
 * Registers the machine: proves the join code over one TLS connection with the machine's
 * client certificate, sends the registration with its inventory, and pins the cluster CA.
 * The same key registering again gets its registration back (`created: false`). On a new
 * registration the pairing code is computed locally and must equal the listener's.
 * @returns the join session to keep (serialise it for stage 2), the registration's view, and
 *   whether it was created now
 * @throws as {@link checkJoinCode}, plus JoinProtocolError `PAIRING_MISMATCH`, and
 *   StratumApiError `REGISTRATION_REJECTED` (this key was rejected), `RATE_LIMITED` (too many
 *   waiting, or too many from this address; `retryAfter`), `UPGRADE_IN_PROGRESS`
 */
export async function registerMachine(options: RegisterMachineOptions): Promise<RegisterResult> {
  const target = readTarget(options);
  requireTlsExporter();
  startLoadingProof();
  const { identity } = options;
  const { response, proof, lostPairingKeys } = await proveAndCall(
    target,
    identity,
    {
      path: "/v1/join/registrations",
      body: (pake, { clockOffsetMs }) => ({
        pake,
        release: options.release,
        ...(options.selfUpgrade !== undefined ? { selfUpgrade: options.selfUpgrade } : {}),
        ...(options.hostname !== undefined ? { hostname: options.hostname } : {}),
        ...(options.systemSerial !== undefined ? { systemSerial: options.systemSerial } : {}),
        inventory: withClock(options.inventory, clockOffsetMs),
      }),
      release: options.release,
      selfUpgrade: options.selfUpgrade,
    },
    options,
  );
  const registration = (await parseAnswer(
    "RegistrationSchema",
    "POST /v1/join/registrations",
    response.json,
  )) as Registration;
  if (registration.delivery) concealSecrets(registration.delivery);
  let theirs: string;
  try {
    theirs = parsePairingCode(registration.pairingCode);
  } catch {
    theirs = "";
  }
  // An earlier exchange of this call whose answer was lost may have made the registration: found
  // again (200), it carries that exchange's pairing code, and it was made by this call.
  const lostCodes = await Promise.all(lostPairingKeys.map((key) => derivePairingCode(key, identity.keyFingerprint)));
  const created = response.status === 201 || (theirs !== "" && lostCodes.includes(theirs));
  if (response.status === 201) {
    // A registration keeps its first pairing code for life, so only a new one can be compared.
    const mine = await derivePairingCode(proof.pairingKey, identity.keyFingerprint);
    if (theirs !== mine) {
      // Only a well-formed pairing code of the answer is repeated: the rest of it is not trusted.
      const told = theirs ? formatPairingCode(theirs) : "(malformed)";
      throw new JoinProtocolError(
        "PAIRING_MISMATCH",
        `the listener's pairing code ${told} is not the one this machine computed (${formatPairingCode(mine)}): do not approve this machine; someone may be relaying the connection`,
      );
    }
  }
  const session: JoinSession = {
    version: 1,
    endpoint: target.endpoint,
    caPem: proof.caPem,
    caFingerprint: proof.caFingerprint,
    joinId: registration.joinId,
    keyFingerprint: identity.keyFingerprint,
    pairingCode: registration.pairingCode,
    release: options.release,
    clockOffsetMs: proof.clockOffsetMs,
    // What the PAKE proved of the listener: later connections take nothing older
    // (docs/protocol.md#pinned-calls).
    listenerKeyFingerprint: proof.listener.pin.keyFingerprint,
    listenerNotBefore: new Date(proof.listener.pin.notBeforeMs).toISOString(),
  };
  return { session, registration, created, clockOffsetMs: proof.clockOffsetMs };
}
