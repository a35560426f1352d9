/**
 * OPAQUE (RFC 9807, ristretto255, @serenity-kit/opaque) with the join protocol's fixed
 * parameters (docs/protocol.md, "Proving the code"), the joiner's half. The founder's half
 * (mint and the listener's login) is `src/server/opaque.ts`, on the same parameters: password = the canonical 11-symbol join code, key
 * stretching `memory-constrained` Argon2id, identifiers `{ client: "stratum-join", server:
 * "sha256:" + lower-case hex SHA-256 of the cluster CA's DER }`. Binding the server identifier
 * to the CA means a listener of another cluster (another CA) cannot complete the login even if
 * it somehow held the record. Messages (`ke1`, `ke2`, `ke3`, records, states) are the library's
 * base64url strings; session keys are bytes.
 *
 * The Argon2 of `finishLogin` and of `createJoinCodeRecord` runs synchronously in WebAssembly
 * and blocks the event loop: about 230 ms on a current server core (measured by
 * test/node/opaque.test.ts), several times that on a small board.
 * @module
 */

import { createHash } from "node:crypto";
import type * as Opaque from "@serenity-kit/opaque";

type OpaqueLibrary = typeof Opaque;
let library: Promise<OpaqueLibrary> | undefined;

/**
 * The OPAQUE library with its WebAssembly compiled and instantiated (about 15 MiB and 60 ms of
 * CPU on this project's machine), loaded by the first call that proves a code, not when the
 * joiner or the server kit is imported: `opaqueIdentifiers` and the constants here need none
 * of it. A failed load is not kept, so a later call tries again.
 * @internal
 */
export function loadOpaque(): Promise<OpaqueLibrary> {
  library ??= import("@serenity-kit/opaque")
    .then(async (opaque) => {
      await opaque.ready;
      return opaque;
    })
    .catch((error: unknown) => {
      library = undefined;
      throw error;
    });
  return library;
}

/** Key stretching of the protocol, on mint and on every login. @internal */
export const KEY_STRETCHING = "memory-constrained" as const;
/** OPAQUE client identifier of every joiner. */
export const OPAQUE_CLIENT_IDENTIFIER = "stratum-join";

/** The OPAQUE identifiers for a cluster CA: `{ client: "stratum-join", server: "sha256:<hex of SHA-256(caDer)>" }`. */
export function opaqueIdentifiers(caDer: Uint8Array): {
  /** The client identifier, the same for every joiner. */
  client: string;
  /** The server identifier: `sha256:` and the hex SHA-256 of the cluster CA's DER. */
  server: string;
} {
  return { client: OPAQUE_CLIENT_IDENTIFIER, server: `sha256:${createHash("sha256").update(caDer).digest("hex")}` };
}

/** Resolves once the library's WebAssembly is loaded. The other functions await it themselves. */
export async function opaqueReady(): Promise<void> {
  await loadOpaque();
}

/** The bytes of one of the library's base64url strings. @internal */
export function bytes(base64url: string): Uint8Array {
  return new Uint8Array(Buffer.from(base64url, "base64url"));
}

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
