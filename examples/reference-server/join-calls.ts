/**
 * The join listener's calls besides the PAKE's first step (docs/protocol.md §13 and §14): the
 * two calls a proof authorises (`code-checks`, `registrations`, KE3 in their body) and the
 * calls pinned to the machine's key afterwards (its registration's view as a long poll, its
 * progress reports, the served release).
 * @module
 */

import { createHash } from "node:crypto";
import { join as joinPath } from "node:path";
import { derivePairingCode, formatPairingCode } from "@stratum/join/server";
import { peerAddress, type AddressLimiter } from "./address-limiter.js";
import type { Cluster } from "./cluster.js";
import type { Limits } from "./config.js";
import { HttpProblem, invalidInput, parseBody, sendJson, type RequestContext, type Router } from "./http.js";
import type { BodyBudget } from "./http-body.js";
import type { PakeSteps } from "./join-pake.js";
import { ServedFiles, resolveReleasePath, sendReleaseFile } from "./release-serving.js";
import { CodeCheckRequestSchema, ProgressReportSchema, RegistrationRequestSchema } from "./schemas.js";

/**
 * How often being polled is written down as being heard from: a long-polling joiner asks
 * every 30 s at most, and a join is `stalled` only after minutes of silence, so one write per
 * 10 s keeps the stall watch right without a write per poll.
 */
const LAST_SEEN_EVERY_MS = 10_000;

/** What the calls need of the listener. */
export interface JoinCallsOptions {
  cluster: Cluster;
  limits: Limits;
  limiter: AddressLimiter;
  pake: PakeSteps;
  releaseDir: string | undefined;
  clusterRelease: string;
  /** Wakes the join runner (after a progress report). */
  kickRunner: () => void;
  /** The client key's fingerprint; 401 for a client that sent no certificate. */
  clientKey: (ctx: RequestContext) => string;
  /** Counts a call against the per-source limit (429 past it); returns what takes the count back. */
  limitCalls: (ctx: RequestContext) => () => void;
  /** Where a call comes from as the limits count it: an address, or an IPv6 prefix. */
  source: (ctx: RequestContext) => string;
  /** A JSON body of at most `maxBytes`, or 400 when there is none. */
  requiredBody: (ctx: RequestContext, maxBytes: number) => Promise<unknown>;
  /** The bytes of request bodies the listener holds at once, all requests together. */
  bodies: BodyBudget;
  /** Resolves when `changed()` turns true after a store change, after `ms`, or when the answer is abandoned. */
  waitForChange: (ctx: RequestContext, ms: number, changed: () => boolean) => Promise<void>;
}

/** The strong ETag of a registration view. */
function viewEtag(view: unknown): string {
  return `"${createHash("sha256").update(JSON.stringify(view)).digest("base64url").slice(0, 27)}"`;
}

/** Adds `POST /v1/join/code-checks` and `POST /v1/join/registrations`, the calls that carry KE3. */
export function addProofRoutes(router: Router, o: JoinCallsOptions): void {
  const { cluster } = o;

  router.add("POST", "/v1/join/code-checks", async (ctx) => {
    const key = o.clientKey(ctx);
    o.limitCalls(ctx);
    const body = parseBody(CodeCheckRequestSchema, await o.requiredBody(ctx, o.limits.codeCheckBodyBytes));
    const proof = await o.pake.prove(ctx, key, body.pake);
    sendJson(ctx, 200, cluster.codeCheck(proof.codeId, body.release, body.selfUpgrade === true));
  });

  router.add("POST", "/v1/join/registrations", async (ctx) => {
    const key = o.clientKey(ctx);
    o.limitCalls(ctx);
    const body = parseBody(RegistrationRequestSchema, await o.requiredBody(ctx, o.limits.registrationBodyBytes));
    const proof = await o.pake.prove(ctx, key, body.pake);
    const pairingCode = formatPairingCode(await derivePairingCode(proof.keys.pairingKey, proof.keyFingerprint));
    const address = peerAddress(ctx.req.socket);
    const { status, registration } = cluster.register(body, {
      codeId: proof.codeId,
      keyFingerprint: proof.keyFingerprint,
      sourceAddr: address,
      pairingCode,
      allowNew: () =>
        o.limiter.hit(
          o.source(ctx),
          "registration",
          o.limits.perAddressRegistrations,
          o.limits.perAddressWindowSeconds * 1000,
        ),
    });
    sendJson(ctx, status, registration);
  });
}

