/**
 * A TLS-terminating relay on 127.0.0.1, as a machine in the middle runs one: it presents a
 * leaf of its choosing to the joiner and forwards every request to the real listener over a
 * pinned connection of its own (one per joiner connection, so a PAKE session stays on one
 * upstream connection), optionally rewriting the PAKE answer. It records what it forwarded.
 */
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import type { JoinCode } from "../../src/index.js";
import { createMachineIdentity } from "../../src/node/identity.js";
import { openPinnedConnection, type PinnedConnection } from "../../src/node/pinned-connection.js";
import { disableSessionTickets, tlsServerOptions } from "../../src/server/tls.js";

/** A running relay. */
export interface Relay {
  /** The join URL of `code` through the relay. */
  url: string;
  port: number;
  /** Requests the relay forwarded, `METHOD /path`. */
  forwarded: string[];
  /** The bodies of the requests it forwarded, as text, in order. */
  bodies: string[];
  close(): Promise<void>;
}

/** Starts a relay to `upstream` presenting `leaf`; `options.code` names the code of {@link Relay.url}. */
export async function startTlsRelay(
  upstream: { host: string; port: number },
  leaf: { certPem: string; keyPem: string },
  options: { code: JoinCode; rewritePake?: (body: Record<string, unknown>) => Record<string, unknown> },
): Promise<Relay> {
  const relayIdentity = await createMachineIdentity();
  const upstreams = new WeakMap<TLSSocket, Promise<PinnedConnection>>();
  const forwarded: string[] = [];
  const bodies: string[] = [];
  const server: Server = createServer({ ...tlsServerOptions(leaf) }, async (req, res) => {
    const socket = req.socket as TLSSocket;
    if (!upstreams.has(socket)) {
      upstreams.set(
        socket,
        openPinnedConnection({ host: upstream.host, port: upstream.port, identity: relayIdentity }),
      );
      socket.once("close", () => void upstreams.get(socket)?.then((c) => c.close()));
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    forwarded.push(`${req.method} ${req.url}`);
    bodies.push(Buffer.concat(chunks).toString("utf8"));
    const connection = await upstreams.get(socket)!;
    const headers: Record<string, string> = {};
    for (const name of ["content-type", "join-binding", "if-none-match"]) {
      const value = req.headers[name];
      if (typeof value === "string") headers[name] = value;
    }
    const answer = await connection.request({
      method: req.method as "POST",
      path: req.url!,
      headers,
      body: Buffer.concat(chunks),
    });
    let body: Uint8Array = answer.body;
    if (options.rewritePake && req.url === "/v1/join/pake" && answer.status === 200) {
      body = Buffer.from(JSON.stringify(options.rewritePake(answer.json as Record<string, unknown>)));
    }
    const out: Record<string, string> = {};
    for (const name of ["content-type", "join-binding", "retry-after", "etag"]) {
      const value = answer.headers[name];
      if (typeof value === "string") out[name] = value;
    }
    res.writeHead(answer.status, out).end(body);
  });
  disableSessionTickets(server);
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `stratum-join://127.0.0.1:${port}/${options.code.formatted}`,
    port,
    forwarded,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
