/**
 * Proving a join code to the join listener and making the one call that proof authorises:
 * a code check (`POST /v1/join/code-checks`) or a registration (`POST /v1/join/registrations`).
 *
 * The exchange, on ONE TLS 1.3 connection with the machine's client certificate
 * (PROTOCOL.md section 2):
 *  1. the code is parsed locally: a typo never reaches the network or costs an attempt;
 *  2. KE1 → `POST /v1/join/pake` → KE2 and the cluster CA;
 *  3. `finishLogin` with the server identifier of that CA: if it fails, the listener did not
 *     prove the code and nothing more is sent;
 *  4. the listener's TLS leaf must chain to that CA, be valid, name the dialled host and carry
 *     the listener role; only then is the CA pinned;
 *  5. KE3 in the seeded body of the next call, with `Join-Binding` (HMAC over a transcript that
 *     includes the TLS exporter, so a relay that terminates TLS fails it);
 *  6. the answer's `Join-Binding` is checked before the body is trusted, and on a new
 *     registration the pairing code is computed and compared.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { fromBase64Url } from "../core/bytes.js";
import { parseJoinCode, type JoinCode } from "../core/join-code.js";
import { formatEndpoint, parseEndpoint, parseJoinUrl } from "../core/join-url.js";
import {
  bindingTranscript,
  clientBinding,
  deriveBindingKeys,
  derivePairingCode,
  formatPairingCode,
  parsePairingCode,
  verifyBinding,
} from "../core/pairing.js";
import { throwIfAborted } from "../core/retry.js";
import { StratumApiError, StratumError } from "../errors/index.js";
import { CodeCheckSchema, PakeChallengeSchema, parseResponse, RegistrationSchema } from "../schemas/index.js";
import type { CodeCheck, Inventory, Registration } from "../types.js";
import { concealSecrets } from "./delivery.js";
import { JoinProtocolError } from "../errors/index.js";
import { createThrowawayIdentity, type MachineIdentity } from "./identity.js";
import type { JoinSession } from "./join-session.js";
import { finishLogin, startLogin } from "./opaque.js";
import {
  openPinnedConnection,
  refusalOf,
  responseHeader,
  type PinnedConnection,
  type PinnedResponse,
} from "./pinned-connection.js";
import { caFingerprint, verifyListenerCertificate } from "./pki.js";

/** Where the join listener is and which code to prove: a join URL, or an endpoint and a code. */
export type JoinTarget =
  | {
      /** `stratum-join://HOST[:PORT]/XXXX-XXXX-XXX` */ url: string;
      /** Not with `url`: the URL carries it. */
      endpoint?: never;
      /** Not with `url`: the URL carries it. */
      code?: never;
    }
  | {
      /** Not with `endpoint` and `code`. */
      url?: never;
      /** `host` or `host:port` (9444 by default) */ endpoint: string;
      /** the join code, in any accepted spelling */ code: string;
    };

/** Options every call that proves a code takes. */
export interface ProveOptions {
  /** Aborts the call (connect, PAKE, request); the abort is re-thrown as is. */
  signal?: AbortSignal;
  /** Time allowed for TCP + TLS (default 10 s). */
  connectTimeoutMs?: number;
}

/** What `checkJoinCode` needs. */
export type CheckJoinCodeOptions = JoinTarget &
  ProveOptions & {
    /** The release the machine would be installed from. */
    release: string;
    /** The machine can upgrade itself to the cluster's release. */
    selfUpgrade?: boolean;
    /** The client certificate to use; default a throwaway one (a check records no key). */
    identity?: MachineIdentity;
  };

/** A join code that passed the listener's checks. */
export interface CodeCheckResult extends CodeCheck {
  /** The join listener, `host:port`. */
  endpoint: string;
  /** The cluster CA the listener proved it holds, PEM. */
  caPem: string;
  /** Its SHA-256, colon hex. */
  caFingerprint: string;
}

/** What `registerMachine` needs. */
export type RegisterMachineOptions = JoinTarget &
  ProveOptions & {
    /** The machine's identity: every later call is pinned to its key. */
    identity: MachineIdentity;
    /** The release the machine was installed from. */
    release: string;
    /** The machine can upgrade itself to the cluster's release before it registers. */
    selfUpgrade?: boolean;
    /** The machine's host name, as the console shows it. */
    hostname?: string;
    /** The machine's serial number (SMBIOS system serial), as the console shows it. */
    systemSerial?: string;
    /** The machine's hardware (see `collectInventory`). */
    inventory?: Inventory;
  };

