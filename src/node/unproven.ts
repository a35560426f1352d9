/**
 * Refusals from a join listener that had not proven itself (docs/protocol.md#unproven): the
 * answer to KE1, before the PAKE proved the listener holds the join code, and the answer to the
 * call that carried KE3 when it lacks the listener's `Join-Binding`. Whoever is on the network
 * path can send them, so the joiner keeps only what it may act on without trusting them (the
 * status, a code a founder does send there, `Retry-After`) and none of the peer's words.
 * @module
 */
import { parseRetryAfter } from "../core/retry.js";
import { UnprovenRefusalError, type UnprovenRefusalStep } from "../errors/index.js";
import { responseHeader, type PinnedResponse } from "./pinned-connection.js";

/**
 * The refusals a founder does send before its answers are bound, at each step
 * (docs/protocol.md#ke3, steps 1 to 4, and #ke2): busy or rate limited, an upgrade, a full disk,
 * a request it could not take, an internal error; at KE1 also a stale code (told at once), at
 * KE3 a restart of the exchange and the intercepted connection. Anything else (`RELEASE_MISMATCH`,
 * `JOIN_CODE_REVOKED`, `REGISTRATION_REJECTED`, …) a founder says only after KE3, bound.
 */
const SENT_UNBOUND = new Set([
  "RATE_LIMITED",
  "JOIN_CODE_BUSY",
  "UPGRADE_IN_PROGRESS",
  "STORAGE_UNAVAILABLE",
  "INVALID_INPUT",
  "UNSUPPORTED_MEDIA_TYPE",
  "UNAUTHORIZED",
  "INTERNAL",
]);
const SENT_UNBOUND_AT: Record<UnprovenRefusalStep, ReadonlySet<string>> = {
  ke1: new Set(["JOIN_CODE_STALE"]),
  ke3: new Set(["JOIN_PAKE_RESTART", "JOIN_BINDING_FAILED"]),
};

// What of a peer's problem document may be repeated: a code and a request id as the API
// writes them. Anything else in them is not shown (it could carry escapes, a path, advice).
const CODE = /^[A-Z][A-Z0-9_]{0,63}$/;
const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The peer's `code` and `requestId`, when they are written as the API writes them; `forged`
 * when it sent a `code` that is not (no founder writes one so).
 */
function claimOf(json: unknown): { code: string | undefined; requestId: string | undefined; forged: boolean } {
  const record = typeof json === "object" && json !== null ? (json as Record<string, unknown>) : {};
  const code = typeof record.code === "string" && CODE.test(record.code) ? record.code : undefined;
  const requestId =
    typeof record.requestId === "string" && REQUEST_ID.test(record.requestId) ? record.requestId : undefined;
  return { code, requestId, forged: record.code !== undefined && code === undefined };
}

/**
 * The refusal `response` (a 4xx/5xx, or any status but the one expected) of a listener not
 * proven at `step`, as an {@link UnprovenRefusalError}.
 * @param endpoint the listener as dialled, `host:port`, named in the message
 */
export function unprovenRefusal(
  response: PinnedResponse,
  step: UnprovenRefusalStep,
  endpoint: string,
  operation: string,
): UnprovenRefusalError {
  const claim = claimOf(response.json);
  const claimed = claim.code ?? `HTTP_${response.status}`;
  // A status without a problem document (a proxy's page, another service) is no claim of the
  // cluster's either; it keeps the generic HTTP_<status>, as any refusal without one does.
  const founderSendsIt =
    response.status >= 400 &&
    !claim.forged &&
    (claim.code === undefined || SENT_UNBOUND.has(claimed) || SENT_UNBOUND_AT[step].has(claimed));
  const when =
    step === "ke1"
      ? "before it proved it holds the join code"
      : "without the channel binding that would prove it is the listener that proved the join code";
  const message = founderSendsIt
    ? `the join listener at ${endpoint} answered ${operation} with ${response.status} ${claimed} ${when}; nothing else of its answer is used`
    : `the join listener at ${endpoint} answered ${operation} with ${response.status} ${claimed} ${when}, and a cluster's listener does not say that there: someone may be on the line; nothing of its answer is used`;
  return new UnprovenRefusalError({
    status: response.status,
    code: founderSendsIt ? claimed : "REFUSAL_UNPROVEN",
    claimedCode: claim.code,
    step,
    message,
    requestId: claim.requestId,
    retryAfter: parseRetryAfter(responseHeader(response, "retry-after")),
  });
}
