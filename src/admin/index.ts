/**
 * The admin client: one method per admin operation of `openapi.yaml`, on openapi-fetch, typed
 * from `generated/api.d.ts`. Each returns the answer's data or throws one of the SDK's errors;
 * each takes an `AbortSignal`. Browser-safe and small: response validation is opt-in and
 * injected (`validate: validateResponses`), so a console that does not ask for it bundles no zod.
 * @module
 */

import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "../../generated/api.js";
import type { Input } from "../types.js";
import { problemFromResponse } from "../core/problem.js";
import { throwIfAborted } from "../core/retry.js";
import { NetworkError, ResponseValidationError, StratumError, TimeoutError } from "../errors/index.js";
import type { AdminOperationId, ResponseValidator } from "../schemas/index.js";
import { ADMIN_OPERATIONS, type AdminOperation } from "./operations.js";
import { describeUnanswered, linkSignals, transportCause } from "./transport.js";
import {
  watchJoins,
  type JoinChange,
  type JoinListPoll,
  type PollNodeJoinsOptions,
  type WatchJoinsOptions,
} from "./watch.js";

export {
  diffJoins,
  watchJoins,
  type JoinChange,
  type JoinListPoll,
  type PollNodeJoinsOptions,
  type WatchJoinsOptions,
} from "./watch.js";

/** The component schemas of `openapi.yaml` as TypeScript types (`ApiSchemas["NodeJoin"]`, …). */
export type ApiSchemas = components["schemas"];

/** Supplies the bearer token for each call; may be async, e.g. to refresh it first. */
export type TokenProvider = () => string | Promise<string>;

/** How to reach and authenticate to the API. Exactly one of `token` and `getToken`. */
export type AdminClientOptions = {
  /** The API's origin (and path prefix, if any), e.g. `https://stratum.example.com`. */
  baseUrl: string;
  /**
   * A `fetch` to use instead of the global one. By default the global `fetch` is looked up at
   * each call, not at creation, so a mock installed later (msw) is still seen.
   */
  fetch?: ((request: Request) => Promise<Response>) | undefined;
  /**
   * Checks every answer against the spec's schema; pass `validateResponses` (root entry). A
   * body that does not match throws `ResponseValidationError`. Absent: answers are trusted,
   * and zod is not bundled.
   */
  validate?: ResponseValidator | undefined;
  /** A default `timeoutMs` for every call (see {@link CallOptions}). None by default. */
  timeoutMs?: number | undefined;
} & (
  | {
      /** A fixed bearer token. */
      token: string;
      /** Not with `token`. */
      getToken?: never | undefined;
    }
  | {
      /** Called before every call for the bearer token (so a refreshed one is used); its failure rejects the call as it is. */
      getToken: TokenProvider;
      /** Not with `getToken`. */
      token?: never | undefined;
    }
);

/** Per-call options of every admin method. */
export interface CallOptions {
  /** Aborts the call; the abort is re-thrown as it is (an `AbortError`, or the signal's reason). */
  signal?: AbortSignal | undefined;
  /** Gives up after this many ms with a `TimeoutError`. Overrides the client's default. */
  timeoutMs?: number | undefined;
}

/**
 * The admin API. Every method resolves to the answer's body, or rejects with
 * `StratumApiError` (the API refused: 4xx/5xx, with its problem code, `retryAfter`, field
 * errors), `ResponseValidationError` (the body is not JSON, or with `validate` does not match
 * the schema), `NetworkError` (no answer), `TimeoutError` (`timeoutMs` ran out), or the
 * caller's abort as it is.
 */
