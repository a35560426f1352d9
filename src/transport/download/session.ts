/**
 * What every request of one download shares: the source, the signal that ends the download,
 * the retry rules, the test hooks and the count of bytes received. And the one judgement of
 * a request that brought no answer: retry it, or stop.
 * @internal
 * @module
 */
import { abortReason } from "../../core/retry.js";
import { NetworkError, ReleaseDownloadError, ReleaseVerificationError } from "../../errors/index.js";
import { errorCode } from "../../fs/durable.js";
import type { ReleaseSource } from "../sources.js";
import { ProxyTunnelError } from "../tunnel.js";
import type { ReleaseRetryOptions, ReleaseTestHooks } from "./options.js";
import { SpeedWatch, type ReleaseMinSpeed } from "./speed.js";

/** A certificate the joiner does not trust: Node's and OpenSSL's codes for it. Retrying cannot fix it. */
const TLS_REFUSAL = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS_|ERR_SSL_|HOSTNAME|ALTNAME/;

/** One download's shared state; each file's transfer and the manifest fetch hold it. */
export class DownloadSession {
  /** Bytes received from the source in this run. */
  fetched = 0;
  /** True while a file is fetched on several connections: one file at a time, for the memory bound. */
  parallelBusy = false;
  /** The segment buffers of the file on several connections, kept for the next such file. */
  readonly segmentBuffers: Buffer[] = [];

  constructor(
    readonly source: ReleaseSource,
    /** Aborts on the caller's abort and when a sibling file fails. */
    readonly signal: AbortSignal,
    readonly retry: Readonly<Required<ReleaseRetryOptions>>,
    readonly minSpeed: Readonly<Required<ReleaseMinSpeed>>,
    readonly hooks: ReleaseTestHooks,
    /** Connections per large file, and the segment size they fetch. */
    readonly parallel: { readonly connections: number; readonly segmentBytes: number } = {
      connections: 1,
      segmentBytes: Number.POSITIVE_INFINITY,
    },
  ) {}

  /** The source, for messages. */
  describe(): string {
    return this.source.describe();
  }

  /**
   * A request or a body that failed without an answer to judge: re-throws an abort as is, a
   * verdict already made as is, a certificate refusal as `tls` and a proxy's refusal as
   * `proxy`; anything else is a transient network failure, returned to be retried.
   */
  transientOrThrow(error: unknown, path: string): NetworkError {
    if (this.signal.aborted) throw abortReason(this.signal);
    if (error instanceof ReleaseDownloadError || error instanceof ReleaseVerificationError) throw error;
    if (error instanceof ProxyTunnelError) {
      if (error.permanent) throw this.proxyFailure(error, path);
      return new NetworkError(`fetching ${path} from ${this.describe()} failed: ${error.message}`, { cause: error });
    }
    const code = errorCode(error) ?? "";
    if (TLS_REFUSAL.test(code)) {
      throw new ReleaseDownloadError(
        "tls",
        `${this.describe()} presented a certificate this joiner does not trust (${code})`,
        { path, cause: error },
      );
    }
    return new NetworkError(`fetching ${path} from ${this.describe()} failed (${code || "connection error"})`, {
      cause: error,
    });
  }

  /** The `proxy` error for a tunnel the proxy refused or kept failing; `attempts` when retries ran out. */
  proxyFailure(error: ProxyTunnelError, path: string, attempts?: number): ReleaseDownloadError {
    return new ReleaseDownloadError("proxy", `${path} from ${this.describe()}: ${error.message}`, {
      path,
      ...(error.status === undefined ? {} : { status: error.status }),
      ...(attempts === undefined ? {} : { attempts }),
      cause: error,
    });
  }

  /** A scope for one request of `path`. */
  request(path: string): RequestScope {
    return new RequestScope(this, path);
  }

  /** The `bad-response` error: the source broke a rule of the range protocol. */
  badResponse(path: string, what: string, status: number): ReleaseDownloadError {
    return new ReleaseDownloadError("bad-response", `${this.describe()} ${what} (${path})`, { path, status });
  }
}

/**
 * One request: its signal (the download's, and its own, aborted when its body falls below
 * the minimum rate) and the watch on its body's rate.
 */
export class RequestScope {
  /** Passed to the source: aborts with the download, or with a `TimeoutError` when too slow. */
  readonly signal: AbortSignal;
  private readonly own = new AbortController();
  private watch: SpeedWatch | undefined;
  private slow = false;

  constructor(
    private readonly session: DownloadSession,
    private readonly path: string,
  ) {
    this.signal = AbortSignal.any([session.signal, this.own.signal]);
  }

  /** True when the body was cut for being slower than the minimum rate. */
  get tooSlow(): boolean {
    return this.slow;
  }

  /** The answer's head is in: its body is held to the minimum rate from now on. */
  watchBody(): void {
    this.watch ??= new SpeedWatch(this.session.minSpeed, `${this.path} from ${this.session.describe()}`, (error) => {
      this.slow = true;
      this.own.abort(error);
    });
  }

  /** `n` body bytes came. */
  received(n: number): void {
    this.watch?.add(n);
  }

  /** The consumer is busy until `wait` settles: not the source's time. */
  pauseWhile(wait: Promise<void>): void {
    this.watch?.pauseWhile(wait);
  }

  /** The request is over: no more checks. */
  end(): void {
    this.watch?.stop();
  }
}
