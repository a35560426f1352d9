import * as https from "node:https";
import * as net from "node:net";
import * as tls from "node:tls";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { StratumError } from "../../src/errors/index.js";
import { JoinProtocolError } from "../../src/errors/join.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { disableSessionTickets, peerKeyFingerprint, tlsServerOptions } from "../../src/server/tls.js";
import { openPinnedConnection, type PinnedConnection } from "../../src/node/pinned-connection.js";
import { tlsExporter } from "../../src/protocol/tls-exporter.js";
import {
  createClusterCa,
  issueListenerCertificate,
  issueNodeCertificate,
  type ClusterCa,
  type IssuedCertificate,
} from "../../src/server/ca.js";
import { verifyListenerCertificate } from "../../src/protocol/pki.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

let ca: ClusterCa;
let otherCa: ClusterCa;
let listenerLeaf: IssuedCertificate;
let identity: MachineIdentity;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  ca = await createClusterCa();
  otherCa = await createClusterCa();
  listenerLeaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1", "::1", "localhost"] });
  identity = await createMachineIdentity();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A listener-like HTTPS server. `/whoami` answers what the server sees of this TLS connection;
 * `/close` answers and closes the connection.
 */
async function startListener(
  options: { leaf?: { certPem: string; keyPem: string | undefined }; tickets?: boolean; host?: string } = {},
) {
  const leaf = options.leaf ?? listenerLeaf;
  const server = https.createServer(
    tlsServerOptions({ certPem: leaf.certPem, keyPem: leaf.keyPem!, caPem: ca.certPem }),
    (req, res) => {
      const socket = req.socket as tls.TLSSocket;
      if (req.url === "/slow") {
        const timer = setTimeout(() => res.end(), 5_000);
        res.on("close", () => clearTimeout(timer));
        return;
      }
      if (req.url === "/close") res.setHeader("connection", "close");
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          keyFingerprint: peerKeyFingerprint(socket),
          exporter: hex(tlsExporter(socket)),
          // What OpenSSL gives without a context at all; equal to the empty context in TLS 1.3.
          exporterNoContext: (socket.exportKeyingMaterial as (n: number, l: string) => Buffer)(
            32,
            "EXPORTER-Channel-Binding",
          ).toString("hex"),
          remotePort: socket.remotePort,
          protocol: socket.getProtocol(),
        }),
      );
    },
  );
  // The exchange's connection must survive the joiner's pauses (Argon2 between PAKE and KE3).
  server.keepAliveTimeout = 120_000;
  if (options.tickets !== true) disableSessionTickets(server);
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { server, port: (server.address() as net.AddressInfo).port };
}

async function open(
  port: number,
  extra: Partial<Parameters<typeof openPinnedConnection>[0]> = {},
): Promise<PinnedConnection> {
  const connection = await openPinnedConnection({ host: "127.0.0.1", port, identity, ...extra });
  cleanups.push(() => connection.close());
  return connection;
}

async function failure(promise: Promise<unknown>): Promise<StratumError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!StratumError.is(error)) throw new Error(`expected a StratumError, got ${String(error)}`);
  return error;
}

