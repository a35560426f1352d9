// Every refusal of both listeners is a problem document, the HTTP parser's own included: raw
// bytes in the path, an invalid method, Transfer-Encoding other than chunked, a 60 KB header, a
// Content-Length that is not a number, an HTTP version the server does not speak, an
// unmet Expect, CONNECT, a request without Host. Sent over raw sockets (plain TCP to the admin
// API, TLS to the join listener), since no HTTP client sends them. And request bodies that are
// not plain JSON are refused 415 UNSUPPORTED_MEDIA_TYPE before anything happens.
import { connect as connectTcp } from "node:net";
import { connect as connectTls } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { specAjv } from "../spec/spec.js";
import { spec } from "../spec/spec.js";
import { TestJoiner, admin, expectSpec, insertJoinRow, mint } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

// C0 and C1 controls and DEL: what a terminal or a log reader acts on.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const validateProblem = specAjv().getSchema("openapi#/components/schemas/Problem")!;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await mint(t.server); // the join listener opens
});
afterAll(async () => t.dispose());

/** What came back on a raw socket: the status, the headers (lower case), the body, and whether the server closed. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `bytes` on a fresh connection to a listener and reads until the server closes it. */
function sendRaw(listener: "admin" | "join", bytes: Buffer | string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket =
      listener === "admin"
        ? connectTcp(Number(new URL(t.server.adminUrl).port), "127.0.0.1")
        : connectTls({ host: "127.0.0.1", port: t.server.joinPort, rejectUnauthorized: false, minVersion: "TLSv1.3" });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the ${listener} listener did not close the connection`));
    }, 10_000);
    socket.once(listener === "admin" ? "connect" : "secureConnect", () => socket.write(bytes));
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", () => {}); // a reset after the answer is fine: the answer is what counts
    socket.on("close", () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString("utf8");
      const [head = "", body = ""] = text.split("\r\n\r\n", 2);
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body });
    });
  });
}

const HOST = "Host: stratum.test\r\n";

/** The requests no client library sends, and the status each gets. */
const MALFORMED: { name: string; bytes: Buffer | string; status: number }[] = [
  {
    name: "raw non-ASCII bytes in the path",
    bytes: Buffer.concat([
      Buffer.from("GET /v1/"),
      Buffer.from([0xff, 0xfe, 0x80]),
      Buffer.from(` HTTP/1.1\r\n${HOST}\r\n`),
    ]),
    status: 400,
  },
  { name: "an invalid method", bytes: `G@T /v1/ HTTP/1.1\r\n${HOST}\r\n`, status: 400 },
  {
    name: "Transfer-Encoding: identity",
    bytes: `POST /v1/join/pake HTTP/1.1\r\n${HOST}Transfer-Encoding: identity\r\nContent-Type: application/json\r\n\r\n{}`,
    status: 400,
  },
  { name: "a 60 KB header", bytes: `GET /v1/ HTTP/1.1\r\n${HOST}X-Pad: ${"a".repeat(60_000)}\r\n\r\n`, status: 431 },
  {
    name: "a Content-Length that is not a number",
    bytes: `POST /v1/ HTTP/1.1\r\n${HOST}Content-Length: ten\r\n\r\n`,
    status: 400,
  },
  { name: "an HTTP version the server does not speak", bytes: `GET /v1/ HTTP/3.0\r\n${HOST}\r\n`, status: 400 },
  { name: "an Expect other than 100-continue", bytes: `GET /v1/ HTTP/1.1\r\n${HOST}Expect: tea\r\n\r\n`, status: 417 },
  { name: "CONNECT", bytes: `CONNECT stratum.test:443 HTTP/1.1\r\n${HOST}\r\n`, status: 405 },
  { name: "an HTTP/1.1 request without Host", bytes: "GET /v1/admin/cluster/joins HTTP/1.1\r\n\r\n", status: 400 },
];

describe("the HTTP parser's refusals are problem documents", () => {
  for (const listener of ["admin", "join"] as const) {
    for (const c of MALFORMED) {
      it(`${listener}: ${c.name} gets ${c.status} as problem+json with a code and a requestId`, async () => {
        const answer = await sendRaw(listener, c.bytes);
        expect(answer.status).toBe(c.status);
        expect(answer.headers["content-type"]).toBe("application/problem+json");
        const problem = JSON.parse(answer.body);
        expect(validateProblem(problem), JSON.stringify(validateProblem.errors)).toBe(true);
        expect(problem).toMatchObject({
          status: c.status,
          code: expect.any(String),
          requestId: expect.stringMatching(/^req-/),
        });
        expect(answer.headers["x-request-id"]).toBe(problem.requestId);
        // Logged like a request, by its id, without the bytes that were sent.
        expect(t.logs.some((l) => l.includes(problem.requestId) && l.includes(` ${c.status}`))).toBe(true);
        expect(t.logs.join("\n")).not.toContain("aaaaaaaaaa");
      });
    }
  }

  // 408, 417 and 431 can answer any operation, before it runs: openapi.yaml lists them on
  // each; a method a path does not serve is 405 with the spec's methods in Allow.
  const concrete = (path: string): string =>
    path
      .replace("{joinId}", "nj-none0000")
      .replace("{codeId}", "jc-none0000")
      .replace("{path}", "payload/manifest.json");
  const OPERATIONS = Object.entries(spec.paths as Record<string, Record<string, { operationId?: string }>>).flatMap(
    ([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => typeof op === "object" && op !== null && "operationId" in op)
        .map(([method, op]) => ({ path, method: method.toUpperCase(), operationId: op.operationId! })),
  );
  for (const op of OPERATIONS) {
    it(`${op.operationId}: an unmet Expect and an oversized header get answers the spec lists`, async () => {
      const listener = op.path.startsWith("/v1/join/") ? "join" : "admin";
      for (const extra of ["Expect: tea\r\n", `X-Pad: ${"a".repeat(20_000)}\r\n`]) {
        const answer = await sendRaw(listener, `${op.method} ${concrete(op.path)} HTTP/1.1\r\n${HOST}${extra}\r\n`);
        // A HEAD answer may carry no body; the status must still be one the spec lists.
        expectSpec(
          op.operationId,
          answer.status,
          answer.headers["content-type"],
          answer.body
            ? JSON.parse(answer.body)
            : {
                type: "about:blank",
                title: "-",
                status: answer.status,
                requestId: "req-head",
                code: "INVALID_INPUT",
              },
        );
      }
    });
  }
  it("answers a method a path does not serve 405, with the spec's methods in Allow", async () => {
    for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, unknown>>)) {
      const methods = Object.keys(item)
        .filter((m) => ["get", "put", "post", "delete", "head"].includes(m))
        .map((m) => m.toUpperCase());
      const listener = path.startsWith("/v1/join/") ? "join" : "admin";
      const answer = await sendRaw(listener, `PATCH ${concrete(path)} HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
      if (listener === "join") {
        // Without a client certificate the listener refuses before routing.
        expect([path, answer.status]).toEqual([path, 401]);
        continue;
      }
      expect([path, answer.status, JSON.parse(answer.body).code]).toEqual([path, 405, "METHOD_NOT_ALLOWED"]);
      const allow = answer.headers.allow!.split(",").map((m) => m.trim());
      for (const m of methods) expect(allow, path).toContain(m);
    }
  });

  it("leaves both listeners serving", async () => {
    expect((await admin(t.server, "GET", "/v1/admin/cluster/members")).status).toBe(200);
    const joiner = await TestJoiner.create(t.server);
    expect((await joiner.pake((await mint(t.server)).code)).response.status).toBe(200);
    await joiner.close();
  });
});

