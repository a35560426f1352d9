/**
 * Long polls on the admin API: a request that names the `ETag` of what it has and a
 * `waitSeconds` is held until what it asked for changes, then answered at once. Every change
 * to the founder's state is one committed transaction, and the store says so (`change`), so a
 * held request is woken by the commit itself (a registration, a state move, a progress report),
 * not by a timer: a console sees a machine arrive in about the time one request takes.
 * @module
 */

import { createHash } from "node:crypto";
import type { ServerResponse } from "node:http";
import { invalidInput } from "./http-problem.js";
import type { Store } from "./store.js";

/** The longest wait a request may ask for, as the join listener's long poll (protocol 14.1). */
export const MAX_WAIT_SECONDS = 30;

/** A strong ETag of a JSON answer: a hash of its text, so equal answers have equal tags. */
export function jsonEtag(value: unknown): string {
  return `"${createHash("sha256").update(JSON.stringify(value)).digest("base64url").slice(0, 27)}"`;
}

/** The `waitSeconds` query parameter: 0 when absent; 400 `INVALID_INPUT` unless an integer from 0 to 30. */
export function waitSecondsOf(url: URL): number {
  const raw = url.searchParams.get("waitSeconds");
  if (raw === null) return 0;
  if (!/^\d{1,2}$/.test(raw) || Number(raw) > MAX_WAIT_SECONDS)
    throw invalidInput([{ field: "waitSeconds", message: `must be an integer from 0 to ${MAX_WAIT_SECONDS}` }]);
  return Number(raw);
}

/** True when an `If-None-Match` header names `etag` (one tag, a list of tags, or `*`). */
export function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t === etag || t === `W/${etag}`;
  });
}

/**
 * Resolves once `changed()` is true after a committed change (or at a `recheckMs` look, for
 * what changes with time alone), after `ms`, or when the answer is abandoned (the client hung
 * up, or the server closes its connections). Never rejects: the caller answers whatever the
 * state is then.
 */
export function waitForChange(
  store: Store,
  res: ServerResponse,
  ms: number,
  changed: () => boolean,
  recheckMs?: number,
): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      clearInterval(recheck);
      store.off("change", onChange);
      res.off("close", done);
      resolve();
    };
    const onChange = (): void => {
      if (changed()) done();
    };
    const timer = setTimeout(done, ms);
    // What the clock changes without a write (a join turning silent) is looked at now and then.
    const recheck = recheckMs === undefined ? undefined : setInterval(onChange, recheckMs);
    store.on("change", onChange);
    res.on("close", done);
  });
}
