/**
 * One PAKE exchange on one pinned TLS 1.3 connection (docs/protocol.md#pake): KE1 and its
 * answer, `finishLogin`, the listener's leaf (all but its dates, which proof.ts judges by the
 * clock the rules name), the channel binding, and the KE3 call with the checks of its answer.
 * proof.ts runs exchanges until one carries the call, within the call's deadline.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { fromBase64Url } from "../core/bytes.js";
import { within, type Deadline } from "../core/deadline.js";
import { bindingTranscript, clientBinding, deriveBindingKeys, verifyBinding } from "../core/pairing.js";
import { throwIfAborted } from "../core/retry.js";
import { JoinProtocolError } from "../errors/index.js";
import { parseAnswer } from "./answers.js";
import { measureClockOffset } from "../protocol/founder-time.js";
import { finishLogin, startLogin } from "./opaque.js";
import { refusalOf, responseHeader, type PinnedConnection, type PinnedResponse } from "./pinned-connection.js";
import { caFingerprint, inspectListenerCertificate, type CheckedListener } from "../protocol/pki.js";
import type { Target } from "./proof.js";
import { unprovenRefusal } from "./unproven.js";

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
export interface Proof {
  session: string;
  ke3: string;
  bindingHeader: string;
  ks: Uint8Array;
  pairingKey: Uint8Array;
  transcript: Uint8Array;
  caPem: string;
  caDer: Uint8Array;
  caFingerprint: string;
  /**
   * The founder's time minus this machine's, ms, from the answer's `serverTime` when it
   * arrived. Not authenticated until an answer bound to this exchange verifies
   * (docs/protocol.md#founder-time).
   */
  clockOffsetMs: number;
  /** The listener's leaf on this connection: chain, name and role checked; its dates not yet. */
  listener: CheckedListener;
}

/**
 * KE1/KE2, `finishLogin`, the listener's leaf (chain, name, role) and the binding on
 * `connection`. Returns only when the listener proved the code; the leaf's dates are the
 * caller's to judge before it sends KE3.
 * @throws UnprovenRefusalError for a refused KE1 (503 `JOIN_CODE_BUSY`, 429, …);
 *   JoinProtocolError `LISTENER_NOT_PROVEN`, `LISTENER_CERTIFICATE`; ResponseValidationError
 */
export async function proveCode(
  connection: PinnedConnection,
  target: Target,
  keyFingerprint: string,
  deadline: Deadline,
): Promise<Proof> {
  const login = await startLogin(target.code.code);
  const response = await connection.request({
    method: "POST",
    path: "/v1/join/pake",
    json: { selector: target.code.selector, ke1: login.ke1 },
    ...within(deadline),
  });
  const receivedAtMs = Date.now();
  // Nothing has proven the listener yet: its refusal is not the cluster's (docs/protocol.md#unproven).
  if (response.status !== 200) throw unprovenRefusal(response, "ke1", target.endpoint, "POST /v1/join/pake");
  const challenge = await parseAnswer("PakeChallengeSchema", "POST /v1/join/pake", response.json);
  // Measured before the Argon2 below, which would otherwise count as clock difference.
  const clockOffsetMs = measureClockOffset(challenge.serverTime, receivedAtMs);
  const caDer = pemToDer(challenge.caCertificate);
  throwIfAborted(deadline.signal);
  const finished = await finishLogin({ state: login.state, ke2: challenge.ke2, code: target.code.code, caDer });
  // Argon2 blocks the event loop: a deadline that passed meanwhile is noticed here.
  throwIfAborted(deadline.signal);
  if (!finished) {
    throw new JoinProtocolError(
      "LISTENER_NOT_PROVEN",
      `the join listener at ${target.endpoint} did not prove the join code: the code is mistyped, or this is not the cluster's join listener. Nothing more was sent.`,
    );
  }
  const listener = inspectListenerCertificate({
    chain: connection.peerChainDer(),
    caDer,
    dialledHost: target.host,
  });
  const ca = caFingerprint(caDer);
  const keys = await deriveBindingKeys(finished.sessionKey);
  const transcript = await bindingTranscript({
    session: challenge.session,
    ke1: fromBase64Url(login.ke1),
    ke2: fromBase64Url(challenge.ke2),
    caFingerprint: ca,
    clientKeyFingerprint: keyFingerprint,
    exporter: connection.exporter(),
    serverTime: challenge.serverTime,
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
    clockOffsetMs,
    listener,
  };
}

/**
 * The KE3 call on the connection the proof is bound to, and the checks of its answer. The
 * answer must carry this exchange's `Join-Binding` before anything of it is used; once it does,
 * `onBound` runs (the founder's time is then authenticated, and may be judged by), and only
 * then is a refusal thrown as the cluster's or the answer returned. A refusal without the
 * binding is unproven (a failed channel binding after a verified KE3 is an intercepted
 * connection).
 */
export async function sendProof(
  connection: PinnedConnection,
  proof: Proof,
  call: { endpoint: string; path: string; body: Record<string, unknown>; onBound: () => void },
  deadline: Deadline,
): Promise<PinnedResponse> {
  const response = await connection.request({
    method: "POST",
    path: call.path,
    headers: { "join-binding": proof.bindingHeader },
    json: call.body,
    ...within(deadline),
  });
  const bound = await verifyBinding(proof.ks, proof.transcript, responseHeader(response, "join-binding"));
  if (response.status >= 400) {
    // A founder binds every refusal after a verified KE3 (docs/protocol.md#ke3, step 5); one
    // without the binding is not proven to be the founder's (docs/protocol.md#unproven).
    if (bound) {
      call.onBound();
      throw refusalOf(response, `POST ${call.path}`);
    }
    const refusal = unprovenRefusal(response, "ke3", call.endpoint, `POST ${call.path}`);
    if (refusal.code === "JOIN_BINDING_FAILED") {
      throw new JoinProtocolError(
        "CONNECTION_INTERCEPTED",
        "the connection to the join listener is intercepted: the listener verified the join code but not the TLS channel it came over, so something between this machine and the listener terminates TLS and relays the exchange. Nothing was recorded; do not retry on this network path.",
        { cause: refusal },
      );
    }
    throw refusal;
  }
  if (!bound) {
    throw new JoinProtocolError(
      "BINDING_MISMATCH",
      "the join listener's answer does not carry the channel binding of this exchange: the connection is relayed or tampered with; its answer was not used",
    );
  }
  call.onBound();
  return response;
}
