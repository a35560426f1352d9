/**
 * The `./testing` entry: typed msw handlers for the admin API, so that a console team can
 * test its UI against a fake cluster without a server. Handlers are typed from the spec with
 * openapi-msw, so a fake answer that drifts from `openapi.yaml` fails to compile.
 *
 * Needs `msw` (v2) and `openapi-msw` installed next to the SDK.
 * @module @stratum/join/testing
 */

import type { HttpHandler, HttpResponse } from "msw";
import { createOpenApiHttp, type OpenApiHttpHandlers } from "openapi-msw";
import type { components, operations, paths } from "../../generated/api.js";
import { generateJoinCode } from "../core/join-code.js";
import { joinAllows } from "../core/join-states.js";
import { formatJoinUrl } from "../core/join-url.js";
import { fixtures, problemResponse, type JoinCode, type NodeJoin, type ProblemCode, type Schemas } from "./fixtures.js";

export { fixtures, problemResponse, type ProblemInit } from "./fixtures.js";

// The shapes the handlers and fixtures speak, under the names the root entry gives them.
export type { Schemas as ApiSchemas, NodeJoin, JoinCode as JoinCodeInfo, ProblemCode, components, operations, paths };

/**
 * An openapi-msw `http` typed by the whole API, for handlers of your own (an error, a delay,
 * a body of your choosing). `baseUrl` defaults to `*`: any origin.
 */
export function createAdminHttp(baseUrl = "*"): OpenApiHttpHandlers<paths> {
  return createOpenApiHttp<paths>({ baseUrl });
}

/**
 * The state behind {@link adminHandlers}: plain arrays and objects a test may read and change
 * directly, plus helpers for what a real cluster does by itself (a machine arriving, a join
 * moving on).
 */
export interface FakeCluster {
  /** Join codes, newest first. */
  joinCodes: JoinCode[];
  /** Registrations, newest first. */
  joins: NodeJoin[];
  /** Members and the membership generation. */
  members: Schemas["MemberList"];
  /** What `GET /v1/admin/cluster/networks` answers. */
  networks: Schemas["ClusterNetworks"];
  /** Whether an upgrade is in progress. */
  upgrade: Schemas["ClusterUpgrade"];
  /** The cluster CA's fingerprint; a rotation changes it. */
  caFingerprint: string;
  /** Registrations turned away because the waiting slots were full (the list's `capacity.waiting.refused`). */
  refusedRegistrations: number;
  /** The most waiting joins before new registrations are refused (`capacity.waiting.max`). Default 16. */
  maxWaiting: number;
  /** How many more machines the cluster can take, counted from `members` and `joins` as the founder does. */
  capacity(): Schemas["JoinCapacity"];
  /** A machine registers: a `pending` join (or as overridden) is put first in the list. */
  addJoin(overrides?: Partial<NodeJoin>): NodeJoin;
  /** Changes a join in place (its state, steps, …) and bumps its `updatedAt`. */
  updateJoin(id: string, patch: Partial<NodeJoin>): NodeJoin;
  /** Drops a join from the list. */
  removeJoin(id: string): void;
}

/** The most control-plane nodes a cluster takes (spec: Assignment.role). */
const MAX_CONTROL_PLANE = 5;