describe("refusals say what is wrong, and quote nothing a terminal or a log would act on", () => {
  it("a method a path does not serve is 405 METHOD_NOT_ALLOWED with Allow, on both listeners", async () => {
    const method = await admin(t.server, "PATCH", "/v1/admin/cluster/joins");
    expect(method.status).toBe(405);
    expect(method.body).toMatchObject({ code: "METHOD_NOT_ALLOWED", status: 405 });
    expect(validateProblem(method.body)).toBe(true);
    expect(method.headers.get("allow")).toBe("GET");
    const joiner = await TestJoiner.create(t.server);
    const answer = await (await joiner.connect()).request({ method: "GET", path: "/v1/join/pake" });
    expect(answer.status).toBe(405);
    expect(answer.json).toMatchObject({ code: "METHOD_NOT_ALLOWED" });
    expect(answer.headers.allow).toBe("POST");
    await joiner.close();
    for (const listener of ["admin", "join"] as const) {
      const connect = await sendRaw(listener, `CONNECT stratum.test:443 HTTP/1.1\r\n${HOST}\r\n`);
      expect(JSON.parse(connect.body)).toMatchObject({ code: "METHOD_NOT_ALLOWED", status: 405 });
    }
  });

  it("a 404 for an id never echoes the CR, LF or escape a decoded path segment carries", async () => {
    const injected = encodeURIComponent("nj-1\r\nX-Injected: 1\u001b[8m\u009b2J");
    for (const [method, path] of [
      ["GET", `/v1/admin/cluster/joins/${injected}`],
      ["POST", `/v1/admin/cluster/joins/${injected}/retry`],
      ["DELETE", `/v1/admin/cluster/join-codes/${injected}`],
    ] as const) {
      const answer = await admin(t.server, method, path);
      expect(answer.status, path).toBe(404);
      const detail = (answer.body as { detail: string }).detail;
      expect(detail).not.toMatch(CONTROL);
      expect(detail).not.toContain("X-Injected");
    }
    // The log names the path as it came, percent-encoded: one line each, nothing a terminal acts on.
    for (const line of t.logs) expect(line).not.toMatch(CONTROL);
  });
});

