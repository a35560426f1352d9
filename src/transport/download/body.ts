/**
 * Reading a {@link ReleaseFetchResponse} body of any kind a source may give: a Node Readable
 * (undici's), an async iterable, a web `ReadableStream`, or the SDK's own direct body (read
 * in place elsewhere; iterated here).
 * @internal
 * @module
 */
import type { BodySink } from "../http1/index.js";
import type { ReleaseFetchResponse } from "../sources.js";

/** A response body as a source gives it. */
export type ReleaseBody = ReleaseFetchResponse["body"];

/** What {@link forEachChunk} needs of a Node Readable (undici's body is one). */
interface NodeReadableLike {
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  pause(): unknown;
  resume(): unknown;
  destroy(error?: Error): unknown;
  readableEnded?: boolean | undefined;
}

function isNodeReadable(body: unknown): body is NodeReadableLike {
  const b = body as Partial<NodeReadableLike> | null;
  return (
    typeof b?.on === "function" &&
    typeof b.pause === "function" &&
    typeof b.resume === "function" &&
    typeof b.destroy === "function"
  );
}

function ignore(): void {}

/**
 * Feeds every chunk of a body to `onChunk`, waiting whenever it returns a promise, and stops
 * (cancelling the body) when it throws. A Node Readable is read in flowing mode with pause and
 * resume: no promise per chunk and no concatenation of buffered chunks, the hot path of a
 * large download. Anything else is iterated.
 */
export async function forEachChunk(
  body: ReleaseBody,
  onChunk: (chunk: Uint8Array) => Promise<void> | undefined,
): Promise<void> {
  if (!isNodeReadable(body)) {
    for await (const chunk of chunksOf(body)) {
      const wait = onChunk(chunk);
      if (wait) await wait;
    }
    return;
  }
  await flowReadable(body, onChunk);
}

/** {@link forEachChunk} on a Node Readable: flowing, paused while `onChunk`'s promise is pending. */
function flowReadable(
  stream: NodeReadableLike,
  onChunk: (chunk: Uint8Array) => Promise<void> | undefined,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let pending: Promise<void> | undefined;
    let ended = false;
    let settled = false;
    const cleanup = () => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.off("close", onClose);
    };
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      // undici's body errors with "Request aborted" when destroyed: nobody is listening any more
      stream.on("error", ignore);
      stream.destroy();
      reject(error);
    };
    const finish = () => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve();
    };
    const onData = (chunk: Uint8Array) => {
      if (settled) return;
      let wait: Promise<void> | undefined;
      try {
        wait = onChunk(chunk);
      } catch (error) {
        fail(error);
        return;
      }
      if (wait) {
        stream.pause();
        pending = wait;
        wait.then(() => {
          pending = undefined;
          if (ended) finish();
          else if (!settled) stream.resume();
        }, fail);
      }
    };
    const onEnd = () => {
      ended = true;
      if (!pending) finish();
    };
    const onError = (error: unknown) => fail(error);
    const onClose = () => {
      // destroyed without an error and without an end: the body was cut
      if (!ended)
        fail(Object.assign(new Error("the response body was closed before its end"), { code: "UND_ERR_SOCKET" }));
    };
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.on("close", onClose);
  });
}

/** The chunks of a body, in order; leaving the loop early cancels the body. */
export async function* chunksOf(body: ReleaseBody): AsyncGenerator<Uint8Array> {
  if (Symbol.asyncIterator in body) {
    yield* body as AsyncIterable<Uint8Array>;
    return;
  }
  const reader = (body as ReadableStream<Uint8Array>).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/**
 * A whole body, or undefined as soon as it is longer than `cap` (reading stops there).
 * `onChunk` sees every chunk read, the one past the cap included. Rejects if the body breaks.
 */
export async function readCapped(
  body: ReleaseBody,
  cap: number,
  onChunk?: (chunk: Uint8Array) => void,
): Promise<Buffer | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunksOf(body)) {
    onChunk?.(chunk);
    size += chunk.length;
    if (size > cap) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Stops a body without reading it, so its connection is released. */
export async function discard(body: ReleaseBody): Promise<void> {
  try {
    if (isNodeReadable(body)) {
      // a destroyed undici body emits "Request aborted": expected here, not an uncaught error
      body.on("error", ignore);
      body.destroy();
    } else if (typeof (body as { destroy?: unknown }).destroy === "function") {
      (body as unknown as { destroy(): void }).destroy();
    } else if (Symbol.asyncIterator in body) {
      await (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]().return?.();
    } else {
      await (body as ReadableStream<Uint8Array>).cancel();
    }
  } catch {
    // the body is going away either way
  }
}

/** Copies a chunk of a body that is not read in place into `sink`; a promise when the rest must wait. */
export function copyInto(sink: BodySink, chunk: Uint8Array): Promise<void> | undefined {
  let offset = 0;
  while (offset < chunk.length) {
    const space = sink.space();
    const n = Math.min(space.length, chunk.length - offset);
    space.set(chunk.subarray(offset, offset + n));
    offset += n;
    const wait = sink.filled(n);
    if (wait) {
      const rest = chunk.subarray(offset);
      return rest.length === 0 ? wait : wait.then(() => copyInto(sink, rest));
    }
  }
  return undefined;
}
