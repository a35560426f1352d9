/**
 * Bearer tokens of the admin API. A token is 256 random bits; the server keeps only its
 * SHA-256, with a name (the actor in audit entries) and its permissions. The bootstrap admin
 * token holds every permission; tests and scripts make narrower ones.
 * @module
 */

import { createHash, timingSafeEqual } from "node:crypto";
import { HttpProblem, type RequestContext } from "./http.js";
import { newApiToken } from "./ids.js";
import type { Store } from "./store.js";

/** The permissions of the admin API, one per kind of operation. */
export const PERMISSIONS = [
  "ha:MintJoinToken",
  "ha:DescribeJoinCodes",
  "ha:RevokeJoinToken",
  "ha:DescribeNodeJoins",
  "ha:ApproveNodeJoin",
  "ha:DescribeCluster",
  "ha:ManageCluster",
] as const;

/** One permission. */
export type Permission = (typeof PERMISSIONS)[number];

/** Who called: the token's name and permissions. */
export interface Principal {
  name: string;
  permissions: ReadonlySet<string>;
}

const hash = (token: string): string => createHash("sha256").update(token, "utf8").digest("hex");

/** Stores a token (by hash) with its name and permissions. */
export function putToken(
  store: Store,
  options: { id: string; name: string; token: string; permissions: readonly string[] },
): void {
  store.tx(() =>
    store.putToken({
      id: options.id,
      name: options.name,
      hash: hash(options.token),
      permissions: [...options.permissions],
      createdAt: Date.now(),
    }),
  );
}

/** Makes a new token with `permissions` and returns it (the only time it is seen). */
export function createToken(store: Store, permissions: readonly Permission[], name = "token"): string {
  const token = newApiToken();
  const id = `tok-${hash(token).slice(0, 12)}`;
  store.tx(() => {
    store.putToken({ id, name, hash: hash(token), permissions: [...permissions], createdAt: Date.now() });
    store.audit("system", "cluster.token.created", id, { name, permissions: [...permissions] });
  });
  return token;
}

const REALM = 'Bearer realm="stratum"';

/**
 * The caller of an admin request, who must hold `permission`: 401 `UNAUTHORIZED` with
 * `WWW-Authenticate` without a valid token, 403 `FORBIDDEN` (with `details.permission`)
 * without the permission.
 */
export function authorize(store: Store, ctx: RequestContext, permission: Permission): Principal {
  const header = ctx.req.headers.authorization;
  const match = typeof header === "string" ? /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(header) : null;
  if (!match) {
    throw new HttpProblem(401, "UNAUTHORIZED", {
      detail: "A bearer token is required.",
      headers: { "WWW-Authenticate": REALM },
    });
  }
  const digest = hash(match[1]!);
  const row = store.tokenByHash(digest);
  // The lookup is by hash; the compare is constant-time anyway, for the habit.
  if (!row || !timingSafeEqual(Buffer.from(row.hash, "hex"), Buffer.from(digest, "hex"))) {
    throw new HttpProblem(401, "UNAUTHORIZED", {
      detail: "The bearer token is not valid.",
      headers: { "WWW-Authenticate": `${REALM}, error="invalid_token"` },
    });
  }
  const permissions = new Set(row.permissions);
  if (!permissions.has(permission)) {
    throw new HttpProblem(403, "FORBIDDEN", {
      detail: `The token lacks the permission ${permission}.`,
      details: { permission },
    });
  }
  return { name: row.name, permissions };
}