/** A {@link FakeCluster} with one member, no code and the given joins. */
export function createFakeCluster(seed: { joins?: NodeJoin[]; joinCodes?: JoinCode[] } = {}): FakeCluster {
  const cluster: FakeCluster = {
    joinCodes: [...(seed.joinCodes ?? [])],
    joins: [...(seed.joins ?? [])],
    members: { membershipGeneration: 1, items: [fixtures.member()] },
    networks: fixtures.clusterNetworks(),
    upgrade: { inProgress: false },
    caFingerprint: "7D:9F:05:39:12:F6:D4:91",
    refusedRegistrations: 0,
    maxWaiting: 16,
    capacity() {
      const members = cluster.members.items.filter(
        (m) => m.state !== "leaving" && (m.role === "hybrid" || m.role === "control-plane"),
      ).length;
      const approved = cluster.joins.filter((j) => j.state === "approved").length;
      return {
        roles: ["hybrid"],
        controlPlane: {
          members,
          approved,
          max: MAX_CONTROL_PLANE,
          remaining: Math.max(0, MAX_CONTROL_PLANE - members - approved),
        },
        waiting: {
          count: cluster.joins.filter((j) => j.state === "pending" || j.state === "needs-upgrade").length,
          max: cluster.maxWaiting,
          refused: cluster.refusedRegistrations,
        },
      };
    },
    addJoin(overrides) {
      const join = fixtures.nodeJoin(overrides);
      cluster.joins.unshift(join);
      return join;
    },
    updateJoin(id, patch) {
      const index = cluster.joins.findIndex((j) => j.id === id);
      const current = cluster.joins[index];
      if (!current) throw new RangeError(`no join ${id} in the fake cluster`);
      const updated = { ...current, ...patch, updatedAt: patch.updatedAt ?? new Date().toISOString() };
      cluster.joins[index] = updated;
      return updated;
    },
    removeJoin(id) {
      cluster.joins = cluster.joins.filter((j) => j.id !== id);
    },
  };
  return cluster;
}

/** Options of {@link adminHandlers}. */
export interface AdminHandlersOptions {
  /** The state to serve; a fresh {@link createFakeCluster} by default. */
  cluster?: FakeCluster | undefined;
  /** Matches requests to this origin only; any origin (`*`) by default. */
  baseUrl?: string | undefined;
  /**
   * When set, a request without `Authorization: Bearer <token>` gets 401 `UNAUTHORIZED` with
   * `WWW-Authenticate`, so a console's sign-in path can be tested.
   */
  token?: string | undefined;
}

/**
 * msw handlers for every admin operation, serving a {@link FakeCluster} with the API's rules:
 * minting answers the code once, revoking a live code revokes it, approving (or previewing an
 * approval), rejecting, failing, retrying and expiring a join only in the states
 * `JOIN_ACTION_STATES` allows (the founder's own rule; else 409 `JOIN_STATE_CONFLICT`), rejecting
 * and failing need a reason (else 400 `INVALID_INPUT` with a field error), approving refused at
 * `role` once the cluster is full (its `capacity()`, which the join list answers), unknown ids
 * 404, a CA rotation revokes every live code. The join list has no long poll (no `ETag`):
 * `watchJoins` polls it.
 */