/** A registration made (or found again) by `registerMachine`. */
export interface RegisterResult {
  /** What stage 2 needs to go on: save it with `serializeJoinSession`. */
  session: JoinSession;
  /** The joiner's view of its registration right after the call. */
  registration: Registration;
  /** True for a new registration (201), false when this key's registration was returned (200). */
  created: boolean;
}

interface Target {
  host: string;
  port: number;
  endpoint: string;
  code: JoinCode;
}

/** Reads the target locally; a typo throws here, before any network call. */
function readTarget(target: JoinTarget): Target {
  if (target.url !== undefined) {
    const url = parseJoinUrl(target.url);
    return { host: url.host, port: url.port, endpoint: url.endpoint, code: url.code };
  }
  if (typeof target.endpoint !== "string" || typeof target.code !== "string") {
    throw new StratumError("INVALID_ARGUMENT", "give either url, or endpoint and code");
  }
  const endpoint = parseEndpoint(target.endpoint);
  const code = parseJoinCode(target.code);
  return {
    host: endpoint.host,
    port: endpoint.port,
    endpoint: formatEndpoint(endpoint, { includeDefaultPort: true }),
    code,
  };
}

function pemToDer(pem: string): Uint8Array {
  try {
    return new Uint8Array(new X509Certificate(pem).raw);
  } catch (cause) {
    throw new JoinProtocolError(
      "LISTENER_CERTIFICATE",
      "the listener's answer carries no readable cluster CA certificate",
      { cause, check: "missing" },
    );
  }
}

/** A proof in progress: what the KE3 call needs and what its answer is checked against. */
interface Proof {
  session: string;
  ke3: string;
  bindingHeader: string;
  ks: Uint8Array;
  pairingKey: Uint8Array;
  transcript: Uint8Array;
  caPem: string;
  caDer: Uint8Array;
  caFingerprint: string;
}

/**
 * Steps 2–4 on `connection`: KE1/KE2, `finishLogin`, the listener's leaf, the binding.
 * Returns only when the listener proved the code and its certificate passed every check.
 */
async function proveCode(
  connection: PinnedConnection,
  target: Target,
  keyFingerprint: string,
  signal?: AbortSignal,
): Promise<Proof> {
  const login = await startLogin(target.code.code);
  const response = await connection.request({
    method: "POST",
    path: "/v1/join/pake",
    json: { selector: target.code.selector, ke1: login.ke1 },
    ...(signal ? { signal } : {}),
  });
  if (response.status !== 200) throw refusalOf(response, "POST /v1/join/pake");
  const challenge = parseResponse(PakeChallengeSchema, "POST /v1/join/pake", response.json);
  const caDer = pemToDer(challenge.caCertificate);
  throwIfAborted(signal);
  const finished = await finishLogin({ state: login.state, ke2: challenge.ke2, code: target.code.code, caDer });
  if (!finished) {
    throw new JoinProtocolError(
      "LISTENER_NOT_PROVEN",
      `the join listener at ${target.endpoint} did not prove the join code: the code is mistyped, or this is not the cluster's join listener. Nothing more was sent.`,
    );
  }
  verifyListenerCertificate({ chain: connection.peerChainDer(), caDer, dialledHost: target.host });
  const ca = caFingerprint(caDer);
  const keys = await deriveBindingKeys(finished.sessionKey);
  const transcript = await bindingTranscript({
    session: challenge.session,
    ke1: fromBase64Url(login.ke1),
    ke2: fromBase64Url(challenge.ke2),
    caFingerprint: ca,
    clientKeyFingerprint: keyFingerprint,
    exporter: connection.exporter(),
  });
  return {
    session: challenge.session,
    ke3: finished.ke3,
    bindingHeader: await clientBinding(keys.kc, transcript),
    ks: keys.ks,
    pairingKey: keys.pairingKey,
    transcript,
    caPem: new X509Certificate(caDer).toString(),
    caDer,
    caFingerprint: ca,
  };
}

/**
 * Runs the whole exchange and the KE3 call on one connection; checks the answer's binding.
 * A `JOIN_PAKE_RESTART` answer or a connection lost before KE3 was sent starts one fresh
 * exchange on a fresh connection: the server dropped the first one, so nothing is replayed.
 */
