// The admin API: tokens and permissions, minting and listing codes, refusals of bad bodies,
// CORS, members, the cluster events, and what the log holds.
import { networkInterfaces } from "node:os";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMISSIONS, type Permission } from "../../examples/reference-server/auth.js";
import { CROCKFORD_ALPHABET } from "../../src/core/base32.js";
import { parseJoinCode } from "../../src/core/join-code.js";
import { admin, expectSpec, insertJoinRow, mint } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({ corsOrigins: ["https://console.example"] });
});
afterAll(async () => {
  await t.dispose();
});

const OPERATIONS: [string, string, Permission, string, unknown?][] = [
  ["POST", "/v1/admin/cluster/join-codes", "ha:MintJoinToken", "mintJoinCode", {}],
  ["GET", "/v1/admin/cluster/join-codes", "ha:DescribeJoinCodes", "listJoinCodes"],
  ["DELETE", "/v1/admin/cluster/join-codes/jc-none0000", "ha:RevokeJoinToken", "revokeJoinCode"],
  ["GET", "/v1/admin/cluster/joins", "ha:DescribeNodeJoins", "listNodeJoins"],
  ["GET", "/v1/admin/cluster/joins/nj-none0000", "ha:DescribeNodeJoins", "getNodeJoin"],
  ["POST", "/v1/admin/cluster/joins/nj-none0000/approve", "ha:ApproveNodeJoin", "approveNodeJoin", {}],
  ["POST", "/v1/admin/cluster/joins/nj-none0000/approval-preview", "ha:ApproveNodeJoin", "previewApproval", {}],
  ["POST", "/v1/admin/cluster/joins/nj-none0000/reject", "ha:ApproveNodeJoin", "rejectNodeJoin", { reason: "x" }],
  ["POST", "/v1/admin/cluster/joins/nj-none0000/retry", "ha:ApproveNodeJoin", "retryNodeJoin"],
  ["POST", "/v1/admin/cluster/joins/nj-none0000/fail", "ha:ApproveNodeJoin", "failNodeJoin", { reason: "x" }],
  ["GET", "/v1/admin/cluster/members", "ha:DescribeCluster", "listClusterMembers"],
  ["GET", "/v1/admin/cluster/networks", "ha:DescribeCluster", "getClusterNetworks"],
  ["POST", "/v1/admin/cluster/ca-rotations", "ha:ManageCluster", "rotateClusterCa"],
  ["PUT", "/v1/admin/cluster/upgrade", "ha:ManageCluster", "setClusterUpgrade", { inProgress: false }],
];

describe("tokens and permissions", () => {
  it("answers 401 with WWW-Authenticate without a valid token, on every operation", async () => {
    for (const [method, path, , operationId, body] of OPERATIONS) {
      const none = await admin(t.server, method, path, { token: null, body, operationId });
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(none.headers.get("www-authenticate")).toBe('Bearer realm="stratum"');
      expect(none.body.code).toBe("UNAUTHORIZED");
      const wrong = await admin(t.server, method, path, { token: "stratum_not-a-token", body, operationId });
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get("www-authenticate")).toContain('error="invalid_token"');
    }
  });

  it("answers 403 without the permission, and lets a narrower token do what it holds", async () => {
    for (const [method, path, permission, operationId, body] of OPERATIONS) {
      const others = PERMISSIONS.filter((p) => p !== permission);
      const without = t.server.createToken(others, "narrow");
      const refused = await admin(t.server, method, path, { token: without, body, operationId });
      expect(refused.status, `${method} ${path}`).toBe(403);
      expect(refused.body).toMatchObject({ code: "FORBIDDEN", details: { permission } });
      const only = t.server.createToken([permission], "only");
      const allowed = await admin(t.server, method, path, { token: only, body, operationId });
      expect([200, 201, 404], `${method} ${path}`).toContain(allowed.status);
    }
    // The actor of a change is the token's name.
    const minter = t.server.createToken(["ha:MintJoinToken"], "ci-script");
    const minted = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", {
      token: minter,
      body: {},
      operationId: "mintJoinCode",
    });
    expect(minted.body.joinCode.createdBy).toBe("ci-script");
  });
});

