/**
 * The TLS 1.3 socket to the join listener: opened with the machine's client certificate,
 * refused unless it speaks TLS 1.3, and, once a CA is pinned, refused unless the listener's
 * leaf passes the check of docs/protocol.md#joiner-checks. Also the peer's chain, which the
 * binding needs (the RFC 9266 exporter, read the same way on both sides, is
 * `src/protocol/tls-exporter.ts`). {@link openPinnedConnection} puts the HTTP client on top; the
 * release download speaks HTTP on the socket itself.
 * @module
 */

import { X509Certificate as NodeX509Certificate } from "node:crypto";
import { isIP, type OnReadOpts } from "node:net";
import * as tls from "node:tls";
import { JoinProtocolError, NetworkError, StratumError, TimeoutError } from "../errors/index.js";
import type { MachineIdentity } from "./identity.js";
import { verifyPinnedListener, type ListenerPin } from "../protocol/pki.js";

/**
 * Time allowed for TCP + TLS when the caller gives none: the listener is on the machine's own
 * network, so a handshake that takes longer than 10 s is not coming.
 */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * The certificates the peer presented, DER, leaf first, following Node's issuer links and
 * stopping where a certificate issues itself (Node links a self-signed root to itself) or a
 * certificate repeats.
 */
export function peerChainOf(socket: tls.TLSSocket): Uint8Array[] {
  const chain: Uint8Array[] = [];
  const seen = new Set<string>();
  let cert: tls.DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  while (cert && cert.raw && cert.raw.length > 0 && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    chain.push(new Uint8Array(cert.raw));
    if (!cert.issuerCertificate || cert.issuerCertificate === cert) break;
    cert = cert.issuerCertificate;
  }
  return chain;
}

/** Options of {@link openPinnedConnection} and {@link connectPinnedSocket}. */
export interface OpenPinnedConnectionOptions {
  /** Host name or IP literal to dial (IPv6 with or without brackets). Also the name the listener's leaf must carry. */
  host: string;
  /** TCP port. */
  port: number;
  /** The client certificate and key presented in the handshake. */
  identity: Pick<MachineIdentity, "certPem" | "keyPem">;
  /**
   * The pinned cluster CA, DER. Absent before the PAKE: trust then comes from the PAKE and
   * the joiner must call `verifyListenerCertificate` with the CA of the PAKE answer. When
   * given, the connection is refused unless the listener's leaf passes that check.
   */
  ca?: Uint8Array | undefined;
  /**
   * The founder's time minus this machine's, in ms, as measured at the PAKE (the join
   * session's `clockOffsetMs`). Past 5 minutes, the listener's certificate is judged valid at
   * the founder's time, or at this machine's own clock should it have been fixed since.
   */
  clockOffsetMs?: number | undefined;
  /**
   * With `ca`: the listener leaf the PAKE proved (the join session's). Its key is taken, or a
   * leaf the CA issued no earlier; an older leaf of the CA is refused (`check` `pinned`).
   */
  listenerPin?: ListenerPin | undefined;
  /** SNI to send; default: `host` when it is a name (never an IP literal, RFC 6066). */
  servername?: string | undefined;
  /** Aborts the connection attempt; the abort is re-thrown as is. */
  signal?: AbortSignal | undefined;
  /** Time allowed for TCP + TLS (default 10 s); then `TimeoutError`. */
  connectTimeoutMs?: number | undefined;
}

/** A socket error that says the peer cut the connection, not that it refused the handshake. */
function cutOff(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ECONNRESET" || code === "EPIPE";
}

/** `host` without the brackets of an IPv6 literal. */
export function bareHost(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

function caPem(der: Uint8Array): string {
  try {
    return new NodeX509Certificate(der).toString();
  } catch (cause) {
    throw new StratumError("INVALID_ARGUMENT", "the pinned CA is not a DER certificate", { cause });
  }
}

/**
 * Opens the TLS socket and runs the listener check; resolves once it is safe to use. Used by
 * {@link openPinnedConnection}, and with `onread` by a caller that speaks HTTP on the socket
 * itself: the release download, whose body Node decrypts straight into the downloader's buffers.
 * @internal
 */
export function connectPinnedSocket(options: OpenPinnedConnectionOptions, onread?: OnReadOpts): Promise<tls.TLSSocket> {
  const { signal } = options;
  const host = bareHost(options.host);
  const servername = options.servername ?? (isIP(host) === 0 ? host : undefined);
  return new Promise<tls.TLSSocket>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    let tcpConnected = false;
    let settled = false;
    const socket = tls.connect({
      host,
      port: options.port,
      ...(servername !== undefined && isIP(servername) === 0 ? { servername } : {}),
      cert: options.identity.certPem,
      key: options.identity.keyPem,
      minVersion: "TLSv1.3",
      maxVersion: "TLSv1.3",
      // Before the PAKE the CA is unknown; with a CA, verifyListenerCertificate below is the
      // authority (it also checks the listener role, which OpenSSL cannot). OpenSSL's own
      // verdict against `ca` is consulted as a second opinion, never as the only one.
      rejectUnauthorized: false,
      ...(options.ca ? { ca: caPem(options.ca) } : {}),
      checkServerIdentity: () => undefined,
      // `onread` is documented for tls.connect; @types/node has it on net's options only
      ...(onread ? ({ onread } as object) : {}),
    });
    const timer = setTimeout(
      () =>
        fail(
          new TimeoutError(
            `no TLS connection to ${options.host}:${options.port} within ${options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS} ms`,
          ),
        ),
      options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    );
    const onAbort = (): void => fail(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const onError = (error: Error): void =>
      fail(
        // A handshake the peer cut (reset, closed: a listener restarting) is the network's
        // failure, tried again like a refused connection; an alert or a protocol error is TLS's.
        tcpConnected && !cutOff(error)
          ? new JoinProtocolError(
              "TLS_FAILED",
              `TLS 1.3 handshake with ${options.host}:${options.port} failed: ${error.message}`,
              { cause: error },
            )
          : new NetworkError(
              `${tcpConnected ? "the TLS handshake with" : "cannot connect to"} ${options.host}:${options.port} ${tcpConnected ? "was cut" : "failed"}: ${error.message}`,
              { cause: error },
            ),
      );
    const onClose = (): void =>
      onError(Object.assign(new Error("the connection closed during the handshake"), { code: "ECONNRESET" }));
    const cleanup = (): void => {
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.off("error", onError);
      socket.off("close", onClose);
    };
    function fail(error: unknown): void {
      if (settled) return;
      cleanup();
      socket.destroy();
      reject(error);
    }
    socket.once("connect", () => {
      tcpConnected = true;
    });
    socket.on("error", onError);
    socket.once("close", onClose);
    socket.once("secureConnect", () => {
      if (settled) return;
      try {
        if (socket.getProtocol() !== "TLSv1.3")
          throw new JoinProtocolError("TLS_FAILED", "the listener did not speak TLS 1.3");
        if (options.ca) {
          verifyPinnedListener({
            chain: peerChainOf(socket),
            caDer: options.ca,
            dialledHost: host,
            clockOffsetMs: options.clockOffsetMs,
            pin: options.listenerPin,
            openSslError: socket.authorized ? undefined : String(socket.authorizationError),
          });
        }
      } catch (error) {
        fail(error);
        return;
      }
      cleanup();
      resolve(socket);
    });
  });
}
