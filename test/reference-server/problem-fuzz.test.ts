/**
 * Every refusal of either listener is a problem document, whatever arrives: generated requests
 * (valid and invalid methods, paths with raw bytes, spaces and escapes, HTTP versions, missing
 * Host, every Transfer-Encoding and Content-Length oddity, content types and encodings, Expect,
 * a header block over the limit, bodies that are and are not JSON) are sent on raw sockets to
 * the admin API (plain TCP) and the join listener (TLS, no client certificate), each with
 * `Connection: close` and framed so that the server has all of it. The first answer that is
 * not 1xx must come, and when it is a 4xx or 5xx it must be `application/problem+json`,
 * valid against the spec's `Problem`, with a `code` and the `requestId` of its `X-Request-Id`.
 *
 * Runs: 300 cases per listener with a fixed seed; more with `STRATUM_FUZZ_RUNS`, another seed
 * with `STRATUM_FUZZ_SEED`.
 */
import { connect as connectTcp } from "node:net";
import { connect as connectTls } from "node:tls";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { specAjv } from "../spec/spec.js";
import { mint } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

const RUNS = Number(process.env.STRATUM_FUZZ_RUNS ?? 300);
const SEED = Number(process.env.STRATUM_FUZZ_SEED ?? 20261130);
const validateProblem = specAjv().getSchema("openapi#/components/schemas/Problem")!;

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
  await mint(t.server);
});
afterAll(async () => t.dispose());

const ROUTES = [
  "/v1/admin/cluster/join-codes",
  "/v1/admin/cluster/joins",
  "/v1/admin/cluster/joins/nj-none0000/fail",
  "/v1/admin/cluster/upgrade",
  "/v1/join/pake",
  "/v1/join/registrations",
  "/v1/join/registrations/nj-none0000/release/os/blobs/x",
  "/",
  "*",
];

const token = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}$/);
const method = fc.oneof(
  fc.constantFrom("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT"),
  fc.constantFrom("G@T", "FOO", "get", "POST\u00e9", ""),
  token,
);
/** A request target: a route, maybe with raw bytes, spaces, escapes or a query spliced in. */
const target = fc
  .tuple(fc.constantFrom(...ROUTES), fc.uint8Array({ maxLength: 6 }), fc.boolean())
  .map(([route, bytes, splice]) =>
    splice
      ? Buffer.concat([Buffer.from(route), Buffer.from(bytes)])
      : Buffer.from(`${route}${bytes.length ? `?waitSeconds=${bytes[0]}` : ""}`),
  );
const version = fc.constantFrom("HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.x", "");
const header = fc.oneof(
  fc.constantFrom(
    "Transfer-Encoding: identity",
    "Transfer-Encoding: gzip, chunked",
    "Transfer-Encoding: chunked",
    "Content-Length: ten",
    "Content-Length: -1",
    "Content-Type: text/plain",
    "Content-Type: application/json; charset=utf-16",
    "Content-Type: application/json",
    "Content-Type: application/x-www-form-urlencoded",
    "Content-Encoding: gzip",
    "Expect: 100-continue",
    "Expect: tea",
    'If-None-Match: "x"',
    "Authorization: Bearer stratum_nope",
    "Origin: https://evil.example",
    `X-Pad: ${"p".repeat(20_000)}`,
  ),
  fc
    .tuple(token, fc.uint8Array({ maxLength: 8 }))
    .map(([name, value]) => `${name}: ${Buffer.from(value).toString("latin1")}`),
);
const body = fc.oneof(
  fc.constant(""),
  fc.constantFrom("{}", '{"reason":"x"}', "{nope", "[1,2]", '{"ttlSeconds":60}'),
  fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b).toString("latin1")),
);

/** One generated request, framed so that the server has all of it. */
const request = fc
  .record({ method, target, version, host: fc.boolean(), headers: fc.array(header, { maxLength: 4 }), body })
  .map((r) => {
    const chunked = r.headers.some((h) => /^transfer-encoding:.*chunked\s*$/i.test(h));
    const framing = r.headers.some((h) => /^(transfer-encoding|content-length):/i.test(h))
      ? []
      : [`Content-Length: ${Buffer.byteLength(r.body, "latin1")}`];
    const payload = chunked
      ? `${r.body.length ? `${Buffer.byteLength(r.body, "latin1").toString(16)}\r\n${r.body}\r\n` : ""}0\r\n\r\n`
      : r.body;
    const head = [
      `${r.method} ${r.target.toString("latin1")} ${r.version}`.trimEnd(),
      ...(r.host ? ["Host: stratum.test"] : []),
      ...r.headers,
      ...framing,
      "Connection: close",
    ];
    return Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"), Buffer.from(payload, "latin1")]);
  });

/** Sends one request and reads until the server closes: the first final answer's status, headers and body. */
function exchange(
  listener: "admin" | "join",
  bytes: Buffer,
): Promise<{ raw: string; status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket =
      listener === "admin"
        ? connectTcp(Number(new URL(t.server.adminUrl).port), "127.0.0.1")
        : connectTls({ host: "127.0.0.1", port: t.server.joinPort, rejectUnauthorized: false });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`no end of the answer within 15 s to ${JSON.stringify(bytes.toString("latin1").slice(0, 300))}`),
      );
    }, 15_000);
    socket.once(listener === "admin" ? "connect" : "secureConnect", () => socket.end(bytes));
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      let raw = Buffer.concat(chunks).toString("latin1");
      // Interim answers (100 Continue) come before the final one.
      while (/^HTTP\/1\.1 1\d\d /.test(raw)) raw = raw.slice(raw.indexOf("\r\n\r\n") + 4);
      const end = raw.indexOf("\r\n\r\n");
      const [statusLine = "", ...lines] = (end < 0 ? raw : raw.slice(0, end)).split("\r\n");
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      const length = Number(headers["content-length"] ?? NaN);
      const rest = end < 0 ? "" : raw.slice(end + 4);
      resolve({
        raw,
        status: Number(statusLine.split(" ")[1]),
        headers,
        body: Number.isFinite(length) ? rest.slice(0, length) : rest,
      });
    });
  });
}

describe("whatever arrives, a refusal is a problem document", () => {
  for (const listener of ["admin", "join"] as const) {
    it(`${listener}: ${RUNS} generated requests`, async () => {
      await fc.assert(
        fc.asyncProperty(request, async (bytes) => {
          const answer = await exchange(listener, bytes);
          const what = JSON.stringify(bytes.toString("latin1").slice(0, 200));
          expect(answer.raw, `no answer to ${what}`).not.toBe("");
          expect(answer.status, what).toBeGreaterThanOrEqual(200);
          if (answer.status < 400) return;
          expect(answer.headers["content-type"], what).toBe("application/problem+json");
          if (bytes.toString("latin1").startsWith("HEAD ")) return; // no body to a HEAD
          const problem = JSON.parse(answer.body);
          expect(validateProblem(problem), `${what}: ${JSON.stringify(validateProblem.errors)}`).toBe(true);
          expect(problem.requestId, what).toBe(answer.headers["x-request-id"]);
        }),
        { numRuns: RUNS, seed: SEED },
      );
      expect(t.logs.some((l) => / 500 /.test(l))).toBe(false);
    }, 300_000);
  }
});