describe("join codes", () => {
  it("mints with the defaults: 4 hours, the default endpoint, the code shown once", async () => {
    const minted = await mint(t.server);
    const { joinCode } = minted;
    expect(Date.parse(joinCode.expiresAt) - Date.parse(joinCode.createdAt)).toBe(4 * 3600_000);
    expect(joinCode).toMatchObject({
      attempts: 0,
      registrations: 0,
      state: "live",
      caFingerprint: t.server.caFingerprint,
      createdBy: "bootstrap-admin",
      endpoint: t.server.joinEndpoint,
    });
    expect(joinCode.selector).toBe(parseJoinCode(minted.code).selector);
    expect(joinCode.id).toMatch(/^jc-[0-9a-z]{8}$/);
    expect(joinCode.id.slice(3)).not.toBe(parseJoinCode(minted.code).code.slice(0, 8).toLowerCase());
    const listed = await admin(t.server, "GET", "/v1/admin/cluster/join-codes", { operationId: "listJoinCodes" });
    expect(listed.body.items[0].id).toBe(joinCode.id);
    expect(JSON.stringify(listed.body)).not.toContain(parseJoinCode(minted.code).code.slice(2));
  });

  it("points a mint without an endpoint at the API VIP when the listener answers on it, else at the listener", async () => {
    // The listener on every address of this machine, and the cluster's API VIP one of them.
    const held = await startTestServer({ joinAddr: "[::]:0", cluster: { vips: { api: "::1" } } });
    try {
      const minted = await mint(held.server);
      expect(minted.joinCode.endpoint).toBe(`[::1]:${held.server.joinPort}`);
      expect(minted.url).toBe(`stratum-join://[::1]:${held.server.joinPort}/${minted.code}`);
    } finally {
      await held.dispose();
    }
    // The default cluster's VIP (192.0.2.240) is on no NIC of this loopback listener: a joiner
    // dialling it would reach nothing, so the mint names the listener's own address.
    expect((await mint(t.server)).joinCode.endpoint).toBe(`127.0.0.1:${t.server.joinPort}`);
  });

  it("names a given endpoint, the port implied", async () => {
    const minted = await mint(t.server, { endpoint: "192.0.2.240", ttlSeconds: 60 });
    expect(minted).toMatchObject({ endpoint: "192.0.2.240", url: `stratum-join://192.0.2.240/${minted.code}` });
    expect(minted.joinCode.endpoint).toBe("192.0.2.240:9444");
    const v6 = await mint(t.server, { endpoint: "[fd00::1]:9555" });
    expect(v6.endpoint).toBe("[fd00::1]:9555");
    expect(v6.url).toBe(`stratum-join://[fd00::1]:9555/${v6.code}`);
  });

  it("refuses a bad lifetime or endpoint at its field", async () => {
    for (const [body, field] of [
      [{ ttlSeconds: 604801 }, "ttlSeconds"],
      [{ ttlSeconds: 0 }, "ttlSeconds"],
      [{ ttlSeconds: 1.5 }, "ttlSeconds"],
      [{ endpoint: "host:99999" }, "endpoint"],
      [{ endpoint: "http://x/" }, "endpoint"],
    ] as const) {
      const answer = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", {
        body,
        operationId: "mintJoinCode",
      });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.errors.map((e: any) => e.field)).toEqual([field]);
    }
  });

  it("keeps selectors unique among live codes", async () => {
    // Occupy all selectors but three, then mint three: each must take a free one.
    const live = new Set(t.server.store.liveCodes(Date.now()).map((c) => c.selector));
    const all = [...CROCKFORD_ALPHABET].flatMap((a) => [...CROCKFORD_ALPHABET].map((b) => a + b));
    const free = all.filter((s) => !live.has(s)).slice(0, 3);
    const now = Date.now();
    t.server.store.tx(() => {
      for (const selector of all) {
        if (live.has(selector) || free.includes(selector)) continue;
        t.server.store.insertCode({
          id: `jc-fill${selector.toLowerCase()}`,
          selector,
          record: "x",
          caFingerprint: t.server.caFingerprint,
          endpoint: "x:1",
          attempts: 0,
          createdBy: "test",
          createdAt: now,
          expiresAt: now + 600_000,
          revokedBy: null,
          revokedAt: null,
        });
      }
    });
    const minted = [await mint(t.server), await mint(t.server), await mint(t.server)];
    expect(minted.map((m) => m.joinCode.selector).sort()).toEqual([...free].sort());
    const full = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", {
      body: {},
      operationId: "mintJoinCode",
    });
    expect(full.status).toBe(409);
    t.server.store.tx(() => t.server.store.db.prepare("DELETE FROM join_codes WHERE id LIKE 'jc-fill%'").run());
  });

  it("answers 404 for an unknown code", async () => {
    const answer = await admin(t.server, "DELETE", "/v1/admin/cluster/join-codes/jc-unknown0", {
      operationId: "revokeJoinCode",
    });
    expect(answer.status).toBe(404);
    expect(answer.body.code).toBe("NOT_FOUND");
  });
});

