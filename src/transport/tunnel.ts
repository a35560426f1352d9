/**
 * A mirror connection through an HTTP proxy: a `CONNECT host:port` tunnel (RFC 9110 section
 * 9.3.6), then TLS to the mirror inside it, end to end: the proxy relays bytes it cannot read,
 * and the mirror's certificate is checked exactly as on a direct connection.
 * @internal
 * @module
 */
import { STATUS_CODES } from "node:http";
import { connect as netConnect, isIP, type Socket } from "node:net";
import * as tls from "node:tls";
import { handshake, mirrorTlsOptions } from "./connect.js";
import type { Http1Connector } from "./http1/index.js";
import type { HttpProxy } from "./proxy.js";

/** Largest answer head a proxy may send to CONNECT: a few hundred bytes in practice. */
const MAX_CONNECT_HEAD_BYTES = 16 * 1024;

/**
 * The proxy failed the tunnel: it answered CONNECT with a status other than 2xx (`status`),
 * or the connection to it failed or broke before the tunnel was up (`code`). Carries no
 * credentials: the proxy is named by its display URL.
 * @internal
 */
export class ProxyTunnelError extends Error {
  /** The proxy's answer to CONNECT, when it answered. */
  readonly status: number | undefined;
  /** The socket error's code (ECONNREFUSED, ECONNRESET…) when it did not. */
  readonly code: string | undefined;
  /** The proxy, without credentials. */
  readonly proxy: string;

  constructor(proxy: string, message: string, extra: { status?: number; code?: string; cause?: unknown } = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "ProxyTunnelError";
    this.proxy = proxy;
    this.status = extra.status;
    this.code = extra.code;
  }

  /**
   * A refusal that asking again cannot change (407 credentials, 403 a policy, 405, 400…);
   * 408, 429 and 5xx (the proxy could not reach the mirror just now) are worth a retry, as
   * are broken connections.
   */
  get permanent(): boolean {
    const status = this.status;
    return status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
  }
}

/**
 * A connector for `http1Get` through `proxy`: TCP to the proxy, `CONNECT`, then TLS to `target`
 * over the tunnel (certificate checked against `ca` or the system's roots and `target.host`).
 *
 * Node reads a TLS socket layered on another socket through stream events, not `onread` (it
 * takes `onread` only for a socket it opens itself), so the body's records arrive as chunks
 * and are handed to `onread.callback` as they come: the reader copies them into the
 * consumer's buffer, once each. Returning false pauses the socket, as `onread` does.
 */
export function tunnelConnector(
  target: { host: string; port: number; ca?: string | string[] },
  proxy: HttpProxy,
  onSocket?: (socket: Socket) => void,
): Http1Connector {
  return async (onread, signal) => {
    const raw = await openTunnel(target, proxy, signal, onSocket);
    const socket = tls.connect({ ...mirrorTlsOptions(target), socket: raw });
    onSocket?.(socket);
    try {
      await handshake(socket, signal);
    } catch (error) {
      raw.destroy();
      throw error;
    }
    // the tunnel's socket goes with the TLS connection over it
    socket.once("close", () => raw.destroy());
    socket.on("data", (chunk: Buffer) => {
      if ((onread.callback as (n: number, b: Uint8Array) => boolean)(chunk.length, chunk) === false) socket.pause();
    });
    return socket;
  };
}

/** TCP to the proxy and a `CONNECT` answered 2xx; resolves with the socket, paused, nothing read past the answer. */
function openTunnel(
  target: { host: string; port: number },
  proxy: HttpProxy,
  signal: AbortSignal,
  onSocket?: (socket: Socket) => void,
): Promise<Socket> {
  const authority = `${isIP(target.host) === 6 ? `[${target.host}]` : target.host}:${target.port}`;
  const what = `the proxy ${proxy.display}`;
  return new Promise<Socket>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const socket = netConnect({ host: proxy.host, port: proxy.port });
    onSocket?.(socket);
    let head = Buffer.alloc(0);
    let done = false;
    const finish = (error?: unknown): void => {
      if (done) return;
      done = true;
      signal.removeEventListener("abort", onAbort);
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("close", onClose);
      socket.off("connect", onConnect);
      if (error === undefined) {
        // from here the TLS socket over it reports the connection's failures (and its close)
        socket.on("error", () => {});
        socket.pause();
        resolve(socket);
      } else {
        socket.destroy();
        reject(error);
      }
    };
    const onAbort = (): void => finish(signal.reason);
    const onConnect = (): void => {
      const lines = [`CONNECT ${authority} HTTP/1.1`, `Host: ${authority}`];
      if (proxy.authorization) lines.push(`Proxy-Authorization: ${proxy.authorization}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    };
    const onError = (error: NodeJS.ErrnoException): void =>
      finish(
        new ProxyTunnelError(proxy.display, `${what} could not be reached (${error.code ?? "connection error"})`, {
          ...(error.code === undefined ? {} : { code: error.code }),
          cause: error,
        }),
      );
    const onClose = (): void =>
      finish(
        new ProxyTunnelError(proxy.display, `${what} closed the connection before it opened the tunnel`, {
          code: "ECONNRESET",
        }),
      );
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > MAX_CONNECT_HEAD_BYTES)
          finish(new ProxyTunnelError(proxy.display, `${what} sent an answer to CONNECT with no end`));
        return;
      }
      finish(judgeAnswer(head, end, proxy, authority));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    socket.on("data", onData);
    socket.once("error", onError);
    socket.once("close", onClose);
    socket.once("connect", onConnect);
  });
}

/** Undefined when the proxy's answer opened the tunnel; the error otherwise. */
function judgeAnswer(head: Buffer, end: number, proxy: HttpProxy, authority: string): ProxyTunnelError | undefined {
  const what = `the proxy ${proxy.display}`;
  const match = /^HTTP\/1\.[01] (\d{3})(?: |\r|$)/.exec(head.subarray(0, Math.min(end, 64)).toString("latin1"));
  if (!match) return new ProxyTunnelError(proxy.display, `${what} did not answer CONNECT in HTTP/1.1`);
  const status = Number(match[1]);
  if (status < 200 || status > 299) {
    // the standard reason phrase, never the proxy's own text
    const reason = STATUS_CODES[status] ?? "";
    // 407 is the proxy's "credentials, please"; some proxies (tinyproxy) answer 401 when none came
    const hint =
      status === 407 || status === 401
        ? proxy.authorization
          ? ": it refused the credentials in the proxy URL"
          : ": it wants credentials (http://user:password@host:port)"
        : "";
    return new ProxyTunnelError(
      proxy.display,
      `${what} refused the tunnel to ${authority}: HTTP ${status}${reason ? ` ${reason}` : ""}${hint}`,
      { status },
    );
  }
  // the mirror speaks only after the TLS ClientHello: bytes here are not the mirror's
  if (head.length > end + 4) return new ProxyTunnelError(proxy.display, `${what} sent bytes after opening the tunnel`);
  return undefined;
}