describe("request bodies that are not plain JSON: 415 UNSUPPORTED_MEDIA_TYPE", () => {
  const refused: { name: string; headers: Record<string, string>; body: string }[] = [
    { name: "text/plain", headers: { "content-type": "text/plain" }, body: "{}" },
    { name: "a form", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "ttlSeconds=60" },
    { name: "XML", headers: { "content-type": "application/xml" }, body: "<code/>" },
    { name: "UTF-16 JSON", headers: { "content-type": "application/json; charset=utf-16" }, body: "{}" },
    { name: "no Content-Type at all", headers: {}, body: "{}" },
    {
      name: "JSON declared Content-Encoding: gzip",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: "{}",
    },
  ];

  for (const c of refused) {
    it(`admin: ${c.name} mints nothing`, async () => {
      const before = t.server.store.listCodes().length;
      const answer = await fetch(`${t.server.adminUrl}/v1/admin/cluster/join-codes`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.server.adminToken}`, ...c.headers },
        body: c.body,
      });
      expect(answer.status).toBe(415);
      expect(answer.headers.get("content-type")).toBe("application/problem+json");
      const problem = await answer.json();
      expect(problem).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE", status: 415 });
      expect(validateProblem(problem)).toBe(true);
      expect(t.server.store.listCodes().length).toBe(before);
    });
  }

  it("admin: an operator decision with a body of another type changes nothing", async () => {
    const id = insertJoinRow(t.server);
    const rejected = await fetch(`${t.server.adminUrl}/v1/admin/cluster/joins/${id}/reject`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.server.adminToken}`, "content-type": "text/plain" },
      body: JSON.stringify({ reason: "x" }),
    });
    expect(rejected.status).toBe(415);
    expect(t.server.store.getJoin(id)!.state).toBe("pending");
  });

  it("takes application/json with charset=utf-8 in any case, and a body-less call without a type", async () => {
    for (const type of ["application/json", "application/json; charset=utf-8", 'Application/JSON;Charset="UTF-8"']) {
      const answer = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", {
        raw: "{}",
        headers: { "content-type": type },
        operationId: "mintJoinCode",
      });
      expect(answer.status, type).toBe(201);
    }
    const id = insertJoinRow(t.server, { state: "failed" });
    const retried = await fetch(`${t.server.adminUrl}/v1/admin/cluster/joins/${id}/retry`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.server.adminToken}` },
    });
    expect(retried.status).toBe(200);
  });

  it("join listener: a KE1 as text/plain or gzip is refused before the PAKE, the connection still usable", async () => {
    const { code } = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const connection = await joiner.connect();
    const body = JSON.stringify({ selector: code.slice(0, 2), ke1: "AAAA" });
    for (const headers of <Record<string, string>[]>[
      { "content-type": "text/plain" },
      { "content-type": "application/json", "content-encoding": "gzip" },
    ]) {
      const answer = await connection.request({ method: "POST", path: "/v1/join/pake", body, headers });
      expect(answer.status).toBe(415);
      expect(answer.json).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE" });
    }
    expect(connection.alive).toBe(true);
    expect((await joiner.pake(code)).response.status).toBe(200);
    await joiner.close();
  });
});