describe("joins", () => {
  it("lists joins and join codes newest first, the list without log tails, one join with its log tail", async () => {
    const older = insertJoinRow(t.server);
    const newer = insertJoinRow(t.server);
    t.server.store.tx(() => t.server.store.appendLog(newer, ["10:00 preparing disks"], 2000));
    const list = await admin(t.server, "GET", "/v1/admin/cluster/joins", { operationId: "listNodeJoins" });
    const ids = list.body.items.map((j: any) => j.id);
    expect(ids.indexOf(newer)).toBeLessThan(ids.indexOf(older));
    expect(list.body.items.every((j: any) => j.logTail === undefined)).toBe(true);
    const one = await admin(t.server, "GET", `/v1/admin/cluster/joins/${newer}`, { operationId: "getNodeJoin" });
    expect(one.body.logTail).toEqual(["10:00 preparing disks"]);
    const a = await mint(t.server);
    const b = await mint(t.server);
    const codes = await admin(t.server, "GET", "/v1/admin/cluster/join-codes", { operationId: "listJoinCodes" });
    const codeIds = codes.body.items.map((c: any) => c.id);
    expect(codeIds.indexOf(b.joinCode.id)).toBeLessThan(codeIds.indexOf(a.joinCode.id));
  });
});

describe("bodies the admin API refuses", () => {
  it("answers not JSON, too large and wrong shapes with 400 and field errors, never 500", async () => {
    const notJson = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", {
      raw: "{ttl",
      operationId: "mintJoinCode",
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({
      code: "INVALID_INPUT",
      errors: [{ field: "", message: "the body is not valid JSON" }],
    });
    const large = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", {
      raw: JSON.stringify({ endpoint: "x".repeat(2 * 1024 * 1024) }),
      operationId: "mintJoinCode",
    });
    expect(large.status).toBe(400);
    expect(large.body.errors[0].message).toContain("larger than");
    const array = await admin(t.server, "POST", "/v1/admin/cluster/joins/nj-x/approve", {
      raw: "[1,2]",
      operationId: "approveNodeJoin",
    });
    expect(array.status).toBe(400);
    const upgrade = await admin(t.server, "PUT", "/v1/admin/cluster/upgrade", {
      body: { inProgress: "yes" },
      operationId: "setClusterUpgrade",
    });
    expect(upgrade.body.errors).toEqual([{ field: "inProgress", message: expect.any(String) }]);
    const missing = await admin(t.server, "PUT", "/v1/admin/cluster/upgrade", { operationId: "setClusterUpgrade" });
    expect(missing.status).toBe(400);
    const reason = await admin(t.server, "POST", "/v1/admin/cluster/joins/nj-x/reject", {
      body: { reason: "" },
      operationId: "rejectNodeJoin",
    });
    expect(reason.body.errors[0].field).toBe("reason");
    expect(t.logs.some((l) => / 500 \d+ms$/.test(l))).toBe(false);
  });

  it("answers unknown paths 404 and wrong methods 405, as problems", async () => {
    const unknown = await admin(t.server, "GET", "/v1/admin/nothing");
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("content-type")).toBe("application/problem+json");
    // The join listener's calls are served there alone, never on the API.
    for (const path of ["/v1/join/pake", "/v1/join/registrations", "/v1/join/code-checks"])
      expect((await admin(t.server, "POST", path, { body: {} })).status, path).toBe(404);
    const method = await admin(t.server, "PATCH", "/v1/admin/cluster/joins");
    expect(method.status).toBe(405);
    expect(method.headers.get("allow")).toBe("GET");
  });
});

