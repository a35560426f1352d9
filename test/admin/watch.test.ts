import { HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAdminClient, diffJoins, watchJoins, type JoinChange } from "../../src/admin/index.js";
import { isAbortError, NetworkError, StratumApiError, type StratumError } from "../../src/errors/index.js";
import {
  adminHandlers,
  createAdminHttp,
  createFakeCluster,
  fixtures,
  problemResponse,
} from "../../src/testing/index.js";

const BASE = "https://stratum.test";
const http = createAdminHttp(BASE);
const server = setupServer();
beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
afterEach(() => {
  server.resetHandlers();
  server.events.removeAllListeners();
});
afterAll(() => server.close());

function setup() {
  const cluster = createFakeCluster();
  server.use(...adminHandlers({ cluster, baseUrl: BASE, token: "t" }));
  const client = createAdminClient({ baseUrl: BASE, token: "t" });
  return { cluster, client };
}

/** Counts the list calls that reach the server. */
function countPolls(): { readonly count: number } {
  const counter = { count: 0 };
  server.events.on("request:start", ({ request }) => {
    if (new URL(request.url).pathname === "/v1/admin/cluster/joins") counter.count += 1;
  });
  return counter;
}

describe("watchJoins", () => {
  it("yields the joins there, then a machine arriving, a state moving, a join leaving", async () => {
    const { cluster, client } = setup();
    const first = cluster.addJoin({ hostname: "node-2" });
    const controller = new AbortController();
    const it = client.watchJoins({ signal: controller.signal, intervalMs: 10 })[Symbol.asyncIterator]();

    expect((await it.next()).value).toEqual({ type: "added", join: first });

    const arrived = cluster.addJoin({ hostname: "node-3" });
    expect((await it.next()).value).toEqual({ type: "added", join: arrived });

    const before = cluster.joins.find((j) => j.id === first.id)!;
    const moved = cluster.updateJoin(first.id, { state: "approved" });
    const change = (await it.next()).value as Extract<JoinChange, { type: "changed" }>;
    expect(change).toEqual({ type: "changed", join: moved, previous: before });
    expect(change.previous.state).toBe("pending");

    cluster.removeJoin(arrived.id);
    expect((await it.next()).value).toEqual({ type: "removed", id: arrived.id });

    controller.abort();
    const end = await it.next().catch((error: unknown) => error);
    expect(isAbortError(end)).toBe(true);
  });

  it("honours Retry-After on 503, backs off on network errors, and tells onRetry", async () => {
    const { cluster, client } = setup();
    const join = cluster.addJoin();
    let calls = 0;
    server.use(
      http.get("/v1/admin/cluster/joins", ({ response }) => {
        calls += 1;
        if (calls === 1) return response.untyped(problemResponse(503, "UPGRADE_IN_PROGRESS", { retryAfter: 1 }));
        if (calls === 2) return response.untyped(HttpResponse.error());
        return undefined; // falls through to the fake cluster
      }),
    );
    const retries: [StratumError, number][] = [];
    const started = Date.now();
    const controller = new AbortController();
    const it = watchJoins(client, {
      signal: controller.signal,
      backoff: { baseMs: 20, maxMs: 5_000 },
      onRetry: (error, delayMs) => retries.push([error, delayMs]),
    });
    expect((await it.next()).value).toEqual({ type: "added", join });
    const elapsed = Date.now() - started;
    controller.abort();

    expect(retries).toHaveLength(2);
    expect(retries[0]![0]).toBeInstanceOf(StratumApiError);
    expect(retries[0]![1]).toBe(1_000);
    expect(retries[1]![0]).toBeInstanceOf(NetworkError);
    expect(retries[1]![1]).toBeLessThanOrEqual(40); // full jitter under base * 2^1
    expect(elapsed).toBeGreaterThanOrEqual(990);
  });

  it("ends by throwing on a refusal polling cannot fix (401, 403)", async () => {
    const cluster = createFakeCluster();
    server.use(...adminHandlers({ cluster, baseUrl: BASE, token: "right" }));
    const client = createAdminClient({ baseUrl: BASE, token: "wrong" });
    const polls = countPolls();
    const error = await watchJoins(client, { intervalMs: 10 })
      .next()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error).toMatchObject({ status: 401 });
    expect(polls.count).toBe(1);
  });

  it("stops polling once aborted, even while waiting out a backoff", async () => {
    const { client } = setup();
    server.use(
      http.get("/v1/admin/cluster/joins", ({ response }) =>
        response.untyped(problemResponse(429, "RATE_LIMITED", { retryAfter: 60 })),
      ),
    );
    const polls = countPolls();
    const reason = new Error("console closed");
    const controller = new AbortController();
    const pending = watchJoins(client, { signal: controller.signal }).next();
    await new Promise((r) => setTimeout(r, 50));
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    const seen = polls.count;
    expect(seen).toBe(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(polls.count).toBe(seen);
  });

  it("breaking out of the loop stops it", async () => {
    const { cluster, client } = setup();
    cluster.addJoin();
    cluster.addJoin();
    const polls = countPolls();
    const seen: JoinChange[] = [];
    for await (const change of client.watchJoins({ intervalMs: 5 })) {
      seen.push(change);
      if (seen.length === 2) break;
    }
    const count = polls.count;
    await new Promise((r) => setTimeout(r, 40));
    expect(polls.count).toBe(count);
  });
});

describe("diffJoins", () => {
  it("ignores key order, sees nested changes, lists removals first", () => {
    const a = fixtures.nodeJoin({ id: "nj-a" });
    const b = fixtures.nodeJoin({ id: "nj-b" });
    const reordered = Object.fromEntries(Object.entries(a).reverse()) as typeof a;
    expect(diffJoins(new Map([["nj-a", a]]), [reordered])).toEqual([]);
    const stepped = { ...a, steps: [{ name: "storage", title: "Storage", status: "running" as const }] };
    expect(
      diffJoins(
        new Map([
          ["nj-a", a],
          ["nj-b", b],
        ]),
        [stepped],
      ),
    ).toEqual([
      { type: "removed", id: "nj-b" },
      { type: "changed", join: stepped, previous: a },
    ]);
  });
});