export function adminHandlers(options: AdminHandlersOptions = {}): HttpHandler[] {
  const cluster = options.cluster ?? createFakeCluster();
  const http = createAdminHttp(options.baseUrl);
  const expected = options.token === undefined ? undefined : `Bearer ${options.token}`;

  // Checked first by its own handler, which falls through (returns nothing) when the token is right.
  const auth = http.untyped.all(`${options.baseUrl ?? "*"}/v1/admin/*`, ({ request }) => {
    if (expected === undefined || request.headers.get("Authorization") === expected) return undefined;
    return problemResponse(401, "UNAUTHORIZED", {
      title: "Unauthorized",
      detail: "A valid bearer token is required.",
      headers: { "WWW-Authenticate": 'Bearer realm="stratum"' },
    });
  });

  const notFound = (what: string) =>
    problemResponse(404, "NOT_FOUND", { title: "Not found", detail: `No such ${what}.` });
  const conflict = (join: NodeJoin, action: string) =>
    problemResponse(409, "JOIN_STATE_CONFLICT", {
      title: "Join state conflict",
      detail: `A ${join.state} join cannot be ${action}.`,
    });
  const findJoin = (id: string) => cluster.joins.find((j) => j.id === id);
  // Reject and fail take a reason, required and not empty.
  const reasonOf = async (request: Request): Promise<string | undefined> => {
    const body = (await request.json().catch(() => undefined)) as { reason?: unknown } | undefined;
    return typeof body?.reason === "string" && body.reason !== "" ? body.reason : undefined;
  };
  const reasonRequired = () =>
    problemResponse(400, "INVALID_INPUT", {
      title: "Invalid input",
      errors: [{ field: "reason", message: "is required" }],
    });
  const stamp = () => new Date().toISOString();
  // What approving a join would apply, or why it is refused: one path for approve and its preview.
  const decide = async (
    joinId: string,
    request: Request,
  ): Promise<
    | { ok: true; join: NodeJoin; assignment: Schemas["Assignment"] }
    | { ok: false; refusal: HttpResponse<Schemas["Problem"]> }
  > => {
    const join = findJoin(joinId);
    if (!join) return { ok: false, refusal: notFound("join") };
    if (!joinAllows(join.state, "approve")) return { ok: false, refusal: conflict(join, "approved") };
    if (cluster.capacity().controlPlane.remaining === 0)
      return {
        ok: false,
        refusal: problemResponse(409, "JOIN_APPROVAL_REFUSED", {
          title: "Approval refused",
          errors: [{ field: "role", message: "the cluster is full: it takes at most 5 control-plane nodes" }],
        }),
      };
    const body: Schemas["Approval"] = (await request.json().catch(() => undefined)) ?? {};
    const { role = "hybrid", ...rest } = body.assignment ?? {};
    // As the founder: an approval may ask for any node role, and every one but hybrid is refused at `role`.
    if (role !== "hybrid")
      return {
        ok: false,
        refusal: problemResponse(409, "JOIN_APPROVAL_REFUSED", {
          title: "Approval refused",
          errors: [{ field: "role", message: `${role} nodes are not supported yet; every joiner is hybrid` }],
        }),
      };
    return { ok: true, join, assignment: { name: join.hostname, ...rest, role } };
  };

  return [
    auth,
    http.post("/v1/admin/cluster/join-codes", async ({ request, response }) => {
      const body: Schemas["JoinCodeRequest"] = (await request.json().catch(() => undefined)) ?? {};
      const endpoint = body.endpoint ?? "192.0.2.240";
      const code = generateJoinCode();
      const ttl = body.ttlSeconds ?? 14_400;
      const record = fixtures.joinCode({
        selector: code.selector,
        endpoint: endpoint.includes(":") ? endpoint : `${endpoint}:9444`,
        caFingerprint: cluster.caFingerprint,
        createdAt: stamp(),
        expiresAt: new Date(Date.now() + ttl * 1000).toISOString(),
      });
      cluster.joinCodes.unshift(record);
      return response(201).json({
        joinCode: record,
        endpoint,
        code: code.formatted,
        url: formatJoinUrl({ endpoint, code }),
      });
    }),
    http.get("/v1/admin/cluster/join-codes", ({ response }) => response(200).json({ items: cluster.joinCodes })),
    http.delete("/v1/admin/cluster/join-codes/{codeId}", ({ params, response }) => {
      const index = cluster.joinCodes.findIndex((c) => c.id === params.codeId);
      const current = cluster.joinCodes[index];
      if (!current) return response.untyped(notFound("join code"));
      if (current.state !== "live") return response(200).json(current);
      const revoked: JoinCode = { ...current, state: "revoked", revokedBy: "bootstrap-admin", revokedAt: stamp() };
      cluster.joinCodes[index] = revoked;
      return response(200).json(revoked);
    }),
    http.get("/v1/admin/cluster/joins", ({ response }) =>
      // The list view carries no log tail; only the single join does.
      response(200).json({
        items: cluster.joins.map(({ logTail: _omitted, ...join }) => join),
        capacity: cluster.capacity(),
      }),
    ),
    http.get("/v1/admin/cluster/joins/{joinId}", ({ params, response }) => {
      const join = findJoin(params.joinId);
      return join ? response(200).json({ logTail: [], ...join }) : response.untyped(notFound("join"));
    }),
    http.post("/v1/admin/cluster/joins/{joinId}/approve", async ({ params, request, response }) => {
      const decision = await decide(params.joinId, request);
      if (!decision.ok) return response.untyped(decision.refusal);
      return response(200).json(
        cluster.updateJoin(decision.join.id, {
          state: "approved",
          assignment: decision.assignment,
          approvedBy: "bootstrap-admin",
          approvedAt: stamp(),
        }),
      );
    }),
    http.post("/v1/admin/cluster/joins/{joinId}/approval-preview", async ({ params, request, response }) => {
      const decision = await decide(params.joinId, request);
      if (!decision.ok) {
        // A refused assignment is the preview's answer, with 200, as the founder gives it.
        if (decision.refusal.status === 409) {
          const problem = (await decision.refusal.clone().json()) as Schemas["Problem"];
          if (problem.code === "JOIN_APPROVAL_REFUSED") return response(200).json({ refusal: problem });
        }
        return response.untyped(decision.refusal);
      }
      return response(200).json({ assignment: decision.assignment });
    }),
    http.post("/v1/admin/cluster/joins/{joinId}/reject", async ({ params, request, response }) => {
      const join = findJoin(params.joinId);
      if (!join) return response.untyped(notFound("join"));
      const reason = await reasonOf(request);
      if (reason === undefined) return response.untyped(reasonRequired());
      if (!joinAllows(join.state, "reject")) return response.untyped(conflict(join, "rejected"));
      return response(200).json(
        cluster.updateJoin(join.id, {
          state: "rejected",
          reason,
          rejectedBy: "bootstrap-admin",
          rejectedAt: stamp(),
        }),
      );
    }),
    http.post("/v1/admin/cluster/joins/{joinId}/expire", ({ params, response }) => {
      const join = findJoin(params.joinId);
      if (!join) return response.untyped(notFound("join"));
      if (!joinAllows(join.state, "expire")) return response.untyped(conflict(join, "expired"));
      return response(200).json(cluster.updateJoin(join.id, { state: "expired" }));
    }),
    http.post("/v1/admin/cluster/joins/{joinId}/retry", ({ params, response }) => {
      const join = findJoin(params.joinId);
      if (!join) return response.untyped(notFound("join"));
      if (!joinAllows(join.state, "retry")) return response.untyped(conflict(join, "retried"));
      return response(200).json(
        cluster.updateJoin(join.id, {
          state: "approved",
          failedStep: undefined,
          failedStepTitle: undefined,
          failedError: undefined,
        }),
      );
    }),
    http.post("/v1/admin/cluster/joins/{joinId}/fail", async ({ params, request, response }) => {
      const join = findJoin(params.joinId);
      if (!join) return response.untyped(notFound("join"));
      const reason = await reasonOf(request);
      if (reason === undefined) return response.untyped(reasonRequired());
      if (!joinAllows(join.state, "fail")) return response.untyped(conflict(join, "failed"));
      return response(200).json(
        cluster.updateJoin(join.id, {
          state: "failed",
          failedStep: "operator",
          failedStepTitle: "Failed by bootstrap-admin",
          failedError: reason,
        }),
      );
    }),
    http.get("/v1/admin/cluster/members", ({ response }) => response(200).json(cluster.members)),
    http.get("/v1/admin/cluster/networks", ({ response }) => response(200).json(cluster.networks)),
    http.post("/v1/admin/cluster/ca-rotations", ({ response }) => {
      let revokedCodes = 0;
      cluster.joinCodes = cluster.joinCodes.map((c) => {
        if (c.state !== "live") return c;
        revokedCodes += 1;
        return { ...c, state: "revoked", revokedBy: "system:ca-rotation", revokedAt: stamp() };
      });
      const bytes = globalThis.crypto.getRandomValues(new Uint8Array(8));
      cluster.caFingerprint = [...bytes].map((b) => b.toString(16).padStart(2, "0").toUpperCase()).join(":");
      return response(200).json({ caFingerprint: cluster.caFingerprint, revokedCodes });
    }),
    http.put("/v1/admin/cluster/upgrade", async ({ request, response }) => {
      const body = await request.json().catch(() => undefined);
      if (!body || typeof body.inProgress !== "boolean") {
        return response(400).json({
          type: "https://docs.stratum.example/problems/invalid-input",
          title: "Invalid input",
          status: 400,
          requestId: "req-test0000",
          code: "INVALID_INPUT",
          errors: [{ field: "inProgress", message: "is required" }],
        });
      }
      cluster.upgrade = body.inProgress
        ? { inProgress: true, retryAfterSeconds: body.retryAfterSeconds ?? 30 }
        : { inProgress: false };
      return response(200).json(cluster.upgrade);
    }),
  ];
}