describe("CORS", () => {
  it("answers a console on another local port, and the origins configured", async () => {
    const preflight = await fetch(`${t.server.adminUrl}/v1/admin/cluster/joins`, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:5173",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    expect(preflight.headers.get("access-control-allow-headers")).toContain("Authorization");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("DELETE");
    const get = await admin(t.server, "GET", "/v1/admin/cluster/joins", {
      headers: { origin: "http://127.0.0.1:3000" },
    });
    expect(get.headers.get("access-control-allow-origin")).toBe("http://127.0.0.1:3000");
    expect(get.headers.get("access-control-expose-headers")).toContain("Retry-After");
    const configured = await admin(t.server, "GET", "/v1/admin/cluster/joins", {
      headers: { origin: "https://console.example" },
    });
    expect(configured.headers.get("access-control-allow-origin")).toBe("https://console.example");
    const foreign = await admin(t.server, "GET", "/v1/admin/cluster/joins", {
      headers: { origin: "https://evil.example" },
    });
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
    // A refusal carries CORS too, so the console can read the problem.
    const refused = await admin(t.server, "GET", "/v1/admin/cluster/joins", {
      token: null,
      headers: { origin: "http://localhost:5173" },
    });
    expect(refused.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
  });
});

describe("the cluster", () => {
  it("lists the founder as the first member, at generation 1", async () => {
    const members = await admin(t.server, "GET", "/v1/admin/cluster/members", { operationId: "listClusterMembers" });
    expect(members.body.membershipGeneration).toBeGreaterThanOrEqual(1);
    expect(members.body.items[0]).toMatchObject({
      name: "node-1",
      role: "hybrid",
      state: "active",
      mgmtIp: "192.0.2.11",
    });
  });

  it("marks an upgrade in progress and over, audited", async () => {
    const on = await admin(t.server, "PUT", "/v1/admin/cluster/upgrade", {
      body: { inProgress: true },
      operationId: "setClusterUpgrade",
    });
    expect(on.body).toEqual({ inProgress: true, retryAfterSeconds: 30 });
    const off = await admin(t.server, "PUT", "/v1/admin/cluster/upgrade", {
      body: { inProgress: false },
      operationId: "setClusterUpgrade",
    });
    expect(off.body.inProgress).toBe(false);
    expect(
      t.server.store.auditEntries().filter((e) => e.action === "cluster.upgrade.changed").length,
    ).toBeGreaterThanOrEqual(2);
  });
});

describe("logs", () => {
  it("writes one line per request with its id, and no token or code", async () => {
    const before = t.logs.length;
    const minted = await mint(t.server);
    const answer = await admin(t.server, "GET", "/v1/admin/cluster/joins?secret=1");
    const lines = t.logs.slice(before);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(answer.headers.get("x-request-id")!);
    expect(lines[1]).toMatch(/ admin 127\.0\.0\.1 GET \/v1\/admin\/cluster\/joins 200 \d+ms$/);
    const all = t.logs.join("\n");
    expect(all).not.toContain(t.server.adminToken);
    expect(all).not.toContain(minted.code);
    expect(all).not.toContain(parseJoinCode(minted.code).code);
  });
});

describe("the spec check", () => {
  it("can fail: a wrong shape or an undeclared status is caught", () => {
    expect(() => expectSpec("listJoinCodes", 200, "application/json", { items: [{ id: 1 }] })).toThrow();
    expect(() => expectSpec("listJoinCodes", 418, "application/json", {})).toThrow();
    expect(() =>
      expectSpec("mintJoinCode", 201, "application/json", { joinCode: {}, endpoint: "x", code: "bad", url: "u" }),
    ).toThrow();
  });
});

describe("the admin API off loopback", () => {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && !a.internal && a.family === "IPv4")?.address;
  it.skipIf(address === undefined)("speaks HTTPS with a cluster-CA certificate for its address", async () => {
    const s = await startTestServer({ adminAddr: `${address}:0` });
    try {
      expect(s.server.adminUrl).toMatch(/^https:\/\//);
      const agent = new Agent({ connect: { ca: s.server.caPem } });
      const answer = await undiciFetch(`${s.server.adminUrl}/v1/admin/cluster/members`, {
        headers: { authorization: `Bearer ${s.server.adminToken}` },
        dispatcher: agent,
      });
      expect(answer.status).toBe(200);
      await agent.close();
      // Plain HTTP is not served there.
      await expect(fetch(s.server.adminUrl.replace("https:", "http:") + "/v1/admin/cluster/members")).rejects.toThrow();
    } finally {
      await s.dispose();
    }
  });
});
