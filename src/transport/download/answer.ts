/**
 * The rules an answer of a source must follow, read from its status and headers:
 * Content-Length, Content-Range, a strong ETag, Content-Encoding, and what a status other
 * than 200, 206 or 416 means (retry it, or a refusal).
 * @internal
 * @module
 */
import { problemFromText } from "../../core/problem.js";
import { abortReason, parseRetryAfter } from "../../core/retry.js";
import { ReleaseDownloadError, type StratumApiError } from "../../errors/index.js";
import type { ReleaseFetchResponse } from "../sources.js";
import { type Attempts, problemCodeSuffix } from "./attempts.js";
import { discard, readCapped } from "./body.js";
import type { DownloadSession } from "./session.js";

/**
 * Statuses retried: a timeout (408), too early (425: a TLS early-data replay refused, which a
 * fresh request passes), too many requests (429: the founder's or a mirror's rate limit), and
 * the server-side failures that pass (500, 502, 503 `RELEASE_BUSY`, 504). Anything else is a
 * refusal that asking again cannot change.
 */
const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * Most of an error body read for its problem document: a problem is a few hundred bytes, and
 * an endless error body must not hold the download or its memory.
 */
const ERROR_BODY_CAP = 64 * 1024;

/** Whether a status is worth asking again for (see RETRYABLE_STATUS). */
export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUS.has(status);
}

/** A header's value, repeated fields joined as HTTP joins them. */
export function header(response: ReleaseFetchResponse, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** The declared Content-Length; NaN when there is one but it is not a byte count. */
export function contentLength(response: ReleaseFetchResponse): number | undefined {
  const value = header(response, "content-length");
  if (value === undefined) return undefined;
  return /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
}

/** The ETag when it is strong (`"…"`, no `W/`): only a strong one may be sent as If-Range. */
export function strongEtag(response: ReleaseFetchResponse): string | undefined {
  const value = header(response, "etag")?.trim();
  return value && /^"[^"]*"$/.test(value) ? value : undefined;
}

/** `Content-Range: bytes START-END/TOTAL` of a 206, or undefined when it is not that. */
export function parseContentRange(
  value: string | undefined,
): { start: number; end: number; total: number } | undefined {
  const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value?.trim() ?? "");
  if (!match) return undefined;
  return { start: Number(match[1]), end: Number(match[2]), total: Number(match[3]) };
}

/** The total of `Content-Range: bytes *\/TOTAL` (a 416), or undefined. */
export function parseUnsatisfiedRange(value: string | undefined): number | undefined {
  const match = /^bytes \*\/(\d+)$/.exec(value?.trim() ?? "");
  return match ? Number(match[1]) : undefined;
}

/** Throws `bad-response` (after dropping the body) when the answer is encoded: only identity was asked for. */
export async function checkIdentityEncoding(
  session: DownloadSession,
  response: ReleaseFetchResponse,
  path: string,
): Promise<void> {
  const encoding = header(response, "content-encoding")?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    await discard(response.body);
    throw session.badResponse(path, `sent Content-Encoding ${encoding}; only identity was accepted`, response.status);
  }
}

/**
 * An answer that is neither 200, 206 nor 416: waits and returns (a status worth retrying) or
 * throws `refused`. Either way its problem document becomes the {@link StratumApiError} the
 * error carries as `cause`, parsed and redacted as every API error is.
 */
export async function retryOrRefuse(
  session: DownloadSession,
  attempts: Attempts,
  response: ReleaseFetchResponse,
  path: string,
): Promise<void> {
  const retryAfter = parseRetryAfter(header(response, "retry-after"));
  const apiError = await readRefusal(session, response, path, retryAfter);
  if (RETRYABLE_STATUS.has(response.status)) {
    await attempts.backOffOrGiveUp(apiError, retryAfter, response.status);
    return;
  }
  throw new ReleaseDownloadError(
    "refused",
    `${session.describe()} refused ${path}: HTTP ${response.status}${problemCodeSuffix(apiError)}`,
    { path, status: response.status, cause: apiError },
  );
}

/** The refusal's {@link StratumApiError}; a body that breaks, or is too long, counts as none. */
async function readRefusal(
  session: DownloadSession,
  response: ReleaseFetchResponse,
  path: string,
  retryAfter: number | undefined,
): Promise<StratumApiError> {
  let text: string | undefined;
  try {
    text = (await readCapped(response.body, ERROR_BODY_CAP))?.toString("utf8");
  } catch {
    if (session.signal.aborted) throw abortReason(session.signal);
  }
  return problemFromText(response.status, text, retryAfter, `GET ${path} from ${session.describe()}`);
}