export interface AdminClient {
  /** Mints a join code (`POST /v1/admin/cluster/join-codes`). The answer's `code` and `url` are shown once; never log them. */
  mintJoinCode(
    request?: Input<ApiSchemas["JoinCodeRequest"]>,
    options?: CallOptions,
  ): Promise<ApiSchemas["MintedJoinCode"]>;
  /** Every join code, newest first, never the codes themselves (`GET /v1/admin/cluster/join-codes`). */
  listJoinCodes(options?: CallOptions): Promise<ApiSchemas["JoinCodeList"]>;
  /** Revokes a join code at once (`DELETE /v1/admin/cluster/join-codes/{codeId}`). */
  revokeJoinCode(codeId: string, options?: CallOptions): Promise<ApiSchemas["JoinCode"]>;
  /**
   * Every registration, newest first, and how many more machines the cluster can take
   * (`capacity`, when the founder says) (`GET /v1/admin/cluster/joins`).
   */
  listNodeJoins(options?: CallOptions): Promise<ApiSchemas["NodeJoinList"]>;
  /**
   * One long poll of the registrations (`GET /v1/admin/cluster/joins?waitSeconds=N` with
   * `If-None-Match`): without `etag`, the list at once with its `ETag`; with `etag` (the one of
   * the list the caller has), the founder holds the request until the list changes (`changed:
   * true`, the new list and `ETag`) or `waitSeconds` pass (`changed: false`). An answer with no
   * `etag` is from a founder that cannot long-poll. `timeoutMs` counts from the end of the wait.
   * {@link AdminClient.watchJoins} is built on it.
   */
  pollNodeJoins(options?: PollNodeJoinsOptions): Promise<JoinListPoll>;
  /** One registration, with the tail of its install log (`GET /v1/admin/cluster/joins/{joinId}`). */
  getNodeJoin(joinId: string, options?: CallOptions): Promise<ApiSchemas["NodeJoin"]>;
  /** Approves a machine with its assignment; all defaults without one (`POST …/joins/{joinId}/approve`). */
  approveNodeJoin(
    joinId: string,
    approval?: Input<ApiSchemas["Approval"]>,
    options?: CallOptions,
  ): Promise<ApiSchemas["NodeJoin"]>;
  /**
   * The complete assignment {@link AdminClient.approveNodeJoin} with the same `approval` would
   * apply now, defaults filled in and addresses allocated, without approving
   * (`POST …/joins/{joinId}/approval-preview`): for a console that shows the operator what
   * will be applied before it approves. Refused exactly as the approval would be: a
   * `StratumApiError` 409 `JOIN_APPROVAL_REFUSED` with field errors (which the founder answers
   * in the preview's `refusal`, with 200, so a browser logs no failed request), 409
   * `JOIN_STATE_CONFLICT`, 404; changes nothing.
   */
  previewApproval(
    joinId: string,
    approval?: Input<ApiSchemas["Approval"]>,
    options?: CallOptions,
  ): Promise<{
    /** The complete assignment the approval would apply. */
    assignment: ApiSchemas["Assignment"];
  }>;
  /** Rejects a machine, with a reason (`POST …/joins/{joinId}/reject`). */
  rejectNodeJoin(
    joinId: string,
    rejection: Input<ApiSchemas["Rejection"]>,
    options?: CallOptions,
  ): Promise<ApiSchemas["NodeJoin"]>;
  /**
   * Expires a waiting join (`pending`, `needs-upgrade`) now (`POST …/joins/{joinId}/expire`):
   * for a machine the cluster cannot take, its waiting slot freed at once; unlike a rejection,
   * its key may register again later. Any other state is 409 `JOIN_STATE_CONFLICT`.
   */
  expireNodeJoin(joinId: string, options?: CallOptions): Promise<ApiSchemas["NodeJoin"]>;
  /** Queues a failed join again (`POST …/joins/{joinId}/retry`). */
  retryNodeJoin(joinId: string, options?: CallOptions): Promise<ApiSchemas["NodeJoin"]>;
  /**
   * Fails a running join (`delivering`, `installing`) at once, with a reason
   * (`POST …/joins/{joinId}/fail`): for a machine that will never report again. It becomes
   * `failed` with `failedStep` `operator` and the reason as `failedError`, which frees the queue
   * for the next join; {@link AdminClient.retryNodeJoin} queues it again. Any other state is
   * 409 `JOIN_STATE_CONFLICT`.
   */
  failNodeJoin(
    joinId: string,
    failure: Input<ApiSchemas["JoinFailure"]>,
    options?: CallOptions,
  ): Promise<ApiSchemas["NodeJoin"]>;
  /** The members and the membership generation (`GET /v1/admin/cluster/members`). */
  listClusterMembers(options?: CallOptions): Promise<ApiSchemas["MemberList"]>;
  /** The cluster's networks, for an assignment (`GET /v1/admin/cluster/networks`). */
  getClusterNetworks(options?: CallOptions): Promise<ApiSchemas["ClusterNetworks"]>;
  /** Rotates the cluster CA, ending every live code (`POST /v1/admin/cluster/ca-rotations`; reference server). */
  rotateClusterCa(options?: CallOptions): Promise<ApiSchemas["CaRotation"]>;
  /** Marks a cluster upgrade in progress or over (`PUT /v1/admin/cluster/upgrade`; reference server). */
  setClusterUpgrade(
    upgrade: Input<ApiSchemas["ClusterUpgrade"]>,
    options?: CallOptions,
  ): Promise<ApiSchemas["ClusterUpgrade"]>;
  /**
   * Watches the join list and yields what changed: a machine arrived (`added`), a join moved
   * (`changed`, with the previous view), or left the list (`removed`). The first answer yields
   * every join as `added`. Long-polls (a change arrives as it happens), or polls every
   * `intervalMs` against a founder that cannot. See {@link watchJoins}.
   */
  watchJoins(options?: WatchJoinsOptions): AsyncGenerator<JoinChange, void, undefined>;
  /**
   * The underlying openapi-fetch client, authenticated, for any call not wrapped here. It
   * keeps openapi-fetch's own contract (`{ data, error, response }`, no throwing on 4xx/5xx).
   */
  readonly raw: Client<paths>;
}

