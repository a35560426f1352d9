/**
 * OPAQUE (RFC 9807, ristretto255, @serenity-kit/opaque): the join protocol's fixed parameters
 * (docs/protocol.md, "Proving the code") and the library's loader, which both halves use: the
 * joiner's (`src/node/opaque.ts`) and the founder's (`src/server/opaque.ts`), so the two cannot
 * drift apart. Password = the canonical 11-symbol join code, key stretching
 * `memory-constrained` Argon2id, identifiers `{ client: "stratum-join", server: "sha256:" +
 * lower-case hex SHA-256 of the cluster CA's DER }`. Binding the server identifier
 * to the CA means a listener of another cluster (another CA) cannot complete the login even if
 * it somehow held the record. Messages (`ke1`, `ke2`, `ke3`, records, states) are the library's
 * base64url strings; session keys are bytes.
 * * @module
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
