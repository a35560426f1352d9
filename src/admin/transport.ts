/**
 * What the admin client says about a call that got no answer, and how it joins the caller's
 * signal to its own deadline: the helpers under every wrapped call of `index.ts`.
 * @internal
 * @module
 */

/**
 * `POST /v1/admin/cluster/joins/nj-8w2k4m1p/approve to 192.0.2.240`: the method, the path as
 * sent (ids filled in) and the host, for a message about a call that got no answer; a person
 * reads it, so the operation is named as the API's reference names it, not by its
 * `operationId`. The query and the headers (the token) are left out. Before the request is
 * built, only the host of `baseUrl` is known.
 */
export function describeUnanswered(operationId: string, request: Request | undefined, baseUrl: string): string {
  if (request) {
    const url = new URL(request.url);
    return `${request.method} ${url.pathname} to ${url.host}`;
  }
  let host = baseUrl;
  try {
    host = new URL(baseUrl).host;
  } catch {
    // an unparsable baseUrl is named as it is (it holds no token)
  }
  return `the admin API (${operationId}) at ${host}`;
}

/**
 * The transport's reason, e.g. `ECONNREFUSED` or `ENOTFOUND`: the first error `code` along the
 * cause chain (undici wraps it as `fetch failed` → cause, sometimes an AggregateError of one
 * per address), else the innermost message (a browser's `Failed to fetch`).
 */
export function transportCause(error: unknown): string {
  let message = "";
  const queue: unknown[] = [error];
  for (let seen = 0; queue.length > 0 && seen < 16; seen++) {
    const current = queue.shift();
    if (typeof current !== "object" || current === null) continue;
    const { code, cause, errors, message: text } = current as Record<string, unknown>;
    if (typeof code === "string" && code !== "") return code;
    if (typeof text === "string" && text !== "") message = text;
    if (cause !== undefined) queue.push(cause);
    if (Array.isArray(errors)) queue.push(...(errors as unknown[]));
  }
  return message || "connection failed";
}

/**
 * One signal that aborts when either does, with the first one's reason (what `fetch` then
 * rejects with). Written out rather than `AbortSignal.any` to leave no listener behind on a
 * long-lived caller signal once the call is over.
 */
export function linkSignals(
  a: AbortSignal | undefined,
  b: AbortSignal | undefined,
): { signal: AbortSignal | undefined; dispose: () => void } {
  if (!a || !b) return { signal: a ?? b, dispose: () => {} };
  const controller = new AbortController();
  const onA = () => controller.abort(a.reason);
  const onB = () => controller.abort(b.reason);
  if (a.aborted) onA();
  else if (b.aborted) onB();
  a.addEventListener("abort", onA, { once: true });
  b.addEventListener("abort", onB, { once: true });
  return {
    signal: controller.signal,
    dispose: () => {
      a.removeEventListener("abort", onA);
      b.removeEventListener("abort", onB);
    },
  };
}
