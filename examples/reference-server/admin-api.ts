/**
 * The admin API (`/v1/admin/...`): bearer tokens with permissions, problem+json refusals,
 * CORS for a console on another local port. Each handler authorises, parses its body with zod
 * and hands the change to the cluster.
 * @module
 */

import { authorize } from "./auth.js";
import type { Cluster } from "./cluster.js";
import { HttpProblem, Router, parseBody, readJson, readOptionalJson, sendJson, type RequestContext } from "./http.js";
import { problemBody } from "./http-problem.js";
import { jsonEtag, matches, waitForChange, waitSecondsOf } from "./long-poll.js";
import {
  ApprovalSchema,
  ClusterUpgradeSchema,
  JoinCodeRequestSchema,
  JoinFailureSchema,
  RejectionSchema,
} from "./schemas.js";

/** What the admin API needs besides the cluster. */
export interface AdminDeps {
  cluster: Cluster;
  bodyBytes: number;
  /** The endpoint a mint names when the request names none. */
  defaultEndpoint: () => string;
  /** Opens the join listener if it must be open now (awaited before a mint is answered). */
  ensureListener: () => Promise<void>;
  /** Re-issues the TLS leaves after a CA rotation. */
  afterCaRotation: () => Promise<void>;
  /** Wakes the join runner. */
  kickRunner: () => void;
}

/** The admin API's routes. */
export function adminRouter(deps: AdminDeps): Router {
  const router = new Router();
  joinCodeRoutes(router, deps);
  joinRoutes(router, deps);
  clusterRoutes(router, deps);
  return router;
}

/** Mint, list and revoke join codes. */
function joinCodeRoutes(router: Router, deps: AdminDeps): void {
  const { cluster } = deps;
  const store = cluster.store;

  router.add("POST", "/v1/admin/cluster/join-codes", async (ctx) => {
    const who = authorize(store, ctx, "ha:MintJoinToken");
    const body = parseBody(JoinCodeRequestSchema, await readOptionalJson(ctx, deps.bodyBytes));
    const minted = await cluster.mintCode(who.name, body, deps.defaultEndpoint());
    await deps.ensureListener();
    sendJson(ctx, 201, minted);
  });

  router.add("GET", "/v1/admin/cluster/join-codes", (ctx) => {
    authorize(store, ctx, "ha:DescribeJoinCodes");
    sendJson(ctx, 200, { items: cluster.listCodes() });
  });

  router.add("DELETE", "/v1/admin/cluster/join-codes/:codeId", (ctx) => {
    const who = authorize(store, ctx, "ha:RevokeJoinToken");
    sendJson(ctx, 200, cluster.revokeCode(who.name, ctx.params.codeId!));
  });
}

