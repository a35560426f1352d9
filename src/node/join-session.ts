/**
 * The join session: what stage 1 keeps after a registration and hands to stage 2 across a
 * reboot. Everything in it is public (no key, no code); the machine's private key travels
 * separately, in its identity.
 * @module
 */
import { X509Certificate } from "node:crypto";
import * as z from "zod/mini";
import { formatEndpoint, parseEndpoint } from "../core/join-url.js";
import { StratumError } from "../errors/index.js";
import { caFingerprint } from "./pki.js";

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
}

const JoinSessionJson = z.object({
  version: z.literal(1),
  endpoint: z.string(),
  caPem: z.string(),
  caFingerprint: z.string(),
  joinId: z.string(),
  keyFingerprint: z.string(),
  pairingCode: z.string(),
  release: z.string(),
});

/** The session as one JSON document (stable field order), for a file stage 2 reads. */
export function serializeJoinSession(session: JoinSession): string {
  const { version, endpoint, caPem, caFingerprint: ca, joinId, keyFingerprint, pairingCode, release } = session;
  return `${JSON.stringify({ version, endpoint, caPem, caFingerprint: ca, joinId, keyFingerprint, pairingCode, release }, null, 2)}\n`;
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
  const parsed = JoinSessionJson.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new StratumError(
      "JOIN_SESSION_INVALID",
      `the join session is malformed: ${issue ? `${issue.path.join(".") || "(document)"}: ${issue.message}` : "unknown shape"}`,
    );
  }
  const session = parsed.data;
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

/** The pinned CA of a session, DER. */
export function sessionCaDer(session: JoinSession): Uint8Array {
  return new Uint8Array(new X509Certificate(session.caPem).raw);
}
