/**
 * The HTTP/1.1 reader's one error: the downloader treats it as a broken connection (retried),
 * so it stays internal rather than joining the public error families of `src/errors/`.
 * @internal
 * @module
 */

/** A response that broke the HTTP/1.1 rules, or a connection that ended inside one. */
export class Http1Error extends Error {
  /** `HTTP1_PARSE` (malformed), `HTTP1_CLOSED` (the connection ended early), `HTTP1_TIMEOUT`. */
  readonly code: "HTTP1_PARSE" | "HTTP1_CLOSED" | "HTTP1_TIMEOUT";
  constructor(code: Http1Error["code"], message: string) {
    super(message);
    this.name = "Http1Error";
    this.code = code;
  }
}