/** List and read registrations, and the operator's decisions on them. */
function joinRoutes(router: Router, deps: AdminDeps): void {
  const { cluster } = deps;
  const store = cluster.store;

  // A long poll (`waitSeconds` with `If-None-Match`): held until the list differs from the one
  // the caller has, or the wait ends (304).
  router.add("GET", "/v1/admin/cluster/joins", async (ctx) => {
    authorize(store, ctx, "ha:DescribeNodeJoins");
    const waitSeconds = waitSecondsOf(ctx.url);
    const ifNoneMatch = ctx.req.headers["if-none-match"];
    // The capacity is part of the tag: a registration turned away wakes the long poll too.
    let list = cluster.joinList();
    let etag = jsonEtag(list);
    if (waitSeconds > 0 && matches(ifNoneMatch, etag)) {
      const held = etag;
      // A join turns silent (`stalled`) with time alone, no write: looked at every second.
      await waitForChange(store, ctx.res, waitSeconds * 1000, () => jsonEtag(cluster.joinList()) !== held, 1000);
      if (ctx.res.destroyed) return;
      list = cluster.joinList();
      etag = jsonEtag(list);
    }
    if (matches(ifNoneMatch, etag)) {
      ctx.res.writeHead(304, { ETag: etag, "Cache-Control": "no-store" });
      ctx.res.end();
      return;
    }
    sendJson(ctx, 200, list, { ETag: etag });
  });

  router.add("GET", "/v1/admin/cluster/joins/:joinId", (ctx) => {
    authorize(store, ctx, "ha:DescribeNodeJoins");
    sendJson(ctx, 200, cluster.getJoin(ctx.params.joinId!));
  });

  router.add("POST", "/v1/admin/cluster/joins/:joinId/approve", async (ctx) => {
    const who = authorize(store, ctx, "ha:ApproveNodeJoin");
    const body = parseBody(ApprovalSchema, await readOptionalJson(ctx, deps.bodyBytes));
    const join = cluster.approve(who.name, ctx.params.joinId!, body);
    deps.kickRunner();
    sendJson(ctx, 200, join);
  });

  // The same check as approve, with nothing stored: what the console shows before it approves.
  // A refused assignment is the preview's answer (200 with `refusal`), not a failed request: a
  // console previews after each edit, and a browser logs every 4xx as an error.
  router.add("POST", "/v1/admin/cluster/joins/:joinId/approval-preview", async (ctx) => {
    authorize(store, ctx, "ha:ApproveNodeJoin");
    const body = parseBody(ApprovalSchema, await readOptionalJson(ctx, deps.bodyBytes));
    try {
      sendJson(ctx, 200, { assignment: cluster.previewApproval(ctx.params.joinId!, body) });
    } catch (error) {
      if (!(error instanceof HttpProblem) || error.code !== "JOIN_APPROVAL_REFUSED") throw error;
      sendJson(ctx, 200, { refusal: problemBody(error, ctx.requestId) });
    }
  });

  router.add("POST", "/v1/admin/cluster/joins/:joinId/reject", async (ctx) => {
    const who = authorize(store, ctx, "ha:ApproveNodeJoin");
    const body = parseBody(RejectionSchema, await reasonBody(ctx, deps.bodyBytes, "A rejection"));
    const join = cluster.reject(who.name, ctx.params.joinId!, body.reason);
    deps.kickRunner();
    sendJson(ctx, 200, join);
  });

  // A running join that will never finish: failed now, which frees the queue for the next one.
  router.add("POST", "/v1/admin/cluster/joins/:joinId/fail", async (ctx) => {
    const who = authorize(store, ctx, "ha:ApproveNodeJoin");
    const body = parseBody(JoinFailureSchema, await reasonBody(ctx, deps.bodyBytes, "Failing a join"));
    const join = cluster.fail(who.name, ctx.params.joinId!, body.reason);
    deps.kickRunner();
    sendJson(ctx, 200, join);
  });

  // A waiting machine the cluster cannot take: its waiting slot freed now, its key free to come back.
  router.add("POST", "/v1/admin/cluster/joins/:joinId/expire", (ctx) => {
    const who = authorize(store, ctx, "ha:ApproveNodeJoin");
    sendJson(ctx, 200, cluster.expire(who.name, ctx.params.joinId!));
  });

  router.add("POST", "/v1/admin/cluster/joins/:joinId/retry", (ctx) => {
    const who = authorize(store, ctx, "ha:ApproveNodeJoin");
    const join = cluster.retry(who.name, ctx.params.joinId!);
    deps.kickRunner();
    sendJson(ctx, 200, join);
  });
}

/** The body of a call that needs a reason: 400 at `reason` when there is none. */
async function reasonBody(ctx: RequestContext, bodyBytes: number, what: string): Promise<unknown> {
  const raw = await readJson(ctx, bodyBytes);
  if (raw === undefined)
    throw new HttpProblem(400, "INVALID_INPUT", {
      detail: `${what} needs a reason.`,
      errors: [{ field: "reason", message: "is required" }],
    });
  return raw;
}

/** Members, networks, and the cluster events a test or the console can cause. */
function clusterRoutes(router: Router, deps: AdminDeps): void {
  const { cluster } = deps;
  const store = cluster.store;

  router.add("GET", "/v1/admin/cluster/members", (ctx) => {
    authorize(store, ctx, "ha:DescribeCluster");
    sendJson(ctx, 200, cluster.members());
  });

  router.add("GET", "/v1/admin/cluster/networks", (ctx) => {
    authorize(store, ctx, "ha:DescribeCluster");
    sendJson(ctx, 200, cluster.settings.networks);
  });

  router.add("POST", "/v1/admin/cluster/ca-rotations", async (ctx) => {
    const who = authorize(store, ctx, "ha:ManageCluster");
    const rotation = await cluster.rotateCa(who.name);
    await deps.afterCaRotation();
    sendJson(ctx, 200, rotation);
  });

  router.add("PUT", "/v1/admin/cluster/upgrade", async (ctx) => {
    const who = authorize(store, ctx, "ha:ManageCluster");
    const raw = await readJson(ctx, deps.bodyBytes);
    if (raw === undefined)
      throw new HttpProblem(400, "INVALID_INPUT", {
        detail: "A body is required.",
        errors: [{ field: "inProgress", message: "is required" }],
      });
    const state = cluster.setUpgrade(who.name, parseBody(ClusterUpgradeSchema, raw));
    deps.kickRunner();
    sendJson(ctx, 200, state);
  });
}
