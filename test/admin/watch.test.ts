import { HttpResponse } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAdminClient, diffJoins, watchJoins, type JoinChange } from "../../src/admin/index.js";
import { isAbortError, NetworkError, StratumApiError, type StratumError } from "../../src/errors/index.js";
import { validateResponses } from "../../src/schemas/index.js";
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
    // onRetry is told just before the backoff's wait begins.
    let backingOff = false;
    const pending = watchJoins(client, { signal: controller.signal, onRetry: () => (backingOff = true) }).next();
    while (!backingOff) await new Promise((r) => setTimeout(r, 5));
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

describe("watchJoins: long poll, and the fallback to polling", () => {
  /** Every list request: when it arrived, its `waitSeconds` and its `If-None-Match`. */
  function recordLists(): { at: number; waitSeconds: string | null; ifNoneMatch: string | null }[] {
    const seen: { at: number; waitSeconds: string | null; ifNoneMatch: string | null }[] = [];
    server.events.on("request:start", ({ request }) => {
      const url = new URL(request.url);
      if (url.pathname !== "/v1/admin/cluster/joins") return;
      seen.push({
        at: performance.now(),
        waitSeconds: url.searchParams.get("waitSeconds"),
        ifNoneMatch: request.headers.get("If-None-Match"),
      });
    });
    return seen;
  }

  it("polls every intervalMs a founder that sends no ETag (the fake cluster), and still sees changes", async () => {
    const { cluster, client } = setup();
    const seen = recordLists();
    const controller = new AbortController();
    const it = client.watchJoins({ signal: controller.signal, intervalMs: 100 })[Symbol.asyncIterator]();
    const first = cluster.addJoin();
    expect((await it.next()).value).toEqual({ type: "added", join: first });
    const second = cluster.addJoin();
    expect((await it.next()).value).toEqual({ type: "added", join: second });
    controller.abort();
    expect(seen.length).toBeGreaterThanOrEqual(2);
    // Never a long poll: the founder gave no ETag to send back.
    expect(seen.every((r) => r.waitSeconds === null && r.ifNoneMatch === null)).toBe(true);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.at - seen[i - 1]!.at).toBeGreaterThanOrEqual(95);
  });

  it("long-polls a founder that answers with an ETag: If-None-Match and waitSeconds, the change at once", async () => {
    let version = 1;
    let joins = [fixtures.nodeJoin({ id: "nj-a" })];
    let release: () => void = () => {};
    const changed = new Promise<void>((resolve) => (release = resolve));
    server.use(
      http.get("/v1/admin/cluster/joins", async ({ request, response }) => {
        if (request.headers.get("If-None-Match") === `"v${version}"`) {
          await Promise.race([changed, new Promise((r) => setTimeout(r, 5_000))]);
          if (request.headers.get("If-None-Match") === `"v${version}"`)
            return response.untyped(new HttpResponse(null, { status: 304, headers: { ETag: `"v${version}"` } }));
        }
        return response(200).json({ items: joins }, { headers: { ETag: `"v${version}"` } });
      }),
    );
    const seen = recordLists();
    const client = createAdminClient({ baseUrl: BASE, token: "t" });
    const controller = new AbortController();
    const it = client.watchJoins({ signal: controller.signal, intervalMs: 60_000 })[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: "added", join: { id: "nj-a" } });
    const next = it.next();
    await new Promise((r) => setTimeout(r, 50));
    joins = [fixtures.nodeJoin({ id: "nj-b" }), ...joins];
    version = 2;
    release();
    // Yielded long before the 60 s interval: the held request answered.
    expect((await next).value).toMatchObject({ type: "added", join: { id: "nj-b" } });
    controller.abort();
    expect(seen[0]).toMatchObject({ waitSeconds: null, ifNoneMatch: null });
    expect(seen[1]).toMatchObject({ waitSeconds: "25", ifNoneMatch: '"v1"' });
  });

  it("does not spin on a founder that sends an ETag but answers 304 at once", async () => {
    server.use(
      http.get("/v1/admin/cluster/joins", ({ request, response }) =>
        request.headers.get("If-None-Match") === '"same"'
          ? response.untyped(new HttpResponse(null, { status: 304, headers: { ETag: '"same"' } }))
          : response(200).json({ items: [] }, { headers: { ETag: '"same"' } }),
      ),
    );
    const seen = recordLists();
    // Validation checks the 200 and leaves the 304s (no body) alone.
    const client = createAdminClient({ baseUrl: BASE, token: "t", validate: validateResponses });
    const controller = new AbortController();
    const pending = client.watchJoins({ signal: controller.signal, intervalMs: 100 }).next();
    // Five requests, however long the machine takes for them: a spinning watch would make
    // them within a millisecond or two of each other.
    while (seen.length < 5) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    expect(isAbortError(await pending.catch((e: unknown) => e))).toBe(true);
    for (let i = 2; i < seen.length; i++) expect(seen[i]!.at - seen[i - 1]!.at).toBeGreaterThanOrEqual(95);
  });

  it("refuses a waitSeconds the protocol does not allow", async () => {
    const { client } = setup();
    for (const waitSeconds of [0, 31, 2.5])
      await expect(client.watchJoins({ waitSeconds }).next()).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
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
