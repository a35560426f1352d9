// The ./testing entry as a console team uses it (the README's example, kept runnable).
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createAdminClient } from "../../src/admin/index.js";
import { adminHandlers, createAdminHttp, createFakeCluster, problemResponse } from "../../src/testing/index.js";

const cluster = createFakeCluster();
const server = setupServer(...adminHandlers({ cluster, token: "test-token" }));
beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

const client = createAdminClient({ baseUrl: "https://stratum.test", token: "test-token" });

it("serves the fake cluster: a machine arrives, the operator approves it", async () => {
  const join = cluster.addJoin({ hostname: "node-2", pairingCode: "4F7-K2Q" });
  expect((await client.listNodeJoins()).items[0]).toMatchObject({ hostname: "node-2", state: "pending" });
  await client.approveNodeJoin(join.id);
  expect(cluster.joins[0]?.state).toBe("approved");
});

it("lets a test override one operation with a typed handler", async () => {
  const http = createAdminHttp();
  server.use(
    http.get("/v1/admin/cluster/joins", ({ response }) =>
      response.untyped(problemResponse(503, "UPGRADE_IN_PROGRESS", { retryAfter: 30 })),
    ),
  );
  await expect(client.listNodeJoins()).rejects.toMatchObject({ code: "UPGRADE_IN_PROGRESS", retryAfter: 30 });
});

it("problemResponse is an application/problem+json document", async () => {
  const response = problemResponse(409, "JOIN_STATE_CONFLICT", { detail: "no" });
  expect(response.status).toBe(409);
  expect(response.headers.get("Content-Type")).toBe("application/problem+json");
  expect(await response.json()).toMatchObject({
    status: 409,
    code: "JOIN_STATE_CONFLICT",
    detail: "no",
    requestId: "req-test0000",
  });
});

it("follows the founder's capacity: the list says it, a full cluster refuses at role, a waiting join expires", async () => {
  const fresh = createFakeCluster();
  server.use(...adminHandlers({ cluster: fresh, token: "test-token" }));
  const joins = Array.from({ length: 6 }, (_, i) => fresh.addJoin({ hostname: `vm-${i}` }));
  fresh.refusedRegistrations = 2;
  let list = await client.listNodeJoins();
  expect(list.capacity).toEqual({
    roles: ["hybrid"],
    controlPlane: { members: 1, approved: 0, max: 5, remaining: 4 },
    waiting: { count: 6, max: 16, refused: 2 },
  });
  for (const join of joins.slice(0, 4)) await client.approveNodeJoin(join.id);
  list = await client.listNodeJoins();
  expect(list.capacity?.controlPlane).toMatchObject({ approved: 4, remaining: 0 });
  await expect(client.approveNodeJoin(joins[4]!.id)).rejects.toMatchObject({
    code: "JOIN_APPROVAL_REFUSED",
    errors: [{ field: "role" }],
  });
  expect((await client.expireNodeJoin(joins[4]!.id)).state).toBe("expired");
  await expect(client.expireNodeJoin(joins[0]!.id)).rejects.toMatchObject({ code: "JOIN_STATE_CONFLICT" });
});
