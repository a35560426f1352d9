/**
 * OPAQUE, the founder's half: the registration record made at mint, and the listener's two
 * login steps. The parameters (identifiers bound to the CA, key stretching) are the protocol's,
 * from `src/protocol/opaque.ts`, shared with the joiner's half so the two cannot drift apart; so is the library, loaded
 * by the first call here rather than when the server kit is imported.
 * @module
 */
import { bytes, KEY_STRETCHING, loadOpaque, opaqueIdentifiers } from "../protocol/opaque.js";

/**
 * Founder, at mint: runs the whole OPAQUE registration in-process (client and server side,
 * since the founder knows the code at that moment) and returns the registration record, the
 * only thing stored. Runs Argon2 (about a quarter of a second on a fast core, blocking).
 * @param options.serverSetup the cluster's OPAQUE server setup (secret, long-lived)
 * @param options.codeId the code's id: the server-side credential identifier
 * @param options.code the canonical join code
 * @param options.caDer the cluster root CA the code is minted under, DER
 */
export async function createJoinCodeRecord(options: {
  serverSetup: string;
  codeId: string;
  code: string;
  caDer: Uint8Array;
}): Promise<string> {
  const opaque = await loadOpaque();
  const { clientRegistrationState, registrationRequest } = opaque.client.startRegistration({ password: options.code });
  const { registrationResponse } = opaque.server.createRegistrationResponse({
    serverSetup: options.serverSetup,
    userIdentifier: options.codeId,
    registrationRequest,
  });
  const { registrationRecord } = opaque.client.finishRegistration({
    clientRegistrationState,
    registrationResponse,
    password: options.code,
    identifiers: opaqueIdentifiers(options.caDer),
    keyStretching: KEY_STRETCHING,
  });
  return registrationRecord;
}

/** Creates a new OPAQUE server setup (the listener's long-term OPAQUE key). Secret. */
export async function createServerSetup(): Promise<string> {
  const opaque = await loadOpaque();
  return opaque.server.createSetup();
}

/** Listener state between {@link startServerLogin} and {@link finishServerLogin}. Secret-bearing. */
export interface ServerLoginStart {
  /** Opaque server state for {@link finishServerLogin}. */
  state: string;
  /** KE2, returned in the PAKE answer. */
  ke2: string;
}

/**
 * Listener, step 1: answers a KE1. With `registrationRecord: null` (a selector with no code)
 * the library builds a fake KE2 of the same length, derived from the server setup and
 * `codeId`, so an outsider cannot tell live selectors from unused ones; pass the selector as
 * `codeId` then, so repeated probes of one selector get consistent answers.
 * @param options.serverSetup the cluster's OPAQUE server setup
 * @param options.codeId the code's id (the same as at mint), or the selector for a fake
 * @param options.registrationRecord the code's record, or null for a fake KE2
 * @param options.ke1 the joiner's KE1
 * @param options.caDer the cluster root CA, DER (the one sent with KE2)
 */
export async function startServerLogin(options: {
  serverSetup: string;
  codeId: string;
  registrationRecord: string | null;
  ke1: string;
  caDer: Uint8Array;
}): Promise<ServerLoginStart> {
  const opaque = await loadOpaque();
  const { serverLoginState, loginResponse } = opaque.server.startLogin({
    serverSetup: options.serverSetup,
    userIdentifier: options.codeId,
    registrationRecord: options.registrationRecord,
    startLoginRequest: options.ke1,
    identifiers: opaqueIdentifiers(options.caDer),
  });
  return { state: serverLoginState, ke2: loginResponse };
}

/**
 * Listener, step 2: checks KE3. Returns the session key (the same bytes the joiner got) or
 * undefined when KE3 does not verify (the joiner does not know the code, or the KE3 belongs
 * to another login).
 * @param options.state from {@link startServerLogin}
 * @param options.ke3 the joiner's KE3
 * @param options.caDer the same CA as in {@link startServerLogin}
 */
export async function finishServerLogin(options: {
  state: string;
  ke3: string;
  caDer: Uint8Array;
}): Promise<Uint8Array | undefined> {
  const opaque = await loadOpaque();
  try {
    const { sessionKey } = opaque.server.finishLogin({
      serverLoginState: options.state,
      finishLoginRequest: options.ke3,
      identifiers: opaqueIdentifiers(options.caDer),
    });
    return bytes(sessionKey);
  } catch {
    return undefined;
  }
}
