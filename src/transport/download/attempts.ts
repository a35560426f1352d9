/**
 * Retry bookkeeping, shared by the manifest and the files: failures in a row that brought no
 * new byte, the backoff between them, and giving up.
 * @internal
 * @module
 */
import { retryDelay, sleep, throwIfAborted } from "../../core/retry.js";
import { ReleaseDownloadError, StratumApiError } from "../../errors/index.js";
import { errorCode } from "../../fs/durable.js";
import type { ReleaseFetchRequest, ReleaseFetchResponse } from "../sources.js";
import { ProxyTunnelError } from "../tunnel.js";
import type { DownloadSession, RequestScope } from "./session.js";

/** The attempts at one release path. */
export class Attempts {
  /** Failures in a row since the last progress. */
  failures = 0;
  /** Requests made, for the `exhausted` error. */
  requests = 0;
  private highWater: number;

  constructor(
    private readonly session: DownloadSession,
    private readonly path: string,
    start: number,
  ) {
    this.highWater = start;
  }

  /**
   * Sends one request for the path: resolves with the answer and its scope (whose `end` the
   * caller calls when done with it), or with undefined after a request that brought none
   * (counted, and waited for). Throws what ends the path.
   */
  async fetch(
    request: Omit<ReleaseFetchRequest, "signal">,
  ): Promise<{ response: ReleaseFetchResponse; scope: RequestScope } | undefined> {
    const { session } = this;
    throwIfAborted(session.signal);
    this.requests += 1;
    const scope = session.request(this.path);
    try {
      const response = await session.source.fetch(this.path, { ...request, signal: scope.signal });
      scope.watchBody();
      return { response, scope };
    } catch (error) {
      scope.end();
      await this.backOffOrGiveUp(session.transientOrThrow(error, this.path));
      return undefined;
    }
  }

  /**
   * A byte beyond any received before is progress: the failure count starts over, unless the
   * bytes came slower than the minimum rate (`slow`), which is no progress worth waiting on.
   * Terminates, since files are finite.
   */
  progressTo(offset: number, slow = false): void {
    if (offset > this.highWater) {
      this.highWater = offset;
      if (!slow) this.failures = 0;
    }
  }

  /**
   * Counts a failure, then waits before the next attempt (as `Retry-After` says, else with
   * backoff), or throws `exhausted` when the failures in a row are more than allowed.
   */
  async backOffOrGiveUp(cause: unknown, retryAfterSeconds?: number, status?: number): Promise<void> {
    const { retry } = this.session;
    this.failures += 1;
    if (this.failures > retry.attempts) {
      // the proxy kept failing the tunnel: name it, not the mirror
      const tunnel = (cause as { cause?: unknown } | undefined)?.cause;
      if (tunnel instanceof ProxyTunnelError) throw this.session.proxyFailure(tunnel, this.path, this.requests);
      throw new ReleaseDownloadError(
        "exhausted",
        `${this.path} from ${this.session.describe()}: gave up after ${this.failures} failed attempts in a row (${describeCause(cause, status)})`,
        { path: this.path, attempts: this.requests, ...(status === undefined ? {} : { status }), cause },
      );
    }
    const delay =
      retryAfterSeconds !== undefined
        ? Math.min(retryDelay(this.failures - 1, retryAfterSeconds), retry.maxRetryAfterMs)
        : retryDelay(this.failures - 1, undefined, { baseMs: retry.baseMs, maxMs: retry.maxMs });
    await sleep(delay, this.session.signal);
  }
}

function describeCause(cause: unknown, status: number | undefined): string {
  if (status !== undefined) return `last answer HTTP ${status}${problemCodeSuffix(cause)}`;
  const code = errorCode(cause) ?? errorCode((cause as { cause?: unknown } | undefined)?.cause);
  return code ? `last error ${code}` : "last error a broken connection";
}

/** ` CODE` for a refusal whose problem named a code, for messages. */
export function problemCodeSuffix(cause: unknown): string {
  return cause instanceof StratumApiError && !cause.code.startsWith("HTTP_") ? ` ${cause.code}` : "";
}
