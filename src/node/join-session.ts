/**
 * The join session: what stage 1 keeps after a registration and hands to stage 2 across a
 * reboot. Everything in it is public (no key, no code); the machine's private key travels
 * separately, in its identity.
 * @module
 */
import { X509Certificate } from "node:crypto";
import { formatEndpoint, parseEndpoint } from "../core/join-url.js";
import { StratumError } from "../errors/index.js";
import { caFingerprint, type ListenerPin } from "../protocol/pki.js";

/** A registration as the joiner remembers it: where, under which CA, which key, which join. */
export interface JoinSession {
  /** Format version of the serialised form. */
  readonly version: 1;
  /** The join listener, `host:port` (IPv6 in brackets). */
  readonly endpoint: string;
  /** The pinned cluster root CA, PEM, learned and checked through the PAKE. */
  readonly caPem: string;
  /** SHA-256 of the CA's DER, upper-case colon hex. */
  readonly caFingerprint: string;
  /** The registration's id. */
  readonly joinId: string;
  /** The client key the registration is pinned to (SHA-256 of its SPKI, colon hex). */
  readonly keyFingerprint: string;
  /** The pairing code, `XXX-XXX`, as both consoles show it. */
  readonly pairingCode: string;
  /** The release the machine registered with. */
  readonly release: string;
  /**
   * The founder's time minus this machine's at the registration, in ms (absent in a session
   * written before it was recorded). Past 5 minutes, later connections judge the listener's
   * certificate by the founder's time as well as by this machine's clock
   * (docs/protocol.md#pinned-calls).
   */
  readonly clockOffsetMs?: number | undefined;
  /**
   * The key fingerprint of the listener's TLS leaf the PAKE proved (absent in a session written
   * before it was recorded). Later connections take this key, or a leaf the CA issued no
   * earlier than {@link JoinSession.listenerNotBefore} (docs/protocol.md#pinned-calls).
   */
  readonly listenerKeyFingerprint?: string;
  /** When the listener's leaf the PAKE proved became valid (RFC 3339); with `listenerKeyFingerprint`. */
  readonly listenerNotBefore?: string;
}

const FINGERPRINT = /^([0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2}$/;

/** The string fields of the serialised session, in their order; `version` is the literal 1. */
const STRING_FIELDS = [
  "endpoint",
  "caPem",
  "caFingerprint",
  "joinId",
  "keyFingerprint",
  "pairingCode",
  "release",
] as const;

/**
 * The session's shape, checked by hand rather than by a schema library: `parseJoinSession` is
 * synchronous and runs when stage 2 starts, where loading zod would cost more than the check.
 * Unknown fields are dropped, as the SDK's schemas drop them.
 * @returns the session, or what is wrong with it (a path and a message, never a value)
 */
function readShape(value: unknown): JoinSession | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "(document): expected object";
  const record = value as Record<string, unknown>;
  if (record.version !== 1) return "version: expected 1";
  const wrong = STRING_FIELDS.find((field) => typeof record[field] !== "string");
  if (wrong !== undefined) return `${wrong}: expected a string`;
  const session: Record<string, unknown> = { version: 1 };
  for (const field of STRING_FIELDS) session[field] = record[field];
  if (record.clockOffsetMs !== undefined) {
    if (!Number.isSafeInteger(record.clockOffsetMs)) return "clockOffsetMs: expected an integer";
    session.clockOffsetMs = record.clockOffsetMs;
  }
  // The proven listener leaf: both fields or neither, well formed (a session edited to drop or
  // loosen the pin is refused, not read as one written before pins).
  const pinned = [record.listenerKeyFingerprint, record.listenerNotBefore];
  if (pinned.some((v) => v !== undefined)) {
    if (typeof record.listenerKeyFingerprint !== "string" || !FINGERPRINT.test(record.listenerKeyFingerprint))
      return "listenerKeyFingerprint: expected a key fingerprint";
    if (typeof record.listenerNotBefore !== "string" || Number.isNaN(Date.parse(record.listenerNotBefore)))
      return "listenerNotBefore: expected an RFC 3339 time";
    session.listenerKeyFingerprint = record.listenerKeyFingerprint.toUpperCase();
    session.listenerNotBefore = record.listenerNotBefore;
  }
  return session as unknown as JoinSession;
}

/** The session as one JSON document (stable field order), for a file stage 2 reads. */
export function serializeJoinSession(session: JoinSession): string {
  const { version, endpoint, caPem, caFingerprint: ca, joinId, keyFingerprint, pairingCode, release } = session;
  const clock = session.clockOffsetMs === undefined ? {} : { clockOffsetMs: session.clockOffsetMs };
  const pin =
    session.listenerKeyFingerprint === undefined
      ? {}
      : { listenerKeyFingerprint: session.listenerKeyFingerprint, listenerNotBefore: session.listenerNotBefore };
  return `${JSON.stringify({ version, endpoint, caPem, caFingerprint: ca, joinId, keyFingerprint, pairingCode, release, ...clock, ...pin }, null, 2)}\n`;
}

/**
 * A session read back from {@link serializeJoinSession}'s JSON. Checks the shape, the endpoint
 * and that the CA's fingerprint is the one recorded, so a session file edited to pin another CA
 * is refused rather than trusted.
 * @throws StratumError `JOIN_SESSION_INVALID`, naming what is wrong
 */
export function parseJoinSession(json: string | unknown): JoinSession {
  let value: unknown = json;
  if (typeof json === "string") {
    try {
      value = JSON.parse(json);
    } catch {
      throw new StratumError("JOIN_SESSION_INVALID", "the join session is not valid JSON");
    }
  }
  const session = readShape(value);
  if (typeof session === "string") {
    throw new StratumError("JOIN_SESSION_INVALID", `the join session is malformed: ${session}`);
  }
  const endpoint = formatEndpoint(parseEndpoint(session.endpoint), { includeDefaultPort: true });
  let der: Uint8Array;
  try {
    der = new Uint8Array(new X509Certificate(session.caPem).raw);
  } catch {
    throw new StratumError("JOIN_SESSION_INVALID", "the join session's caPem is not a certificate");
  }
  if (caFingerprint(der) !== session.caFingerprint.toUpperCase()) {
    throw new StratumError("JOIN_SESSION_INVALID", "the join session's caPem does not match its caFingerprint");
  }
  return { ...session, endpoint };
}

/** The listener leaf a session pins ({@link JoinSession.listenerKeyFingerprint}), if it records one. @internal */
export function sessionListenerPin(session: JoinSession): ListenerPin | undefined {
  if (session.listenerKeyFingerprint === undefined || session.listenerNotBefore === undefined) return undefined;
  return { keyFingerprint: session.listenerKeyFingerprint, notBeforeMs: Date.parse(session.listenerNotBefore) };
}

/** The pinned CA of a session, DER. */
export function sessionCaDer(session: JoinSession): Uint8Array {
  return new Uint8Array(new X509Certificate(session.caPem).raw);
}
