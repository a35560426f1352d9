/**
 * A {@link DirectBody} as an async iterable of fresh buffers, for consumers that keep what
 * they are given (a problem body, the manifest).
 * @internal
 * @module
 */
import type { DirectBody } from "./types.js";

/** Size of a read: the scratch buffer of a connection, and each chunk an iterated body yields. */
export const SCRATCH_BYTES = 64 * 1024;

/** Chunks an iterator holds before it pauses the connection: 1 MiB at most, however slow the loop. */
const MAX_QUEUED_CHUNKS = 16;

/** The body as fresh chunks; `return()` gives the body up. */
export function iterateBody(body: DirectBody): AsyncIterableIterator<Uint8Array> {
  const queue: Uint8Array[] = [];
  let finished = false;
  let error: unknown;
  let wake: (() => void) | undefined;
  let release: (() => void) | undefined;
  let current = Buffer.alloc(0);
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    body
      .readInto({
        space: () => (current = Buffer.allocUnsafe(SCRATCH_BYTES)),
        filled: (n) => {
          queue.push(current.subarray(0, n));
          wake?.();
          return queue.length >= MAX_QUEUED_CHUNKS ? new Promise<void>((resolve) => (release = resolve)) : undefined;
        },
      })
      .then(
        () => {
          finished = true;
          wake?.();
        },
        (failure: unknown) => {
          error = failure;
          finished = true;
          wake?.();
        },
      );
  };
  const iterator: AsyncIterableIterator<Uint8Array> = {
    [Symbol.asyncIterator]: () => iterator,
    async next() {
      start();
      while (queue.length === 0 && !finished) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      const value = queue.shift();
      if (release && queue.length < MAX_QUEUED_CHUNKS) {
        release();
        release = undefined;
      }
      if (value) return { done: false, value };
      if (error !== undefined) throw error;
      return { done: true, value: undefined };
    },
    async return() {
      body.destroy();
      finished = true;
      return { done: true, value: undefined };
    },
  };
  return iterator;
}
