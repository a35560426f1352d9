/**
 * DSSE (Dead Simple Signing Envelope) as the release manifest uses it: the envelope shape and
 * the pre-authentication encoding every signature covers.
 * @module
 */

/** The payloadType of a Stratum release manifest. */
export const RELEASE_MANIFEST_PAYLOAD_TYPE = "application/vnd.stratum.release-manifest.v1+json";

/** One signature of a DSSE envelope: `sig` is base64 of the Ed25519 signature over the PAE; `keyid` only a hint. */
export interface DsseSignature {
  /** The signer's keyid (lower-case hex SHA-256 of the raw public key). A hint, never trusted. */
  keyid: string;
  /** Base64 of the 64-byte Ed25519 signature over the DSSE pre-authentication encoding PAE(payloadType, payload). */
  sig: string;
}

/** A DSSE envelope: `payload` is base64 of the signed bytes. */
export interface DsseEnvelope {
  /** What the payload is; {@link RELEASE_MANIFEST_PAYLOAD_TYPE} for a release manifest. */
  payloadType: string;
  /** Base64 (standard alphabet, padded) of the payload bytes. */
  payload: string;
  /** The signatures. */
  signatures: DsseSignature[];
}

/**
 * DSSE's PAE: `"DSSEv1" SP len(type) SP type SP len(body) SP body`, lengths as ASCII decimal
 * byte counts. Signing this rather than the payload alone binds the payloadType into the
 * signature, so a signature made for another type cannot be replayed as a manifest.
 */
export function preAuthEncoding(payloadType: string, payload: Uint8Array): Buffer {
  // UTF-8 throughout: the lengths are ASCII digits, the type UTF-8 as DSSE says
  const type = Buffer.from(payloadType);
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload]);
}
