import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { inspect } from "node:util";
import { delay, HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createAdminClient, type AdminClient } from "../../src/admin/index.js";
import {
  isAbortError,
  NetworkError,
  ResponseValidationError,
  StratumApiError,
  StratumError,
  TimeoutError,
} from "../../src/errors/index.js";
import { validateResponses } from "../../src/schemas/index.js";
import {
  adminHandlers,
  createAdminHttp,
  createFakeCluster,
  fixtures,
  problemResponse,
  type FakeCluster,
} from "../../src/testing/index.js";

const BASE = "https://stratum.test";
const TOKEN = "tok-SECRET-4a1f9c";
const http = createAdminHttp(BASE);
const server = setupServer();
let cluster: FakeCluster;

beforeAll(() =>
  server.listen({
    // Loopback is where the network-failure test dials a real closed port.
    onUnhandledRequest: (request, print) => (new URL(request.url).hostname === "127.0.0.1" ? undefined : print.error()),
  }),
);
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

function serve(options: { token?: string } = {}): FakeCluster {
  cluster = createFakeCluster();
  server.use(...adminHandlers({ cluster, baseUrl: BASE, token: options.token ?? TOKEN }));
  return cluster;
}

function client(extra: Partial<Parameters<typeof createAdminClient>[0]> = {}): AdminClient {
  return createAdminClient({ baseUrl: BASE, token: TOKEN, ...extra } as Parameters<typeof createAdminClient>[0]);
}

/** The rejection of `promise`, which must reject. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/** Everything an error shows: message, JSON, inspect output (with its cause). */
function everything(error: unknown): string {
  return `${String(error)} ${JSON.stringify(error)} ${inspect(error, { depth: 10, showHidden: true })}`;
}

describe.each([
  ["without validation", undefined],
  ["with validateResponses", validateResponses],
])("every admin method, %s", (_label, validate) => {
  it("mints, lists and revokes join codes", async () => {
    serve();
    const c = client({ validate });
    const minted = await c.mintJoinCode({ ttlSeconds: 600, endpoint: "192.0.2.240" });
    expect(minted.code).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{3}$/);
    expect(minted.url).toBe(`stratum-join://192.0.2.240/${minted.code}`);
    expect(minted.joinCode.state).toBe("live");
    const list = await c.listJoinCodes();
    expect(list.items.map((x) => x.id)).toEqual([minted.joinCode.id]);
    const revoked = await c.revokeJoinCode(minted.joinCode.id);
    expect(revoked).toMatchObject({ id: minted.joinCode.id, state: "revoked", revokedBy: "bootstrap-admin" });
    expect((await c.listJoinCodes()).items[0]?.state).toBe("revoked");
  });

  it("lists, gets, approves, rejects and retries joins", async () => {
    serve();
    const c = client({ validate });
    const a = cluster.addJoin({ hostname: "node-2" });
    const b = cluster.addJoin({ hostname: "node-3" });
    const f = cluster.addJoin({
      state: "failed",
      failedStep: "storage",
      failedStepTitle: "Storage",
      failedError: "boom",
    });
    expect((await c.listNodeJoins()).items.map((j) => j.id)).toEqual([f.id, b.id, a.id]);
    expect(await c.getNodeJoin(a.id)).toMatchObject({ id: a.id, hostname: "node-2", logTail: [] });
    const approved = await c.approveNodeJoin(a.id, { assignment: { rack: "r2" } });
    expect(approved).toMatchObject({ state: "approved", assignment: { role: "hybrid", rack: "r2", name: "node-2" } });
    expect((await c.approveNodeJoin(f.id)).state).toBe("approved");
    const rejected = await c.rejectNodeJoin(b.id, { reason: "not ours" });
    expect(rejected).toMatchObject({ state: "rejected", reason: "not ours" });
    cluster.updateJoin(f.id, { state: "failed" });
    expect((await c.retryNodeJoin(f.id)).state).toBe("approved");
  });

  it("fails a running join with a reason; the fake cluster refuses any other state", async () => {
    serve();
    const c = client({ validate });
    const running = cluster.addJoin({ state: "installing" });
    const failed = await c.failNodeJoin(running.id, { reason: "powered off" });
    expect(failed).toMatchObject({ state: "failed", failedStep: "operator", failedError: "powered off" });
    expect(cluster.joins[0]?.state).toBe("failed");
    await expect(c.failNodeJoin(running.id, { reason: "again" })).rejects.toMatchObject({
      status: 409,
      code: "JOIN_STATE_CONFLICT",
    });
    await expect(c.failNodeJoin(cluster.addJoin({ state: "delivering" }).id, { reason: "" })).rejects.toMatchObject({
      status: 400,
      errors: [{ field: "reason", message: "is required" }],
    });
    await expect(c.failNodeJoin("nj-none", { reason: "x" })).rejects.toMatchObject({ status: 404 });
  });

  it("reads members and networks, rotates the CA, sets the upgrade", async () => {
    serve();
    const c = client({ validate });
    expect((await c.listClusterMembers()).membershipGeneration).toBe(1);
    expect((await c.getClusterNetworks()).providerTopology).toBe("bridged");
    await c.mintJoinCode();
    const rotation = await c.rotateClusterCa();
    expect(rotation.revokedCodes).toBe(1);
    expect(rotation.caFingerprint).toBe(cluster.caFingerprint);
    expect(await c.setClusterUpgrade({ inProgress: true, retryAfterSeconds: 5 })).toEqual({
      inProgress: true,
      retryAfterSeconds: 5,
    });
    expect(await c.setClusterUpgrade({ inProgress: false })).toEqual({ inProgress: false });
  });
});