/** Adds the calls pinned to the machine's key: its registration, its progress, the served release. */
export function addPinnedRoutes(router: Router, o: JoinCallsOptions): void {
  const { cluster } = o;
  const served = new ServedFiles();

  router.add("GET", "/v1/join/registrations/:joinId", async (ctx) => {
    const key = o.clientKey(ctx);
    const joinId = ctx.params.joinId!;
    let join = cluster.ownedJoin(joinId, key);
    const raw = ctx.url.searchParams.get("waitSeconds");
    let waitSeconds = 0;
    if (raw !== null) {
      if (!/^\d{1,2}$/.test(raw) || Number(raw) > 30)
        throw invalidInput([{ field: "waitSeconds", message: "must be an integer from 0 to 30" }]);
      waitSeconds = Number(raw);
    }
    // Being polled is being heard from: a waiting joiner is not silent.
    const now = Date.now();
    if (join.lastSeenAt === null || now - join.lastSeenAt > LAST_SEEN_EVERY_MS)
      cluster.store.tx(() => cluster.store.patchJoin(joinId, { lastSeenAt: now }, join.updatedAt));
    const etag = viewEtag(cluster.registration(join));
    const ifNoneMatch = ctx.req.headers["if-none-match"];
    if (waitSeconds > 0 && ifNoneMatch === etag) {
      await o.waitForChange(
        ctx,
        waitSeconds * 1000,
        () => viewEtag(cluster.registration(cluster.store.getJoin(joinId)!)) !== etag,
      );
    }
    if (ctx.res.destroyed) return;
    join = cluster.store.getJoin(joinId)!;
    const view = cluster.registration(join);
    const current = viewEtag(view);
    if (ifNoneMatch === current) {
      ctx.res.writeHead(304, { ETag: current, "Cache-Control": "no-store" });
      ctx.res.end();
      return;
    }
    sendJson(ctx, 200, view, { ETag: current });
  });

  router.add("POST", "/v1/join/registrations/:joinId/progress", async (ctx) => {
    const key = o.clientKey(ctx);
    const join = cluster.ownedJoin(ctx.params.joinId!, key);
    // The body is required (spec: reportJoinProgress): an empty report has no steps or log to record.
    const body = parseBody(ProgressReportSchema, await o.requiredBody(ctx, o.limits.progressBodyBytes));
    const registration = cluster.progress(join, body);
    o.kickRunner();
    sendJson(ctx, 200, registration);
  });

  router.add("GET", "/v1/join/registrations/:joinId/release/*path", (ctx) => {
    const key = o.clientKey(ctx);
    const join = cluster.ownedJoin(ctx.params.joinId!, key);
    if (join.state !== "needs-upgrade") {
      throw new HttpProblem(409, "JOIN_STATE_CONFLICT", {
        detail: `The join is ${join.state}; the release is served only while it upgrades itself.`,
      });
    }
    if (!join.upgrade?.served || !o.releaseDir)
      throw new HttpProblem(404, "NOT_FOUND", { detail: "The founder serves no release to this registration." });
    cluster.assertNotUpgrading();
    const file = resolveReleasePath(joinPath(o.releaseDir, o.clusterRelease), ctx.params.path!);
    if (!served.acquire(join.id, o.limits.releaseFilesAtOnce)) {
      throw new HttpProblem(503, "RELEASE_BUSY", {
        detail: `At most ${o.limits.releaseFilesAtOnce} files at once; retry.`,
        headers: { "Retry-After": "1" },
      });
    }
    sendReleaseFile(ctx, file, () => served.release(join.id));
  });
}
