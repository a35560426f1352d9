/**
 * OPAQUE, the joiner's half: the two login steps of a joiner proving a join code. The
 * parameters and the library's loader are `src/protocol/opaque.ts`, shared with the founder's
 * half (`src/server/opaque.ts`).
 *
 * The Argon2 of `finishLogin` runs synchronously in WebAssembly and blocks the event loop:
 * about 230 ms on a current server core (measured by test/node/opaque.test.ts), several times
 * that on a small board.
 * @module
 */

import { bytes, KEY_STRETCHING, loadOpaque, opaqueIdentifiers } from "../protocol/opaque.js";

/** Client state between {@link startLogin} and {@link finishLogin}. Secret-bearing: keep it in memory only. */
export interface ClientLoginStart {
  /** Opaque client state for {@link finishLogin}. */
  state: string;
  /** KE1, sent in `POST /v1/join/pake`. */
  ke1: string;
}

/**
 * Joiner, step 1: the login request (KE1) for a join code.
 * @param code the canonical join code (11 symbols, upper case, no dashes)
 */
export async function startLogin(code: string): Promise<ClientLoginStart> {
  const opaque = await loadOpaque();
  const { clientLoginState, startLoginRequest } = opaque.client.startLogin({ password: code });
  return { state: clientLoginState, ke1: startLoginRequest };
}

/** The joiner's result of a login in which the listener proved it holds the code's record. */
export interface ClientLoginFinish {
  /** The OPAQUE session key (64 bytes); input of the channel binding and the pairing code. */
  sessionKey: Uint8Array;
  /** KE3, sent in the body of the next call on the same connection. */
  ke3: string;
}

/**
 * Joiner, step 2: checks the listener's KE2 against the code and the CA it sent. Undefined
 * when the listener did not prove the code: a mistyped code, a fake KE2 for an unknown
 * selector, another cluster's listener (other CA), or a malformed KE2. Runs Argon2 (about a
 * quarter of a second on a fast core, blocking).
 * @param options.state from {@link startLogin}
 * @param options.ke2 the listener's answer
 * @param options.code the same canonical code
 * @param options.caDer the CA certificate the listener sent with KE2, DER
 */
export async function finishLogin(options: {
  state: string;
  ke2: string;
  code: string;
  caDer: Uint8Array;
}): Promise<ClientLoginFinish | undefined> {
  const opaque = await loadOpaque();
  let result: ReturnType<typeof opaque.client.finishLogin>;
  try {
    result = opaque.client.finishLogin({
      clientLoginState: options.state,
      loginResponse: options.ke2,
      password: options.code,
      identifiers: opaqueIdentifiers(options.caDer),
      keyStretching: KEY_STRETCHING,
    });
  } catch {
    // A KE2 that does not even decode proves nothing either; the caller's answer is the same.
    return undefined;
  }
  if (!result) return undefined;
  return { sessionKey: bytes(result.sessionKey), ke3: result.finishLoginRequest };
}
