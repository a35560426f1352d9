/**
 * Request bodies: JSON only, read with a size cap, validated with zod. A body the server cannot
 * take is refused before a byte of it is parsed: another media type, a charset other than
 * UTF-8, or a `Content-Encoding` (415 `UNSUPPORTED_MEDIA_TYPE`); too large or not JSON (400
 * `INVALID_INPUT`); the wrong shape (400 with one field error per problem). Never a 500.
 * @module
 */

import type { IncomingMessage } from "node:http";
import type { z } from "zod";
import type { RequestContext } from "./http.js";
import { HttpProblem, invalidInput } from "./http-problem.js";

/** A media type written as an RFC 9110 token pair, to name it in a refusal (anything else is not echoed). */
const PRINTABLE_TYPE = /^[A-Za-z0-9!#$&^_.+-]{1,64}\/[A-Za-z0-9!#$&^_.+-]{1,64}$/;

/** True when the request says a body follows (a length above 0, or a transfer coding). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  if (length !== undefined) return Number(length) > 0;
  return req.headers["transfer-encoding"] !== undefined;
}

/**
 * `application/json`, with at most a `charset=utf-8` parameter (any case, quoted or not): what
 * the SDK sends. JSON is UTF-8 by definition (RFC 8259); a body declared in another charset
 * would be parsed wrongly, so it is refused rather than guessed at.
 */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const [type, ...params] = contentType.split(";").map((part) => part.trim().toLowerCase());
  if (type !== "application/json") return false;
  return params.every((param) => param === "" || /^charset=(utf-8|"utf-8")$/.test(param.replace(/\s*=\s*/, "=")));
}

/**
 * Refuses, with 415 `UNSUPPORTED_MEDIA_TYPE`, a body that is not plain JSON: a `Content-Encoding`
 * other than `identity` (gzip and the like: the server does not inflate what a client sends,
 * so a small body cannot become a large one), or a body whose `Content-Type` is not
 * {@link isJsonMediaType}. A request without a body passes.
 */
export function assertJsonBody(ctx: RequestContext, maxBytes: number): void {
  const { req } = ctx;
  const encoding = req.headers["content-encoding"];
  const refuse = (detail: string, headers: Record<string, string> = {}): HttpProblem => {
    // The body is not read: a small one is drained so the connection stays usable, a large or
    // unframed one is cut after the answer.
    const declared = Number(req.headers["content-length"] ?? NaN);
    if (!Number.isFinite(declared) || declared > maxBytes) ctx.closeConnection = true;
    req.resume();
    return new HttpProblem(415, "UNSUPPORTED_MEDIA_TYPE", { detail, headers });
  };
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
    throw refuse("The request body must not be encoded (Content-Encoding); send plain JSON.", {
      "Accept-Encoding": "identity",
    });
  }
  if (!hasBody(req)) return;
  const type = req.headers["content-type"];
  if (!isJsonMediaType(type)) {
    const bare = type?.split(";")[0]?.trim() ?? "";
    if (bare.toLowerCase() === "application/json")
      throw refuse("The request body must be application/json in UTF-8 (charset=utf-8, or no parameter).");
    const named =
      type === undefined ? " (it has no Content-Type)" : PRINTABLE_TYPE.test(bare) ? ` (it is ${bare})` : "";
    throw refuse(`The request body must be application/json${named}.`);
  }
}

/**
 * The bytes of request bodies a listener holds at once, all requests together: each body is
 * bounded by its route, and this bounds them all, so connections that each hold a body just
 * under its bound cannot add up to the founder's memory.
 */
export class BodyBudget {
  #held = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** Takes `n` bytes; false (nothing taken) when they do not fit. */
  take(n: number): boolean {
    if (this.#held + n > this.maxBytes) return false;
    this.#held += n;
    return true;
  }

  /** Gives `n` bytes back. */
  release(n: number): void {
    this.#held = Math.max(0, this.#held - n);
  }
}

/**
 * Reads a JSON body of at most `maxBytes`. An empty body is `undefined` (the caller decides
 * whether one is required). Not JSON by its headers: 415 (see {@link assertJsonBody}). Too
 * large or not JSON: a 400 `INVALID_INPUT` with a field error for the whole body, never a 500.
 * An oversized body is not read further: the connection is closed after the answer, so a
 * client cannot make the server buffer gigabytes. With `budget`, the body's bytes are held from
 * it while they are read; a body that does not fit in what is left is refused with 429
 * `RATE_LIMITED` (`Retry-After`), its connection closed.
 */
export async function readJson(ctx: RequestContext, maxBytes: number, budget?: BodyBudget): Promise<unknown> {
  assertJsonBody(ctx, maxBytes);
  const declared = Number(ctx.req.headers["content-length"] ?? NaN);
  const tooLarge = (): HttpProblem => {
    ctx.closeConnection = true;
    return invalidInput(
      [{ field: "", message: `the body is larger than ${maxBytes} bytes` }],
      "The request body is too large.",
    );
  };
  if (Number.isFinite(declared) && declared > maxBytes) {
    ctx.req.resume(); // drain without keeping it, so the answer can be read by the client
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  let crowded = false;
  try {
    await new Promise<void>((resolve, reject) => {
      ctx.req.on("data", (chunk: Buffer) => {
        if (over || crowded) return;
        if (size + chunk.length > maxBytes) {
          over = true;
          chunks.length = 0;
          resolve();
          return;
        }
        if (budget && !budget.take(chunk.length)) {
          crowded = true;
          chunks.length = 0;
          resolve();
          return;
        }
        size += chunk.length;
        chunks.push(chunk);
      });
      ctx.req.on("end", () => resolve());
      ctx.req.on("error", reject);
      ctx.req.on("aborted", () => reject(new Error("request aborted")));
    });
  } finally {
    budget?.release(size);
  }
  if (over) throw tooLarge();
  if (crowded) {
    ctx.closeConnection = true;
    throw new HttpProblem(429, "RATE_LIMITED", {
      detail: "Too many request bodies are being received at once; send it again shortly.",
      headers: { "Retry-After": "1" },
    });
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // The parser's message can quote the body, which may hold a secret: say only what is wrong.
    throw invalidInput([{ field: "", message: "the body is not valid JSON" }], "The request body is not JSON.");
  }
}

/**
 * The JSON body of a call whose body the spec marks required: none at all is a 400
 * `INVALID_INPUT` at the whole request (field `""`), as is anything the schema then refuses
 * (a JSON `null` included).
 */
export async function readRequiredJson(ctx: RequestContext, maxBytes: number): Promise<unknown> {
  const body = await readJson(ctx, maxBytes);
  if (body === undefined) throw invalidInput([{ field: "", message: "a JSON body is required" }]);
  return body;
}

/**
 * The JSON body of a call whose body may be left out (minting, approving): no body is `{}`,
 * all defaults. Only an absent body is: a JSON `null` is a value, not an object, and the
 * schema refuses it (400), as openapi.yaml's object schema does.
 */
export async function readOptionalJson(ctx: RequestContext, maxBytes: number): Promise<unknown> {
  const body = await readJson(ctx, maxBytes);
  return body === undefined ? {} : body;
}

/** A zod issue path as the spec writes field paths: `links[0].interface`, `disks[1].confirm`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

/**
 * Validates a parsed body with a zod schema. A mismatch is a 400 `INVALID_INPUT` with one field
 * error per issue, at its path; the message never repeats the value.
 */
export function parseBody<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const errors = result.error.issues.map((issue) => ({ field: fieldPath(issue.path), message: issue.message }));
  throw invalidInput(errors);
}
