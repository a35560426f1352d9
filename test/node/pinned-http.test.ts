// The HTTP/1.1 client of the pinned connection, against a TLS server that answers with bytes
// the test writes: framing (length, chunked, the close), keep-alive across calls on one socket,
// the listener closing it, HEAD, bounds, and broken answers.
import type { AddressInfo } from "node:net";
import * as tls from "node:tls";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { StratumError } from "../../src/errors/index.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { openPinnedConnection, type PinnedConnection } from "../../src/node/pinned-connection.js";
import { createClusterCa, issueListenerCertificate } from "../../src/server/ca.js";
import { tlsServerOptions } from "../../src/server/tls.js";

let identity: MachineIdentity;
let serverOptions: tls.TlsOptions;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  const ca = await createClusterCa();
  const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] });
  serverOptions = tlsServerOptions({ certPem: leaf.certPem, keyPem: leaf.keyPem!, caPem: ca.certPem });
  identity = await createMachineIdentity();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A TLS server that reads each request head (and its Content-Length body) and answers with
 * what `answer` returns for it, as raw bytes; `null` ends the connection without an answer.
 */
async function rawListener(answer: (head: string, body: string, index: number) => string | null) {
  const requests: string[] = [];
  let connections = 0;
  const server = tls.createServer(serverOptions, (socket) => {
    connections += 1;
    let buffered = "";
    socket.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      for (;;) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const body = buffered.slice(end + 4, end + 4 + length);
        buffered = buffered.slice(end + 4 + length);
        requests.push(`${head}\r\n\r\n${body}`);
        const reply = answer(head, body, requests.length - 1);
        if (reply === null) socket.destroy();
        else socket.write(reply);
      }
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return { port: (server.address() as AddressInfo).port, requests, connections: () => connections };
}

async function open(port: number): Promise<PinnedConnection> {
  const connection = await openPinnedConnection({ host: "127.0.0.1", port, identity });
  cleanups.push(() => connection.close());
  return connection;
}

const json = (body: string, extra = "") =>
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

async function failure(promise: Promise<unknown>): Promise<StratumError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!StratumError.is(error)) throw new Error(`expected a StratumError, got ${String(error)}`);
  return error;
}

describe("the pinned connection's HTTP/1.1", () => {
  it("sends method, path, Host and the JSON body, and keeps the one socket for the next call", async () => {
    const listener = await rawListener((_head, _body, i) => json(`{"n":${i}}`));
    const connection = await open(listener.port);
    const first = await connection.request({ method: "POST", path: "/v1/join/pake", json: { selector: "4F" } });
    const second = await connection.request({ path: "/v1/join/registrations/nj-1?waitSeconds=1" });
    expect([first.json, second.json]).toEqual([{ n: 0 }, { n: 1 }]);
    expect(listener.connections()).toBe(1);
    expect(listener.requests[0]).toMatch(/^POST \/v1\/join\/pake HTTP\/1\.1\r\nhost: 127\.0\.0\.1:\d+\r\n/);
    expect(listener.requests[0]).toContain(
      'content-type: application/json\r\ncontent-length: 17\r\n\r\n{"selector":"4F"}',
    );
    expect(listener.requests[1]).toMatch(/^GET \/v1\/join\/registrations\/nj-1\?waitSeconds=1 HTTP\/1\.1\r\n/);
    expect(listener.requests[1]).not.toContain("content-length");
    expect(connection.alive).toBe(true);
  });

  it("reads a chunked answer (with an interim 100 and a trailer) and the answer after it", async () => {
    const listener = await rawListener((_h, _b, i) =>
      i === 0
        ? 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{"a"\r\n3\r\n:1}\r\n0\r\nx-sum: 1\r\n\r\n'
        : json('{"b":2}'),
    );
    const connection = await open(listener.port);
    expect((await connection.request({ path: "/a" })).json).toEqual({ a: 1 });
    expect((await connection.request({ path: "/b" })).json).toEqual({ b: 2 });
    expect(listener.connections()).toBe(1);
  });

  it("reads a HEAD answer without a body, and the next answer on the same socket", async () => {
    const listener = await rawListener((head) =>
      head.startsWith("HEAD") ? "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n" : json('{"after":"head"}'),
    );
    const connection = await open(listener.port);
    const head = await connection.request({ method: "HEAD", path: "/file" });
    expect([head.status, head.headers["content-length"], head.body.length]).toEqual([200, "1000", 0]);
    expect((await connection.request({ path: "/next" })).json).toEqual({ after: "head" });
  });

  it("after `Connection: close` or a body framed by the close, the next call fails with CONNECTION_CHANGED", async () => {
    for (const reply of [
      json("{}", "connection: close\r\n"),
      'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{"x":1}',
    ]) {
      const listener = await rawListener(() => reply);
      const connection = await open(listener.port);
      const closing = connection.request({ path: "/x" });
      if (!reply.includes("content-length")) setTimeout(() => void connection.close(), 300);
      await closing.catch(() => undefined);
      expect(connection.alive).toBe(false);
      expect(await failure(connection.request({ path: "/y" }))).toMatchObject({ code: "CONNECTION_CHANGED" });
      expect(listener.connections()).toBe(1);
    }
  });

  it("an answer cut short, malformed or past the size bound is an error, and the connection is closed", async () => {
    const cases: Array<[string | null, string]> = [
      [null, "NETWORK"],
      ["HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc", "NETWORK"],
      ["HTTP/1.1 200 OK\ncontent-length: 0\n\n", "NETWORK"],
      ["HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 1\r\n\r\nx", "NETWORK"],
      ["SSH-2.0-OpenSSH\r\n\r\n", "NETWORK"],
      ["HTTP/1.1 200 OK\r\ncontent-length: 2000\r\n\r\n", "RESPONSE_TOO_LARGE"],
      [
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n7d0\r\n" + "x".repeat(2000) + "\r\n0\r\n\r\n",
        "RESPONSE_TOO_LARGE",
      ],
    ];
    for (const [reply, code] of cases) {
      const listener = await rawListener(() => reply);
      const connection = await open(listener.port);
      const request = connection.request({ path: "/x", maxBodyBytes: 1000, timeoutMs: 2000 });
      if (reply?.includes("content-length: 10\r\n")) setTimeout(() => void connection.close(), 200);
      const error = await failure(request);
      expect(error.code, JSON.stringify(reply)).toBe(code);
      expect(connection.alive).toBe(false);
    }
  });

  it("a listener that never answers ends in TIMEOUT; an abort is re-thrown as is; neither leaves the socket open", async () => {
    const listener = await rawListener(() => "");
    const connection = await open(listener.port);
    expect(await failure(connection.request({ path: "/x", timeoutMs: 200 }))).toMatchObject({ code: "TIMEOUT" });
    expect(connection.alive).toBe(false);
    const again = await open(listener.port);
    const reason = new DOMException("stop", "AbortError");
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 50);
    await expect(again.request({ path: "/x", signal: controller.signal })).rejects.toBe(reason);
    expect(again.alive).toBe(false);
  });

  it("refuses a header that would smuggle a line, before anything is sent", async () => {
    const listener = await rawListener(() => json("{}"));
    const connection = await open(listener.port);
    await expect(connection.request({ path: "/x", headers: { "x-a": "1\r\nx-b: 2" } })).rejects.toThrow(
      /request header "x-a" is not a valid field/,
    );
    expect(listener.requests).toEqual([]);
  });
});
