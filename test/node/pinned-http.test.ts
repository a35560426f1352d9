// The HTTP/1.1 client of the pinned connection, against a TLS server that answers with bytes
// the test writes: framing (length, chunked, the close), keep-alive across calls on one socket,
// the listener closing it, HEAD, bounds, and broken answers.
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import * as tls from "node:tls";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { StratumError } from "../../src/errors/index.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { openPinnedConnection, type PinnedConnection } from "../../src/node/pinned-connection.js";
import { PinnedHttp } from "../../src/node/pinned-http.js";
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
async function rawListener(
  answer: (head: string, body: string, index: number, socket: tls.TLSSocket) => string | null,
) {
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
        const reply = answer(head, body, requests.length - 1, socket);
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

/** Sockets that keep the process alive (the listener's side of each connection among them). */
const refSockets = (): number => process.getActiveResourcesInfo().filter((type) => type === "TCPSocketWrap").length;

describe("the pinned connection's HTTP/1.1: what it sends", () => {
  it("writes the framing itself: the caller's Host, Content-Length, Transfer-Encoding and Connection are dropped, other names lower-cased", async () => {
    const listener = await rawListener(() => json("{}"));
    const connection = await open(listener.port);
    await connection.request({
      method: "POST",
      path: "/x",
      headers: {
        Host: "elsewhere.example",
        "Content-Length": "99",
        "Transfer-Encoding": "chunked",
        Connection: "close",
        "X-Trace": "a\tb ~\x80",
      },
      body: "hi",
    });
    expect(listener.requests).toEqual([
      `POST /x HTTP/1.1\r\nhost: 127.0.0.1:${listener.port}\r\nx-trace: a\tb ~\x80\r\ncontent-length: 2\r\n\r\nhi`,
    ]);
    expect(connection.alive).toBe(true);
  });

  it("a POST, PUT or PATCH without a body says Content-Length: 0; a GET, HEAD or DELETE without one says nothing", async () => {
    const listener = await rawListener((head) =>
      head.startsWith("HEAD") ? "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n" : json("{}"),
    );
    const connection = await open(listener.port);
    for (const method of ["POST", "PUT", "PATCH", "GET", "HEAD", "DELETE"] as const) {
      await connection.request({ method, path: "/x" });
    }
    expect(listener.requests.map((request) => request.includes("\r\ncontent-length: 0\r\n\r\n"))).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(listener.requests.filter((request) => request.includes("content-length"))).toHaveLength(3);
  });

  it("refuses a method, path or header field it cannot send, before anything is sent, and the connection stays usable", async () => {
    const listener = await rawListener(() => json('{"ok":true}'));
    const connection = await open(listener.port);
    const refused: Array<[Parameters<PinnedConnection["request"]>[0], RegExp]> = [
      // as a caller without the types could pass them
      [{ method: "GE T" as "GET", path: "/x" }, /"GE T" is not an HTTP method/],
      [{ method: "" as "GET", path: "/x" }, /"" is not an HTTP method/],
      ...["x", "", "x/", "http://elsewhere.example/x", "/a b", "/a\x7f", "/\u00e9", "/a\r\n"].map(
        (path): [Parameters<PinnedConnection["request"]>[0], RegExp] => [
          { path },
          /the request path is not an absolute, percent-encoded path/,
        ],
      ),
      [{ path: "/x", headers: { "x a": "1" } }, /request header "x a" is not a valid field/],
      [{ path: "/x", headers: { "": "1" } }, /request header "" is not a valid field/],
      ...["\x00", "\x08", "a\nb", "a\rb", "\x1f", "\x7f"].map(
        (value): [Parameters<PinnedConnection["request"]>[0], RegExp] => [
          { path: "/x", headers: { "x-v": value } },
          /request header "x-v" is not a valid field/,
        ],
      ),
    ];
    for (const [request, message] of refused) {
      await expect(connection.request(request), JSON.stringify(request)).rejects.toThrow(message);
    }
    expect(listener.requests).toEqual([]);
    expect(connection.alive).toBe(true);
    for (const path of ["/", "/!~%20?a=b&c"]) expect((await connection.request({ path })).json).toEqual({ ok: true });
    expect(listener.requests.map((request) => request.split("\r\n")[0])).toEqual([
      "GET / HTTP/1.1",
      "GET /!~%20?a=b&c HTTP/1.1",
    ]);
  });

  it("calls made at once go one after the other: the next is written only once the answer before it is read", async () => {
    let answered = 0;
    const seenAfter: number[] = [];
    const listener = await rawListener((_head, _body, i, socket) => {
      seenAfter.push(answered);
      setTimeout(() => {
        answered += 1;
        socket.write(json(`{"n":${i}}`));
      }, 100);
      return "";
    });
    const connection = await open(listener.port);
    const answers = await Promise.all([0, 1, 2].map((n) => connection.request({ path: `/${n}` })));
    expect(answers.map((answer) => answer.json)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
    expect(seenAfter).toEqual([0, 1, 2]);
  });

  it("a call queued behind one that broke the connection fails with CONNECTION_CHANGED, not with the first call's error", async () => {
    const listener = await rawListener(() => "HTTP/1.1 200 OK\r\ncontent-length: 5000\r\n\r\n");
    const connection = await open(listener.port);
    const first = connection.request({ path: "/a", maxBodyBytes: 1000 });
    const second = connection.request({ path: "/b" });
    expect(await failure(first)).toMatchObject({ code: "RESPONSE_TOO_LARGE" });
    expect(await failure(second)).toMatchObject({ code: "CONNECTION_CHANGED" });
    expect(listener.requests).toHaveLength(1);
  });

  it("keeps the process alive only while a call is in flight", async () => {
    const listener = await rawListener((_head, _body, _i, socket) => {
      setTimeout(() => socket.write(json("{}")), 200);
      return "";
    });
    const connection = await open(listener.port);
    const idle = refSockets();
    const call = connection.request({ path: "/x" });
    await vi.waitFor(() => expect(listener.requests).toHaveLength(1));
    expect(refSockets()).toBe(idle + 1);
    await call;
    expect(refSockets()).toBe(idle);
    expect(connection.alive).toBe(true);
  });
});

describe("the pinned connection's HTTP/1.1: how an answer is framed", () => {
  it("`Connection: close` is a token of the header, in any case, among others or on a line of its own", async () => {
    const cases: Array<[string, boolean]> = [
      ["connection: keep-alive\r\n", true],
      ["connection: closed\r\n", true],
      ["connection: x-close\r\n", true],
      ["connection: Keep-Alive, CLOSE\r\n", false],
      ["connection: keep-alive,close \r\n", false],
      ["connection: keep-alive\r\nconnection: close\r\n", false],
    ];
    for (const [extra, alive] of cases) {
      const listener = await rawListener(() => json("{}", extra));
      const connection = await open(listener.port);
      await connection.request({ path: "/x" });
      expect(connection.alive, extra).toBe(alive);
    }
  });

  it("an HTTP/1.0 answer is the connection's last: the next call fails with CONNECTION_CHANGED", async () => {
    const listener = await rawListener(
      () => 'HTTP/1.0 200 OK\r\ncontent-type: application/json\r\ncontent-length: 7\r\n\r\n{"a":1}',
    );
    const connection = await open(listener.port);
    expect((await connection.request({ path: "/x" })).json).toEqual({ a: 1 });
    expect(connection.alive).toBe(false);
    expect(await failure(connection.request({ path: "/y" }))).toMatchObject({
      code: "CONNECTION_CHANGED",
      message:
        "the connection to the join listener was closed; the exchange cannot continue on a new connection, start it again",
    });
    expect(listener.requests).toHaveLength(1);
  });

  it("bytes the listener sends between answers end the connection: the next call is not sent", async () => {
    const listener = await rawListener((_head, _body, _i, socket) => {
      setTimeout(() => socket.write("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"), 100);
      return json("{}");
    });
    const connection = await open(listener.port);
    await connection.request({ path: "/x" });
    expect(connection.alive).toBe(true);
    await vi.waitFor(() => expect(connection.alive).toBe(false));
    expect(await failure(connection.request({ path: "/y" }))).toMatchObject({ code: "CONNECTION_CHANGED" });
    expect(listener.requests).toHaveLength(1);
  });

  it("finds the blank line wherever a read splits it, and reads the body after it", async () => {
    const reply = json('{"split":true}');
    const blank = reply.indexOf("\r\n\r\n");
    for (const at of [blank - 1, blank, blank + 1, blank + 2, blank + 3, blank + 4]) {
      const listener = await rawListener((_head, _body, _i, socket) => {
        setTimeout(() => socket.write(reply.slice(at)), 50);
        return reply.slice(0, at);
      });
      const connection = await open(listener.port);
      const answer = await connection.request({ path: "/x", timeoutMs: 5000 });
      expect(answer.json, `split at ${at - blank}`).toEqual({ split: true });
      expect(connection.alive).toBe(true);
    }
  });

  it("reads a head of 64 KiB; one a byte longer is refused, and so is one that grows past it without its blank line", async () => {
    // a head of `bytes`: its lines with their CR LFs, then the blank line's CR LF
    const headOf = (bytes: number) => {
      const start = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-fill: ";
      return `${start}${"f".repeat(bytes - start.length - 2)}\r\n\r\n`;
    };
    const cases: Array<[string, string | undefined]> = [
      [headOf(64 * 1024) + "ok", undefined],
      [headOf(64 * 1024 + 1) + "ok", "NETWORK"],
      ["HTTP/1.1 200 OK\r\nx-fill: " + "f".repeat(64 * 1024), "NETWORK"],
    ];
    for (const [reply, code] of cases) {
      const listener = await rawListener(() => reply);
      const connection = await open(listener.port);
      const answer = connection.request({ path: "/x", timeoutMs: 20_000 });
      if (code === undefined) {
        expect(Buffer.from((await answer).body).toString()).toBe("ok");
      } else {
        const error = await failure(answer);
        expect(error.code).toBe(code);
        expect(error.message).toBe("GET /x failed: the response head is larger than 65536 bytes");
        expect(error.cause).toMatchObject({ name: "Http1Error", code: "HTTP1_PARSE" });
      }
    }
  });

  it("a body of exactly maxBodyBytes is read, framed by length or chunked; a byte more is refused", async () => {
    const body = "x".repeat(1000);
    const chunked = (text: string) =>
      `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${(text.length - 1).toString(16)}\r\n${text.slice(1)}\r\n1\r\n${text[0]}\r\n0\r\n\r\n`;
    const cases: Array<[string, string | undefined]> = [
      [`HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n${body}`, undefined],
      [`HTTP/1.1 200 OK\r\ncontent-length: 1001\r\n\r\n${body}x`, "RESPONSE_TOO_LARGE"],
      [chunked(body), undefined],
      [chunked(`${body}x`), "RESPONSE_TOO_LARGE"],
    ];
    for (const [reply, code] of cases) {
      const listener = await rawListener(() => reply);
      const connection = await open(listener.port);
      const answer = connection.request({ path: "/x", maxBodyBytes: 1000 });
      if (code === undefined) expect(Buffer.from((await answer).body).toString()).toBe(body);
      else {
        const error = await failure(answer);
        expect([error.code, error.message]).toEqual([code, "the answer of GET /x is larger than 1000 bytes"]);
      }
    }
  });

  it("a body framed by the close is everything until the listener ends the connection, over several reads", async () => {
    const listener = await rawListener((_head, _body, _i, socket) => {
      // each write scheduled by the one before: timers of different lengths can fire out of
      // order on a loaded machine
      setTimeout(() => {
        socket.write("cd");
        setTimeout(() => socket.end("ef"), 50);
      }, 50);
      return "HTTP/1.1 200 OK\r\n\r\nab";
    });
    const connection = await open(listener.port);
    const answer = await connection.request({ path: "/x", timeoutMs: 5000 });
    expect([answer.status, Buffer.from(answer.body).toString()]).toEqual([200, "abcdef"]);
    expect(connection.alive).toBe(false);
  });

  it("an empty body is empty, whether by a Content-Length of 0 or a 204", async () => {
    const listener = await rawListener((_h, _b, i) =>
      i === 0 ? "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n" : "HTTP/1.1 204 No Content\r\n\r\n",
    );
    const connection = await open(listener.port);
    for (const status of [200, 204]) {
      const answer = await connection.request({ path: "/x" });
      expect([answer.status, answer.body.length, answer.json]).toEqual([status, 0, undefined]);
    }
    expect(connection.alive).toBe(true);
  });
});

describe("the pinned connection's HTTP/1.1: a connection that ends", () => {
  it("a listener that speaks before it is asked is not an HTTP/1.1 server: the first call is not sent", async () => {
    const server = tls.createServer(serverOptions, (socket) => {
      socket.on("error", () => {});
      socket.write("SSH-2.0-OpenSSH_9.2\r\n");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => server.close(resolve)));
    let received = "";
    server.on("secureConnection", (socket) => socket.on("data", (chunk: Buffer) => (received += chunk.toString())));
    const connection = await open((server.address() as AddressInfo).port);
    await vi.waitFor(() => expect(connection.alive).toBe(false));
    expect(await failure(connection.request({ path: "/x" }))).toMatchObject({ code: "CONNECTION_CHANGED" });
    expect(received).toBe("");
  });

  it("an answer the listener cuts short says where, by its length or its chunks", async () => {
    const cases: Array<[(socket: tls.TLSSocket) => void, string]> = [
      [(socket) => socket.end(), "before its answer"],
      [(socket) => socket.end("HTTP/1.1 200 OK\r\n"), "before its answer"],
      [(socket) => socket.end("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"), "in the middle of its answer"],
      [
        (socket) => socket.end("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab"),
        "in the middle of its answer",
      ],
    ];
    for (const [cut, where] of cases) {
      const listener = await rawListener((_head, _body, _i, socket) => (cut(socket), ""));
      const connection = await open(listener.port);
      const error = await failure(connection.request({ path: "/x", timeoutMs: 5000 }));
      expect([error.code, error.message]).toEqual([
        "NETWORK",
        `GET /x failed: the join listener closed the connection ${where}`,
      ]);
      expect(error.cause).toMatchObject({ name: "Http1Error", code: "HTTP1_CLOSED" });
      expect(connection.alive).toBe(false);
    }
  });

  it("a connection reset in the middle of an answer is the reset, whatever frames the body", async () => {
    for (const head of ["HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc", "HTTP/1.1 200 OK\r\n\r\nabc"]) {
      // TLS over a TCP socket of the test's own, so that it can send the reset (RST)
      const server = net.createServer((raw) => {
        const socket = new tls.TLSSocket(raw, {
          isServer: true,
          secureContext: tls.createSecureContext(serverOptions),
          requestCert: true,
          rejectUnauthorized: false,
        });
        socket.on("error", () => {});
        socket.once("data", () => {
          socket.write(head);
          setTimeout(() => raw.resetAndDestroy(), 50);
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      cleanups.push(() => new Promise((resolve) => server.close(resolve)));
      const connection = await open((server.address() as AddressInfo).port);
      const error = await failure(connection.request({ path: "/x", timeoutMs: 5000 }));
      expect(error.code, head).toBe("NETWORK");
      expect(error.message).toMatch(/^GET \/x failed: .*ECONNRESET/);
      expect(error.cause).toMatchObject({ code: "ECONNRESET" });
      expect(connection.alive).toBe(false);
    }
  });

  it("reads a chunked body that arrives over several reads", async () => {
    const listener = await rawListener((_head, _body, _i, socket) => {
      // each write scheduled by the one before: timers of different lengths can fire out of
      // order on a loaded machine
      setTimeout(() => {
        socket.write("cd\r\n2\r\nef\r\n");
        setTimeout(() => socket.write("0\r\n\r\n"), 50);
      }, 50);
      return "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nab";
    });
    const connection = await open(listener.port);
    const answer = await connection.request({ path: "/x", timeoutMs: 5000 });
    expect(Buffer.from(answer.body).toString()).toBe("abcdef");
    expect(connection.alive).toBe(true);
  });

  it("a signal aborted after its exchange leaves the connection as it was", async () => {
    const listener = await rawListener((_head, _body, i) => json(`{"n":${i}}`));
    const socket = tls.connect({ host: "127.0.0.1", port: listener.port, rejectUnauthorized: false });
    cleanups.push(() => socket.destroy());
    await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
    const http = new PinnedHttp(socket, `127.0.0.1:${listener.port}`);
    const call = (signal: AbortSignal) =>
      http.request({
        method: "GET",
        path: "/x",
        headers: {},
        body: undefined,
        signal,
        maxBodyBytes: 1000,
        operation: "GET /x",
      });
    const controller = new AbortController();
    expect((await call(controller.signal)).status).toBe(200);
    controller.abort();
    expect([http.reusable, socket.destroyed]).toEqual([true, false]);
    expect(Buffer.from((await call(new AbortController().signal)).body).toString()).toBe('{"n":1}');
  });
});