/** What a wrapped call may accept besides a 2xx. */
interface Accepts {
  /** Takes a 304 (a long poll that saw no change) as an answer, not a refusal. */
  notModified?: boolean | undefined;
}

/** What every wrapped call hands openapi-fetch on top of its own arguments. */
type SendInit = {
  signal: AbortSignal | undefined;
  headers: Record<string, string>;
  middleware: Middleware[];
};

/**
 * An {@link AdminClient} for the API at `baseUrl`. The token is kept in a closure: it is on no
 * property of the client, in no error and in no message, so neither logging the client nor an
 * error can leak it.
 */
export function createAdminClient(options: AdminClientOptions): AdminClient {
  const { baseUrl, validate, timeoutMs: defaultTimeoutMs } = options;
  const customFetch = options.fetch;
  const token = options.token;
  const getToken = options.getToken;
  if (typeof token !== "string" && typeof getToken !== "function") {
    throw new StratumError("INVALID_ARGUMENT", "createAdminClient needs a token or a getToken function");
  }
  const resolveToken = async (): Promise<string> => (getToken ? await getToken() : (token as string));
  checkBaseUrl(baseUrl);

  const raw = createClient<paths>({
    baseUrl,
    fetch: customFetch ?? ((request) => globalThis.fetch(request)),
  });
  // The raw client authenticates itself; the wrapped calls set the header before they send,
  // so the token is resolved once per call and a failing getToken is not taken for a network error.
  raw.use({
    async onRequest({ request }) {
      if (!request.headers.has("Authorization")) request.headers.set("Authorization", `Bearer ${await resolveToken()}`);
      return request;
    },
  });

  const context: CallContext = { baseUrl, resolveToken, validate, defaultTimeoutMs };

  async function pollNodeJoins(o: PollNodeJoinsOptions = {}): Promise<JoinListPoll> {
    const { etag, signal } = o;
    const JOINS = ADMIN_OPERATIONS.listNodeJoins.path;
    const waitSeconds = etag === undefined ? 0 : (o.waitSeconds ?? 0);
    const base = o.timeoutMs ?? defaultTimeoutMs;
    const { data, response } = await adminCall(
      context,
      "listNodeJoins",
      `GET ${JOINS}`,
      (init) =>
        raw.GET(JOINS, {
          ...init,
          headers: { ...init.headers, ...(etag === undefined ? {} : { "If-None-Match": etag }) },
          ...(waitSeconds > 0 ? { params: { query: { waitSeconds } } } : {}),
        }),
      { ...(signal ? { signal } : {}), ...(base === undefined ? {} : { timeoutMs: base + waitSeconds * 1000 }) },
      { notModified: true },
    );
    const answered = response?.headers.get("ETag") ?? undefined;
    if (response?.status === 304) return { changed: false, etag: answered ?? etag! };
    return { changed: true, items: data.items, ...(data.capacity ? { capacity: data.capacity } : {}), etag: answered };
  }

  /**
   * The method of one row of the table: its arguments (the path parameter, the body, the call
   * options, in that order) into the request, the answer's body into its result.
   */
  function method(operationId: AdminOperationId): (...args: unknown[]) => Promise<unknown> {
    const row: AdminOperation = ADMIN_OPERATIONS[operationId];
    const operation = `${row.method.toUpperCase()} ${row.path}`;
    const request = raw.request as unknown as (
      method: string,
      path: string,
      init: object,
    ) => Promise<{ data?: unknown }>;
    return async (...args) => {
      let next = 0;
      const id = row.pathParam ? args[next++] : undefined;
      const body = row.body ? args[next++] : undefined;
      const { data } = await adminCall(
        context,
        operationId,
        operation,
        (init) =>
          request(row.method, row.path, {
            ...init,
            ...(row.pathParam ? { params: { path: { [row.pathParam]: id } } } : {}),
            ...(row.body ? { body: body ?? (row.body === "optional" ? {} : undefined) } : {}),
          }),
        args[next] as CallOptions | undefined,
      );
      return row.answer ? row.answer(data as never, operation) : data;
    };
  }

  const operations = Object.fromEntries(
    (Object.keys(ADMIN_OPERATIONS) as AdminOperationId[]).map((id) => [id, method(id)]),
  ) as unknown as Pick<AdminClient, AdminOperationId>;
  const client: AdminClient = {
    ...operations,
    pollNodeJoins,
    watchJoins: (watchOptions) => watchJoins(client, watchOptions),
    raw,
  };
  return client;
}

