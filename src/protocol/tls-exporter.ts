/**
 * The RFC 9266 `tls-exporter` channel binding, read off a TLS 1.3 socket the same way by the
 * joiner and the listener (docs/protocol.md#binding-transcript), so the two can never disagree
 * on it; and the runtime check that the joiner makes before it sends a proof.
 * @module
 */

import * as tls from "node:tls";
import { JoinProtocolError, RuntimeUnsupportedError, runtimeName } from "../errors/index.js";

/** RFC 9266 `tls-exporter` channel binding label; 32 bytes, as docs/protocol.md#binding-transcript fixes. */
const EXPORTER_LABEL = "EXPORTER-Channel-Binding";
const EXPORTER_LENGTH = 32;
const EMPTY_CONTEXT = Buffer.alloc(0);

/** True when this runtime's TLS sockets have the exporter (Node and Bun do; Deno's `node:tls` has none). */
export function hasTlsExporter(): boolean {
  return typeof (tls.TLSSocket.prototype as { exportKeyingMaterial?: unknown }).exportKeyingMaterial === "function";
}

/**
 * Refuses at once, before anything is sent, a proof this runtime cannot bind to its connection.
 * @throws RuntimeUnsupportedError `tls-exporter` when the runtime's TLS sockets have no exporter
 */
export function requireTlsExporter(): void {
  if (hasTlsExporter()) return;
  const runtime = runtimeName();
  throw new RuntimeUnsupportedError(
    "tls-exporter",
    runtime,
    `${runtime} cannot prove a join code: its TLS sockets have no exporter (exportKeyingMaterial), which binds the proof to the connection; run the joiner on Node 20.19+ or Bun`,
  );
}

/**
 * The RFC 9266 TLS exporter of a TLS 1.3 socket: 32 bytes for label `EXPORTER-Channel-Binding`.
 * Called with an empty context, as RFC 9266 specifies. In TLS 1.3 (RFC 8446 7.5) "no context"
 * and "empty context" are the same computation and Node/OpenSSL agree (checked in
 * test/node/pinned-connection.test.ts); still, the joiner and the listener both call this
 * helper so they can never disagree on it.
 * @throws JoinProtocolError `TLS_FAILED` if the socket is not (or no longer) TLS 1.3;
 *   RuntimeUnsupportedError `tls-exporter` where the runtime has no exporter
 */
export function tlsExporter(socket: tls.TLSSocket): Uint8Array {
  if (typeof (socket as { exportKeyingMaterial?: unknown }).exportKeyingMaterial !== "function") requireTlsExporter();
  // Before TLS 1.3 the exporter without extended master secret is not a safe channel binding.
  if (socket.getProtocol() !== "TLSv1.3") {
    throw new JoinProtocolError("TLS_FAILED", "the TLS exporter is only used on a TLS 1.3 connection");
  }
  return new Uint8Array(socket.exportKeyingMaterial(EXPORTER_LENGTH, EXPORTER_LABEL, EMPTY_CONTEXT));
}
