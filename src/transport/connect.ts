/**
 * The TLS side of a mirror connection: the connection's options (certificate checks, ALPN, the
 * cipher suites in the order the SDK prefers them) and the direct connector.
 * @internal
 * @module
 */
import { isIP } from "node:net";
import * as tls from "node:tls";
import type { Http1Connector } from "./http1/index.js";

/**
 * The cipher suites offered, best first. TLS 1.3's AES-128-GCM first (as browsers order them):
 * as safe as AES-256-GCM for a download verified by its signed hash, and about 15% less CPU on
 * each side of a transfer that is CPU-bound on both (Node's and OpenSSL's default puts
 * AES-256-GCM first, and a mirror follows the client's order unless told otherwise). The TLS
 * 1.2 list stays Node's.
 */
export const MIRROR_CIPHERS = [
  "TLS_AES_128_GCM_SHA256",
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256",
  ...tls.DEFAULT_CIPHERS.split(":").filter((name) => !name.startsWith("TLS_")),
].join(":");

/** The TLS options of a connection to `target`: its name checked, ALPN `http/1.1`, {@link MIRROR_CIPHERS}. */
export function mirrorTlsOptions(target: { host: string; ca?: string | string[] }): tls.ConnectionOptions {
  return {
    host: target.host,
    ...(isIP(target.host) === 0 ? { servername: target.host } : {}),
    ...(target.ca === undefined ? {} : { ca: target.ca }),
    ALPNProtocols: ["http/1.1"],
    ciphers: MIRROR_CIPHERS,
  };
}

/**
 * Opens a TLS connection for {@link http1Get}: the certificate checked against `ca` (or the
 * system's roots) and `host`, ALPN `http/1.1`. Resolves at the end of the handshake; rejects
 * on an error, a close during the handshake, or the signal (with its reason).
 * @internal
 */
export function tlsConnector(
  target: { host: string; port: number; ca?: string | string[] },
  onSocket?: (socket: tls.TLSSocket) => void,
): Http1Connector {
  return async (onread, signal) => {
    signal.throwIfAborted();
    const socket = tls.connect({ ...mirrorTlsOptions(target), port: target.port, onread } as tls.ConnectionOptions);
    onSocket?.(socket);
    return handshake(socket, signal);
  };
}

/**
 * Waits for `socket`'s TLS handshake: resolves with it once secure; rejects on an error, a
 * close during the handshake (`ECONNRESET`) or the signal (with its reason), the socket then
 * destroyed. The one home of that wait for direct and tunnelled connections.
 * @internal
 */
export function handshake(socket: tls.TLSSocket, signal: AbortSignal): Promise<tls.TLSSocket> {
  return new Promise<tls.TLSSocket>((resolve, reject) => {
    const settle = (error?: unknown): void => {
      signal.removeEventListener("abort", onAbort);
      socket.off("error", settle);
      socket.off("close", onClose);
      socket.off("secureConnect", onSecure);
      if (error === undefined) resolve(socket);
      else {
        socket.destroy();
        reject(error);
      }
    };
    const onAbort = (): void => settle(signal.reason);
    const onClose = (): void =>
      settle(Object.assign(new Error("the connection closed during the TLS handshake"), { code: "ECONNRESET" }));
    const onSecure = (): void => settle();
    if (signal.aborted) {
      settle(signal.reason);
      return;
    }
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("error", settle);
    socket.once("close", onClose);
    socket.once("secureConnect", onSecure);
  });
}