describe("authentication", () => {
  it("sends the token, and getToken (async) is asked at every call", async () => {
    serve({ token: "fresh-2" });
    let n = 0;
    const getToken = vi.fn(async () => `fresh-${++n}`);
    const c = createAdminClient({ baseUrl: BASE, getToken });
    // The first token is refused, the refreshed one is taken.
    await expect(c.listNodeJoins()).rejects.toMatchObject({ status: 401 });
    await expect(c.listNodeJoins()).resolves.toMatchObject({ items: [] });
    expect(getToken).toHaveBeenCalledTimes(2);
  });

  it("401 with WWW-Authenticate is a StratumApiError that never shows the token", async () => {
    serve({ token: "another" });
    const error = await rejection(client().listNodeJoins());
    expect(error).toBeInstanceOf(StratumApiError);
    expect(StratumError.is(error)).toBe(true);
    expect(error).toMatchObject({
      status: 401,
      code: "UNAUTHORIZED",
      requestId: "req-test0000",
      title: "Unauthorized",
    });
    expect(everything(error)).not.toContain(TOKEN);
  });

  it("the client object shows no token when logged", () => {
    const c = client();
    expect(inspect(c, { depth: 10, showHidden: true })).not.toContain(TOKEN);
    expect(JSON.stringify(c)).not.toContain(TOKEN);
  });

  it("a getToken that fails rejects with its own error, before any request", async () => {
    const failure = new Error("refresh failed");
    const onRequest = vi.fn();
    server.events.on("request:start", onRequest);
    const c = createAdminClient({ baseUrl: BASE, getToken: () => Promise.reject(failure) });
    await expect(c.listNodeJoins()).rejects.toBe(failure);
    server.events.removeListener("request:start", onRequest);
    expect(onRequest).not.toHaveBeenCalled();
  });

  it("needs a token or getToken", () => {
    expect(() => createAdminClient({ baseUrl: BASE } as never)).toThrow(StratumError);
  });

  it("the raw openapi-fetch client is authenticated and keeps its own contract", async () => {
    serve();
    cluster.addJoin();
    const { data, error, response } = await client().raw.GET("/v1/admin/cluster/joins");
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(data?.items).toHaveLength(1);
    const refused = await client().raw.GET("/v1/admin/cluster/joins/{joinId}", {
      params: { path: { joinId: "nj-none" } },
    });
    expect(refused.error).toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("refusals", () => {
  it("403 carries the code and details", async () => {
    server.use(
      http.post("/v1/admin/cluster/join-codes", ({ response }) =>
        response(403).json({
          type: "https://docs.stratum.example/problems/forbidden",
          title: "Forbidden",
          status: 403,
          detail: "The token lacks the permission ha:MintJoinToken.",
          requestId: "req-5t2m8q1z",
          code: "FORBIDDEN",
          details: { permission: "ha:MintJoinToken" },
        }),
      ),
    );
    const error = await rejection(client().mintJoinCode());
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error).toMatchObject({
      status: 403,
      code: "FORBIDDEN",
      requestId: "req-5t2m8q1z",
      detail: "The token lacks the permission ha:MintJoinToken.",
      details: { permission: "ha:MintJoinToken" },
      retryAfter: undefined,
    });
    expect((error as Error).message).toBe("FORBIDDEN: The token lacks the permission ha:MintJoinToken.");
  });

  it("409 carries the field errors", async () => {
    server.use(
      http.post("/v1/admin/cluster/joins/{joinId}/approve", ({ response }) =>
        response(409).json({
          type: "https://docs.stratum.example/problems/join-approval-refused",
          title: "Approval refused",
          status: 409,
          requestId: "req-1",
          code: "JOIN_APPROVAL_REFUSED",
          errors: [
            { field: "disks[1].confirm", message: "nvme2n1 holds data" },
            { field: "links[0].interface", message: "no such NIC" },
          ],
        }),
      ),
    );
    const error = (await rejection(client().approveNodeJoin("nj-1", { assignment: {} }))) as StratumApiError;
    expect(error.code).toBe("JOIN_APPROVAL_REFUSED");
    expect(error.errors).toEqual([
      { field: "disks[1].confirm", message: "nvme2n1 holds data" },
      { field: "links[0].interface", message: "no such NIC" },
    ]);
  });

  it("the fake cluster's own refusals: 404, 409 state conflict, 400 with a field error", async () => {
    serve();
    const c = client();
    await expect(c.getNodeJoin("nj-none")).rejects.toMatchObject({ status: 404, code: "NOT_FOUND" });
    const joined = cluster.addJoin({ state: "joined" });
    await expect(c.approveNodeJoin(joined.id)).rejects.toMatchObject({ status: 409, code: "JOIN_STATE_CONFLICT" });
    await expect(c.retryNodeJoin(joined.id)).rejects.toMatchObject({ status: 409, code: "JOIN_STATE_CONFLICT" });
    await expect(c.rejectNodeJoin(joined.id, { reason: "" })).rejects.toMatchObject({
      status: 400,
      code: "INVALID_INPUT",
      errors: [{ field: "reason", message: "is required" }],
    });
  });

  it("429 carries Retry-After in seconds", async () => {
    server.use(
      http.get("/v1/admin/cluster/joins", ({ response }) =>
        response.untyped(problemResponse(429, "RATE_LIMITED", { retryAfter: 7 })),
      ),
    );
    await expect(client().listNodeJoins()).rejects.toMatchObject({ status: 429, code: "RATE_LIMITED", retryAfter: 7 });
  });

  it("503 carries Retry-After given as an HTTP date", async () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    server.use(
      http.post("/v1/admin/cluster/join-codes", ({ response }) =>
        response(503).json(
          {
            type: "https://docs.stratum.example/problems/upgrade-in-progress",
            title: "Upgrade in progress",
            status: 503,
            requestId: "r",
            code: "UPGRADE_IN_PROGRESS",
          },
          { headers: { "Retry-After": at } },
        ),
      ),
    );
    const error = (await rejection(client().mintJoinCode())) as StratumApiError;
    expect(error).toMatchObject({ status: 503, code: "UPGRADE_IN_PROGRESS" });
    expect(error.retryAfter).toBeGreaterThanOrEqual(28);
    expect(error.retryAfter).toBeLessThanOrEqual(30);
  });

  it("a 502 from a proxy (HTML) is HTTP_502, naming the call and copying nothing of the page", async () => {
    server.use(
      http.untyped.get(
        `${BASE}/v1/admin/cluster/members`,
        () =>
          new HttpResponse("<html>bad gateway secret-page</html>", {
            status: 502,
            headers: { "Content-Type": "text/html" },
          }),
      ),
    );
    const error = (await rejection(client().listClusterMembers())) as StratumApiError;
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error.code).toBe("HTTP_502");
    expect(error.message).toContain("GET /v1/admin/cluster/members");
    expect(everything(error)).not.toContain("secret-page");
  });

  it("sensitive fields in a problem's details are redacted", async () => {
    server.use(
      http.get("/v1/admin/cluster/networks", ({ response }) =>
        response.untyped(
          problemResponse(403, "FORBIDDEN", { details: { permission: "ha:DescribeCluster", nodeKey: "PRIVATE-KEY" } }),
        ),
      ),
    );
    const error = (await rejection(client().getClusterNetworks())) as StratumApiError;
    expect(error.details).toEqual({ permission: "ha:DescribeCluster", nodeKey: "[redacted]" });
    expect(everything(error)).not.toContain("PRIVATE-KEY");
  });
});

describe("malformed answers", () => {
  it("a 200 that is not JSON is a ResponseValidationError, with or without validation", async () => {
    server.use(
      http.untyped.get(
        `${BASE}/v1/admin/cluster/joins`,
        () => new HttpResponse("{not json", { status: 200, headers: { "Content-Type": "application/json" } }),
      ),
    );
    for (const c of [client(), client({ validate: validateResponses })]) {
      const error = (await rejection(c.listNodeJoins())) as ResponseValidationError;
      expect(error).toBeInstanceOf(ResponseValidationError);
      expect(error).toMatchObject({ code: "RESPONSE_INVALID", operation: "GET /v1/admin/cluster/joins" });
    }
  });

  it("a body of the wrong shape: ResponseValidationError with the issues when validating, passed through when not", async () => {
    const bad = { items: [{ ...fixtures.nodeJoin(), state: "teleporting", steps: undefined }] };
    server.use(http.untyped.get(`${BASE}/v1/admin/cluster/joins`, () => HttpResponse.json(bad)));
    const error = (await rejection(client({ validate: validateResponses }).listNodeJoins())) as ResponseValidationError;
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect(error).not.toBeInstanceOf(StratumApiError);
    expect(error.issues).toEqual([
      { path: "items.0.state", message: expect.stringContaining('"pending"') },
      { path: "items.0.steps", message: "expected array" },
    ]);
    expect(error.message).not.toContain("teleporting");
    expect(await client().listNodeJoins()).toEqual(bad);
  });

  it("validation keeps the answer's known fields, drops unknown ones and fills the spec's defaults", async () => {
    const join = fixtures.nodeJoin({
      state: "approved",
      assignment: { links: [{ name: "storage", interface: "enp1s0" } as never] },
    });
    server.use(
      http.untyped.get(`${BASE}/v1/admin/cluster/joins/:joinId`, () =>
        HttpResponse.json({ ...join, fromTheFuture: 1 }),
      ),
    );
    const got = await client({ validate: validateResponses }).getNodeJoin(join.id);
    expect(got).toEqual({
      ...join,
      assignment: { links: [{ name: "storage", interface: "enp1s0", kind: "ethernet" }] },
    });
  });
});

describe("transport failures", () => {
  it("no answer (a real refused connection) is a NetworkError with the cause", async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, "127.0.0.1", () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    const c = createAdminClient({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN });
    const error = (await rejection(c.listNodeJoins())) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.code).toBe("NETWORK");
    expect(error.cause).toBeInstanceOf(TypeError);
    expect(everything(error)).not.toContain(TOKEN);
  });

  it("a network error mid-call is a NetworkError", async () => {
    server.use(http.untyped.get(`${BASE}/v1/admin/cluster/joins`, () => HttpResponse.error()));
    await expect(client().listNodeJoins()).rejects.toBeInstanceOf(NetworkError);
  });

  it("the caller's abort is re-thrown as it is", async () => {
    server.use(
      http.untyped.get(`${BASE}/v1/admin/cluster/joins`, async () => {
        await delay("infinite");
        return HttpResponse.json({ items: [] });
      }),
    );
    const controller = new AbortController();
    const pending = client({ timeoutMs: 60_000 }).listNodeJoins({ signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    const error = await rejection(pending);
    expect(isAbortError(error)).toBe(true);
    expect(error).toBe(controller.signal.reason);
    expect(StratumError.is(error)).toBe(false);

    const reason = new Error("user left the page");
    const second = new AbortController();
    const again = client().listNodeJoins({ signal: second.signal });
    setTimeout(() => second.abort(reason), 20);
    await expect(again).rejects.toBe(reason);
  });

  it("an abort while a refusal's body is still arriving is the abort, not an API error", async () => {
    // A real server on loopback: only a real body stream is cut by the abort.
    const slow = createHttpServer((_req, res) => {
      res.writeHead(503, { "Content-Type": "application/problem+json" });
      res.write('{"code":"UPGRADE_IN_');
    });
    await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = slow.address() as { port: number };
      const c = createAdminClient({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN });
      const reason = new Error("gone");
      const controller = new AbortController();
      const pending = c.listNodeJoins({ signal: controller.signal });
      setTimeout(() => controller.abort(reason), 100);
      await expect(pending).rejects.toBe(reason);
      // The same with the deadline: a TimeoutError, not an API error.
      await expect(c.listNodeJoins({ timeoutMs: 100 })).rejects.toBeInstanceOf(TimeoutError);
    } finally {
      slow.closeAllConnections();
      await new Promise((resolve) => slow.close(resolve));
    }
  });

  it("an already aborted signal rejects at once, without asking for a token", async () => {
    const getToken = vi.fn(() => "t");
    const c = createAdminClient({ baseUrl: BASE, getToken });
    await expect(c.listNodeJoins({ signal: AbortSignal.abort() })).rejects.toMatchObject({ name: "AbortError" });
    expect(getToken).not.toHaveBeenCalled();
  });

  it("timeoutMs gives a TimeoutError", async () => {
    server.use(
      http.untyped.get(`${BASE}/v1/admin/cluster/members`, async () => {
        await delay("infinite");
        return HttpResponse.json({});
      }),
    );
    const error = (await rejection(client().listClusterMembers({ timeoutMs: 50 }))) as TimeoutError;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.code).toBe("TIMEOUT");
    expect(error.message).toContain("GET /v1/admin/cluster/members");
    // The client-wide default applies too.
    await expect(client({ timeoutMs: 50 }).listClusterMembers()).rejects.toBeInstanceOf(TimeoutError);
  });
});