describe("openPinnedConnection", () => {
  it("does a TLS 1.3 handshake with the client key; both sides agree on key fingerprint and exporter", async () => {
    const { port } = await startListener();
    const connection = await open(port);
    const first = await connection.request({ path: "/whoami" });
    expect(first.status).toBe(200);
    const seen = first.json as Record<string, unknown>;
    expect(seen.protocol).toBe("TLSv1.3");
    expect(seen.keyFingerprint).toBe(identity.keyFingerprint);
    expect(connection.exporter()).toHaveLength(32);
    expect(seen.exporter).toBe(hex(connection.exporter()));
    expect(seen.exporterNoContext).toBe(seen.exporter);
    expect(connection.peerChainDer()[0]).toEqual(listenerLeaf.certDer);
    // The same socket carries the next request.
    const second = await connection.request({ method: "POST", path: "/whoami", json: { a: 1 } });
    expect((second.json as Record<string, unknown>).remotePort).toBe(seen.remotePort);
    expect(connection.alive).toBe(true);
    // A second connection has another exporter: the binding is per connection.
    const other = await open(port);
    expect(hex(other.exporter())).not.toBe(hex(connection.exporter()));
  });

  it("with the pinned CA, accepts the listener by IP, IPv6 and name", async () => {
    const { port } = await startListener();
    const connection = await open(port, { ca: ca.certDer });
    expect((await connection.request({ path: "/whoami" })).status).toBe(200);
    await open(port, { ca: ca.certDer, host: "localhost" });
    const v6 = await startListener({ host: "::1" });
    await open(v6.port, { ca: ca.certDer, host: "[::1]" });
  });

  it("with the pinned CA, refuses another CA's listener, a wrong SAN and a node leaf", async () => {
    const { port } = await startListener();
    const otherCaError = await failure(
      openPinnedConnection({ host: "127.0.0.1", port, identity, ca: otherCa.certDer }),
    );
    expect(otherCaError).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "chain" });

    const ipOnly = await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] });
    const ipOnlyServer = await startListener({ leaf: ipOnly });
    const nameError = await failure(
      openPinnedConnection({ host: "localhost", port: ipOnlyServer.port, identity, ca: ca.certDer }),
    );
    expect(nameError).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "name" });

    const node = await issueNodeCertificate(ca, { nodeId: "node-1", hosts: ["127.0.0.1"] });
    const nodeServer = await startListener({ leaf: node });
    const roleError = await failure(
      openPinnedConnection({ host: "127.0.0.1", port: nodeServer.port, identity, ca: ca.certDer }),
    );
    expect(roleError).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "role" });
    expect(roleError.message).toContain("urn:stratum:join-listener");
  });

  it("verifyListenerCertificate on a chain from a real handshake: good, other CA, expired, wrong SAN", async () => {
    const { port } = await startListener();
    const connection = await open(port);
    const chain = connection.peerChainDer();
    expect(() => verifyListenerCertificate({ chain, caDer: ca.certDer, dialledHost: "127.0.0.1" })).not.toThrow();
    const cases: Array<[Parameters<typeof verifyListenerCertificate>[0], string]> = [
      [{ chain, caDer: otherCa.certDer, dialledHost: "127.0.0.1" }, "chain"],
      [{ chain, caDer: ca.certDer, dialledHost: "127.0.0.1", now: new Date(Date.now() + 91 * 86_400_000) }, "validity"],
      [{ chain, caDer: ca.certDer, dialledHost: "10.1.1.1" }, "name"],
    ];
    for (const [input, check] of cases) {
      expect(() => verifyListenerCertificate(input)).toThrow(
        expect.objectContaining({ code: "LISTENER_CERTIFICATE", check }),
      );
    }
  });

  it("never opens a second socket: after the server closes the connection, the next request fails with CONNECTION_CHANGED", async () => {
    const { server, port } = await startListener();
    let connections = 0;
    server.on("secureConnection", () => connections++);
    const connection = await open(port);
    expect((await connection.request({ path: "/close" })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(connection.alive).toBe(false);
    const error = await failure(connection.request({ path: "/whoami" }));
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect(error.code).toBe("CONNECTION_CHANGED");
    expect(connections).toBe(1);
  });

  it("refuses a server that speaks only TLS 1.2", async () => {
    const server = tls.createServer(
      { cert: listenerLeaf.certPem, key: listenerLeaf.keyPem!, maxVersion: "TLSv1.2" },
      (s) => s.end(),
    );
    server.on("tlsClientError", () => {});
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const error = await failure(
      openPinnedConnection({ host: "127.0.0.1", port: (server.address() as net.AddressInfo).port, identity }),
    );
    expect(error).toMatchObject({ code: "TLS_FAILED" });
  });

  it("fails with NETWORK when nothing listens, TIMEOUT when TLS never answers, and re-throws an abort as is", async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await failure(openPinnedConnection({ host: "127.0.0.1", port: closedPort, identity }))).toMatchObject({
      code: "NETWORK",
    });

    // Reads (so it notices the client's close) but never answers the ClientHello.
    const silent = net.createServer((socket) => socket.resume());
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    cleanups.push(
      () =>
        new Promise((resolve) => {
          silent.close(resolve);
        }),
    );
    const silentPort = (silent.address() as net.AddressInfo).port;
    expect(
      await failure(openPinnedConnection({ host: "127.0.0.1", port: silentPort, identity, connectTimeoutMs: 200 })),
    ).toMatchObject({ code: "TIMEOUT" });

    const reason = new DOMException("stop", "AbortError");
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 50);
    await expect(
      openPinnedConnection({ host: "127.0.0.1", port: silentPort, identity, signal: controller.signal }),
    ).rejects.toBe(reason);
    await expect(
      openPinnedConnection({ host: "127.0.0.1", port: silentPort, identity, signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
  });

  it("re-throws a request's abort as is", async () => {
    const { port } = await startListener();
    const connection = await open(port);
    const reason = new DOMException("stop", "AbortError");
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 50);
    await expect(connection.request({ path: "/slow", signal: controller.signal })).rejects.toBe(reason);
    await expect(connection.request({ path: "/whoami", signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });
});

describe("tlsExporter", () => {
  it("is read only on a TLS 1.3 connection: a TLS 1.2 socket's exporter is no channel binding", async () => {
    const server = tls.createServer(
      { cert: listenerLeaf.certPem, key: listenerLeaf.keyPem!, maxVersion: "TLSv1.2" },
      (s) => s.on("error", () => {}),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const client = tls.connect({
      host: "127.0.0.1",
      port: (server.address() as net.AddressInfo).port,
      maxVersion: "TLSv1.2",
      rejectUnauthorized: false,
    });
    cleanups.push(() => client.destroy());
    await new Promise<void>((resolve, reject) => client.once("secureConnect", resolve).once("error", reject));
    expect(client.getProtocol()).toBe("TLSv1.2");
    expect(() => tlsExporter(client)).toThrow(
      expect.objectContaining({
        code: "TLS_FAILED",
        message: "the TLS exporter is only used on a TLS 1.3 connection",
      }),
    );
  });
});

describe("tlsServerOptions", () => {
  it("refuses a TLS 1.2 client", async () => {
    const { port } = await startListener();
    const client = tls.connect({ host: "127.0.0.1", port, maxVersion: "TLSv1.2", rejectUnauthorized: false });
    const error = await new Promise<Error>((resolve) => {
      client.on("error", resolve);
      client.on("secureConnect", () => resolve(new Error("connected")));
    });
    expect(error.message).not.toBe("connected");
    expect(error.message).toMatch(/protocol version|unsupported protocol|alert/i);
  });

  /** Counts the client's 'session' events: one per NewSessionTicket received. */
  async function ticketsReceived(port: number): Promise<number> {
    let sessions = 0;
    const client = tls.connect({
      host: "127.0.0.1",
      port,
      cert: identity.certPem,
      key: identity.keyPem,
      rejectUnauthorized: false,
      minVersion: "TLSv1.3",
    });
    client.on("session", () => sessions++);
    await new Promise<void>((resolve, reject) => {
      client.once("secureConnect", () => {
        client.write("GET /whoami HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
      });
      client.on("data", () => {});
      client.on("end", resolve);
      client.on("error", reject);
    });
    return sessions;
  }

  it("with disableSessionTickets issues no TLS 1.3 session ticket (and without it Node would)", async () => {
    const withTickets = await startListener({ tickets: true });
    expect(await ticketsReceived(withTickets.port)).toBeGreaterThan(0);
    const { port } = await startListener();
    expect(await ticketsReceived(port)).toBe(0);
    expect(await ticketsReceived(port)).toBe(0);
  });

  it("keeps tickets off after setSecureContext", async () => {
    const { server, port } = await startListener();
    server.setSecureContext(tlsServerOptions({ certPem: listenerLeaf.certPem, keyPem: listenerLeaf.keyPem! }));
    expect(await ticketsReceived(port)).toBe(0);
  });

  it("reports no key fingerprint for a client without a certificate", async () => {
    let seen: string | undefined = "unset";
    const server = tls.createServer(
      tlsServerOptions({ certPem: listenerLeaf.certPem, keyPem: listenerLeaf.keyPem! }),
      (socket) => {
        seen = peerKeyFingerprint(socket);
        socket.end();
      },
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    const client = tls.connect({
      host: "127.0.0.1",
      port: (server.address() as net.AddressInfo).port,
      rejectUnauthorized: false,
    });
    client.on("data", () => {});
    await new Promise((resolve) => client.on("close", resolve));
    expect(seen).toBeUndefined();
  });
});
