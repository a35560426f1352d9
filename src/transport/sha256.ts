/**
 * Incremental SHA-256 of a file being downloaded, off the event loop when it can be.
 *
 * Why a worker: on the event loop, SHA-256 (1.7 GB/s here, with SHA-NI) takes as long per
 * byte as the TLS layer does, and the two add up. In a worker thread the hash of one batch
 * runs while the event loop decrypts the next. The batches are views of a
 * `SharedArrayBuffer`, so nothing is copied to the worker: the writer only reuses a batch
 * once both its disk write and its hash are done.
 * @internal
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { Worker } from "node:worker_threads";

/** A SHA-256 fed in order; `update`'s bytes must stay unchanged until its promise settles. */
export interface Sha256Stream {
  /** True when a worker thread does the hashing. */
  readonly inWorker: boolean;
  /** Hashes `bytes` after everything given before. */
  update(bytes: Uint8Array): Promise<void>;
  /** The hex digest of everything given; the stream is done after it. */
  digest(): Promise<string>;
  /** Forgets the stream (given up); never throws. */
  drop(): void;
}

/** A stream in a worker thread when `shared` (the bytes will be views of a SharedArrayBuffer), else on the event loop. */
export function sha256Stream(shared: boolean): Sha256Stream {
  if (shared) {
    try {
      hashWorker();
      return workerStream();
    } catch {
      // no worker threads here (a permission model, a sandbox): the event loop hashes
    }
  }
  return localStream(createHash("sha256"));
}

/** A stream on the event loop, continuing `hash`. */
export function localStream(hash: Hash): Sha256Stream {
  return {
    inWorker: false,
    update(bytes) {
      hash.update(bytes);
      return Promise.resolve();
    },
    async digest() {
      return hash.digest("hex");
    },
    drop() {},
  };
}

// The worker is a few lines of CommonJS evaluated from a string: no file to locate next to a
// bundle. It answers every message, in order, on the same stream id.
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const hashes = new Map();
parentPort.on("message", (m) => {
  try {
    if (m.op === "update") {
      let stream = hashes.get(m.id);
      if (!stream) hashes.set(m.id, (stream = { hash: createHash("sha256"), buffer: undefined }));
      // the shared memory comes with a stream's first update only: passing it is not free
      if (m.buffer) stream.buffer = m.buffer;
      stream.hash.update(new Uint8Array(stream.buffer, m.offset, m.length));
      parentPort.postMessage({ id: m.id });
    } else if (m.op === "digest") {
      const stream = hashes.get(m.id);
      hashes.delete(m.id);
      parentPort.postMessage({ id: m.id, digest: (stream ? stream.hash : createHash("sha256")).digest("hex") });
    } else if (m.op === "drop") {
      hashes.delete(m.id);
    }
  } catch (error) {
    parentPort.postMessage({ id: m.id, error: String(error && error.message || error) });
  }
});
`;

interface Waiter {
  resolve(value: { digest?: string }): void;
  reject(error: unknown): void;
}

interface Pool {
  worker: Worker;
  waiting: Map<number, Waiter[]>;
  pending: number;
}

let pool: Pool | undefined;
let nextId = 1;

function hashWorker(): Pool {
  if (pool) return pool;
  const worker = new Worker(WORKER_SOURCE, { eval: true, name: "stratum sha256" });
  const current: Pool = { worker, waiting: new Map(), pending: 0 };
  // idle, the worker must not keep the process alive; busy, it must (a digest may be all that is left)
  worker.unref();
  worker.on("message", (message: { id: number; digest?: string; error?: string }) => {
    const queue = current.waiting.get(message.id);
    const waiter = queue?.shift();
    if (queue && queue.length === 0) current.waiting.delete(message.id);
    if (!waiter) return;
    settled(current);
    if (message.error !== undefined) waiter.reject(new Error(`hashing failed: ${message.error}`));
    else waiter.resolve(message);
  });
  const fail = (error: unknown): void => {
    if (pool === current) pool = undefined;
    for (const queue of current.waiting.values()) for (const waiter of queue) waiter.reject(error);
    current.waiting.clear();
    current.pending = 0;
  };
  worker.on("error", fail);
  worker.on("exit", (code) => fail(new Error(`the hashing worker exited (code ${code})`)));
  pool = current;
  return current;
}

function settled(current: Pool): void {
  current.pending -= 1;
  if (current.pending === 0) current.worker.unref();
}

function ask(current: Pool, id: number, message: Record<string, unknown>): Promise<{ digest?: string }> {
  return new Promise((resolve, reject) => {
    let queue = current.waiting.get(id);
    if (!queue) current.waiting.set(id, (queue = []));
    queue.push({ resolve, reject });
    if (current.pending === 0) current.worker.ref();
    current.pending += 1;
    current.worker.postMessage({ ...message, id });
  });
}

function workerStream(): Sha256Stream {
  const id = nextId++;
  let current: Pool | undefined;
  let sent: SharedArrayBuffer | undefined;
  const worker = (): Pool => {
    const live = hashWorker();
    // a worker that died mid-stream lost this stream's state: never continue on a new one
    if (current && current !== live) throw new Error("the hashing worker exited mid-file");
    return (current = live);
  };
  return {
    inWorker: true,
    async update(bytes) {
      if (bytes.length === 0) return;
      if (!(bytes.buffer instanceof SharedArrayBuffer))
        throw new TypeError("a worker hash takes views of a SharedArrayBuffer");
      const buffer = bytes.buffer === sent ? undefined : (sent = bytes.buffer);
      await ask(worker(), id, {
        op: "update",
        ...(buffer ? { buffer } : {}),
        offset: bytes.byteOffset,
        length: bytes.length,
      });
    },
    async digest() {
      const answer = await ask(worker(), id, { op: "digest" });
      return answer.digest!;
    },
    drop() {
      if (current && pool === current) current.worker.postMessage({ op: "drop", id });
    },
  };
}