/** What every call of one client shares. */
interface CallContext {
  baseUrl: string;
  resolveToken: () => Promise<string>;
  validate: ResponseValidator | undefined;
  defaultTimeoutMs: number | undefined;
}

/** One call of the admin API: its answer's body (validated when asked) and the response it came in. */
async function adminCall<T>(
  context: CallContext,
  operationId: AdminOperationId,
  operation: string,
  send: (init: SendInit) => Promise<{ data?: T; response?: Response }>,
  callOptions: CallOptions = {},
  accepts: Accepts = {},
): Promise<{ data: T; response: Response | undefined }> {
  const { baseUrl, resolveToken, validate, defaultTimeoutMs } = context;
  const { signal } = callOptions;
  throwIfAborted(signal);
  const authorization = `Bearer ${await resolveToken()}`;
  throwIfAborted(signal);
  const timeoutMs = callOptions.timeoutMs ?? defaultTimeoutMs;
  // What a message about no answer names: the request as sent (the real path, not the
  // template), once it is built; the host of baseUrl before that. Never a header or a query.
  let sent: Request | undefined;
  const unanswered = () => describeUnanswered(operationId, sent, baseUrl);
  const deadline = timeoutMs === undefined ? undefined : new AbortController();
  const timer = deadline
    ? setTimeout(
        () => deadline.abort(new TimeoutError(`${unanswered()} got no answer within ${timeoutMs} ms`)),
        timeoutMs,
      )
    : undefined;
  const linked = linkSignals(signal, deadline?.signal);
  // Refusals are turned into errors here, while the response's body is still unread
  // (openapi-fetch would otherwise read it into its `error`).
  const refusals: Middleware = {
    onRequest({ request }) {
      sent = request;
      return undefined;
    },
    async onResponse({ response }) {
      if (response.ok || (accepts.notModified && response.status === 304)) return undefined;
      throw await problemFromResponse(response, operation);
    },
  };
  let data: unknown;
  let response: Response | undefined;
  try {
    ({ data, response } = await send({
      signal: linked.signal,
      headers: { Authorization: authorization },
      middleware: [refusals],
    }));
  } catch (error) {
    if (signal?.aborted) throw error; // the caller's abort, as it is
    if (StratumError.is(error)) throw error; // a refusal, or the deadline's TimeoutError
    if (deadline?.signal.aborted)
      throw new TimeoutError(`${unanswered()} got no answer within ${timeoutMs} ms`, { cause: error });
    if (error instanceof SyntaxError)
      throw new ResponseValidationError(operation, [{ path: "", message: "the body is not JSON" }]);
    throw new NetworkError(`${unanswered()} got no answer: ${transportCause(error)}`, { cause: error });
  } finally {
    clearTimeout(timer);
    linked.dispose();
  }
  if (validate && response?.status !== 304) {
    const result = validate(operationId, data);
    if (!result.success) throw new ResponseValidationError(operation, result.issues);
    data = result.data;
  }
  return { data: data as T, response };
}

/**
 * Refuses at once a `baseUrl` no call could ever use: not an absolute `http://` or `https://`
 * URL (`127.0.0.1:8080` parses as the scheme `127.0.0.1:`, `ftp://…` is not HTTP). A page may
 * name the API by a path on its own origin (`/`, `/api`). Without this, `watchJoins` would take
 * each failed call for a network error and retry it forever.
 */
function checkBaseUrl(baseUrl: unknown): void {
  const inPage = typeof (globalThis as { location?: unknown }).location === "object";
  if (typeof baseUrl === "string" && inPage && baseUrl.startsWith("/")) return;
  let url: URL | undefined;
  try {
    url = new URL(String(baseUrl));
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname)
    throw new StratumError(
      "INVALID_ARGUMENT",
      `the admin API's baseUrl ${JSON.stringify(String(baseUrl).slice(0, 100))} is not an http:// or https:// URL (e.g. https://192.0.2.240 or http://127.0.0.1:8080)`,
    );
}