async function proveAndCall(
  target: Target,
  identity: MachineIdentity,
  path: string,
  body: (pake: { session: string; ke3: string }) => Record<string, unknown>,
  options: ProveOptions,
): Promise<{ response: PinnedResponse; proof: Proof }> {
  for (let attempt = 0; ; attempt++) {
    throwIfAborted(options.signal);
    const connection = await openPinnedConnection({
      host: target.host,
      port: target.port,
      identity,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.connectTimeoutMs ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
    });
    let ke3Sent = false;
    try {
      const proof = await proveCode(connection, target, identity.keyFingerprint, options.signal);
      if (!connection.alive) {
        throw new JoinProtocolError(
          "CONNECTION_CHANGED",
          "the join listener closed the connection before KE3; the proof is bound to it",
        );
      }
      ke3Sent = true;
      const response = await connection.request({
        method: "POST",
        path,
        headers: { "join-binding": proof.bindingHeader },
        json: body({ session: proof.session, ke3: proof.ke3 }),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (response.status >= 400) throw refusalOf(response, `POST ${path}`);
      if (!(await verifyBinding(proof.ks, proof.transcript, responseHeader(response, "join-binding")))) {
        throw new JoinProtocolError(
          "BINDING_MISMATCH",
          "the join listener's answer does not carry the channel binding of this exchange: the connection is relayed or tampered with; its answer was not used",
        );
      }
      return { response, proof };
    } catch (error) {
      const restart =
        attempt === 0 &&
        ((error instanceof StratumApiError && error.code === "JOIN_PAKE_RESTART") ||
          (!ke3Sent && error instanceof JoinProtocolError && error.code === "CONNECTION_CHANGED"));
      if (!restart) throw error;
    } finally {
      await connection.close();
    }
  }
}

/**
 * Checks a join code before installing: proves it to the join listener with a throwaway
 * client certificate and runs the registration's checks on the code and the release, recording
 * nothing. A typo is caught locally, before any network call.
 * @returns the cluster's release, when the code expires, and `upgrade` when the machine must
 *   upgrade itself first (with `selfUpgrade`)
 * @throws JoinCodeError / JoinUrlError for a malformed code or URL (no network call made);
 *   JoinProtocolError `LISTENER_NOT_PROVEN` (mistyped code, or not this cluster's listener),
 *   `LISTENER_CERTIFICATE`, `BINDING_MISMATCH`, `TLS_FAILED`; StratumApiError with the refusal's
 *   code (`JOIN_CODE_EXPIRED`, `JOIN_CODE_REVOKED`, `JOIN_CODE_STALE`, `RELEASE_MISMATCH` with
 *   `details.clusterRelease` and `details.isoPath`, `RATE_LIMITED` with `retryAfter`, …);
 *   NetworkError, TimeoutError; the signal's reason on abort
 */
export async function checkJoinCode(options: CheckJoinCodeOptions): Promise<CodeCheckResult> {
  const target = readTarget(options);
  const identity = options.identity ?? (await createThrowawayIdentity());
  const { response, proof } = await proveAndCall(
    target,
    identity,
    "/v1/join/code-checks",
    (pake) => ({
      pake,
      release: options.release,
      ...(options.selfUpgrade !== undefined ? { selfUpgrade: options.selfUpgrade } : {}),
    }),
    options,
  );
  const check = parseResponse(CodeCheckSchema, "POST /v1/join/code-checks", response.json);
  return { ...check, endpoint: target.endpoint, caPem: proof.caPem, caFingerprint: proof.caFingerprint };
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
  const { identity } = options;
  const { response, proof } = await proveAndCall(
    target,
    identity,
    "/v1/join/registrations",
    (pake) => ({
      pake,
      release: options.release,
      ...(options.selfUpgrade !== undefined ? { selfUpgrade: options.selfUpgrade } : {}),
      ...(options.hostname !== undefined ? { hostname: options.hostname } : {}),
      ...(options.systemSerial !== undefined ? { systemSerial: options.systemSerial } : {}),
      ...(options.inventory !== undefined ? { inventory: options.inventory } : {}),
    }),
    options,
  );
  const registration = parseResponse(RegistrationSchema, "POST /v1/join/registrations", response.json) as Registration;
  if (registration.delivery) concealSecrets(registration.delivery);
  const created = response.status === 201;
  if (created) {
    // A registration keeps its first pairing code for life, so only a new one can be compared.
    const mine = await derivePairingCode(proof.pairingKey, identity.keyFingerprint);
    let theirs: string;
    try {
      theirs = parsePairingCode(registration.pairingCode);
    } catch {
      theirs = "";
    }
    if (theirs !== mine) {
      throw new JoinProtocolError(
        "PAIRING_MISMATCH",
        `the listener's pairing code ${registration.pairingCode} is not the one this machine computed (${formatPairingCode(mine)}): do not approve this machine; someone may be relaying the connection`,
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
  };
  return { session, registration, created };
}
