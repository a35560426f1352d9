/**
 * A fault-injecting release mirror for tests and the benchmark: a static HTTPS server on
 * 127.0.0.1 (port 0) serving a directory the way docs/protocol.md#release-sources says a mirror or the
 * founder does (strong ETag, Accept-Ranges, If-Range, single ranges with 206/416), with a hook
 * that can break any answer in one of the ways the adversarial suite needs.
 */
import { createReadStream } from "node:fs";
import { open, stat, type FileHandle } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { join, resolve, sep } from "node:path";
import { gzipSync } from "node:zlib";
import { makeTestPki, type TestPki } from "./pki.js";

/** One way to break an answer. */
export type MirrorFault =
  /** Answer this status (503, 429, 404…) with a problem body and maybe Retry-After. */
  | { kind: "status"; status: number; retryAfter?: string; code?: string; details?: Record<string, unknown> }
  /** Ignore Range and If-Range: answer 200 with the whole file. */
  | { kind: "ignore-range" }
  /** Honour Range's start but not its end: `bytes=A-B` answered as `bytes=A-` (truthfully labelled). */
  | { kind: "open-range" }
  /** Honour Range but not If-Range (a 206 even when the ETag changed). */
  | { kind: "ignore-if-range" }
  /** Label a 206 with a Content-Range shifted by `by` bytes (the body is what was asked). */
  | { kind: "shift-range"; by: number }
  /** Serve a 206 for a range starting `by` bytes off the one asked, labelled truthfully. */
  | { kind: "range-from"; by: number }
  /** Label a 206 with another total. */
  | { kind: "range-total"; total: number }
  /** Label a 206's Content-Range end `by` bytes past the last byte sent, without a Content-Length (chunked). */
  | { kind: "range-end"; by: number }
  /** Answer a request without Range with a 206 for the whole file, labelled truthfully. */
  | { kind: "partial-whole" }
  /** Send this Content-Length instead of the true one. */
  | { kind: "content-length"; value: number }
  /** Send this ETag instead of the true one, and honour If-Range against it. */
  | { kind: "etag"; value: string }
  /** Answer 416 with `Content-Range: bytes *\/total` (the true size when absent). */
  | { kind: "416"; total?: number }
  /** gzip the body and say so (with a Content-Length of the compressed size, unless chunked). */
  | { kind: "gzip"; chunked?: boolean }
  /** Destroy the connection after `after` body bytes. */
  | { kind: "reset"; after: number }
  /** End the body cleanly (chunked, no Content-Length) at file offset `at`: the file looks shorter than it is. */
  | { kind: "truncate"; at: number }
  /** Append `bytes` bytes of junk (chunked, no Content-Length). */
  | { kind: "extra"; bytes: number }
  /** Send junk forever (chunked) after the content. */
  | { kind: "endless" }
  /** Send `chunk` bytes every `intervalMs`. */
  | { kind: "trickle"; chunk: number; intervalMs: number }
  /** Serve these bytes instead of the file (same ETag, same ranges). */
  | { kind: "replace"; body: Buffer };

/** What the fault hook and the log see of a request. */
export interface MirrorRequest {
  /** 0-based index of the request on this server. */
  n: number;
  /** 0-based index among the requests for this path since the faults were last set. */
  nth: number;
  /** The release path asked for (decoded, without the prefix). */
  path: string;
  range: string | undefined;
  ifRange: string | undefined;
  acceptEncoding: string | undefined;
}

/** A logged request with what was answered. */
export interface MirrorLogEntry extends MirrorRequest {
  status: number;
  /** Body bytes written to the socket for this answer. */
  bytesSent: number;
  faults: string[];
}

/** Picks the faults for a request (none: undefined or []). */
export type FaultHook = (request: MirrorRequest) => MirrorFault | MirrorFault[] | undefined;

/** A running mirror. */
export interface Mirror {
  /** `https://127.0.0.1:PORT/release` */
  url: string;
  port: number;
  /** The test CA to trust, PEM. */
  caPem: string;
  /** Every request so far. */
  log: MirrorLogEntry[];
  /** Replaces the fault hook and restarts the per-path request counts (`nth`). */
  setFaults(hook: FaultHook | undefined): void;
  /** Body bytes sent so far (all requests). */
  bytesSent(): number;
  close(): Promise<void>;
}

/** Options of {@link startMirror}. */
export interface MirrorOptions {
  /** The directory to serve. */
  root: string;
  /** URL prefix of the release directory. Default `/release`. */
  prefix?: string;
  faults?: FaultHook;
  /** Reuse a PKI (saves ~20 ms per mirror). */
  pki?: TestPki;
  port?: number;
}

/** Starts a mirror on 127.0.0.1. */
export async function startMirror(options: MirrorOptions): Promise<Mirror> {
  const root = resolve(options.root);
  const prefix = (options.prefix ?? "/release").replace(/\/+$/, "");
  const pki = options.pki ?? (await makeTestPki());
  let hook = options.faults;
  const log: MirrorLogEntry[] = [];
  const perPath = new Map<string, number>();
  let total = 0;
  const sockets = new Set<Socket>();

  const server: Server = createServer({ key: pki.keyPem, cert: pki.certPem }, (req, res) => {
    handle(req, res).catch(() => {
      res.destroy();
    });
  });
  server.on("secureConnection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "https://mirror");
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      return send(res, 400, "bad path");
    }
    if (!path.startsWith(`${prefix}/`)) return send(res, 404, "not found");
    path = path.slice(prefix.length + 1);
    const nth = perPath.get(path) ?? 0;
    perPath.set(path, nth + 1);
    const request: MirrorRequest = {
      n: log.length,
      nth,
      path,
      range: header(req, "range"),
      ifRange: header(req, "if-range"),
      acceptEncoding: header(req, "accept-encoding"),
    };
    const entry: MirrorLogEntry = { ...request, status: 0, bytesSent: 0, faults: [] };
    log.push(entry);
    const picked = hook?.(request);
    const faults = picked === undefined ? [] : Array.isArray(picked) ? picked : [picked];
    entry.faults = faults.map((f) => f.kind);
    const fault = <K extends MirrorFault["kind"]>(kind: K) =>
      faults.find((f) => f.kind === kind) as Extract<MirrorFault, { kind: K }> | undefined;

    const status = fault("status");
    if (status) {
      entry.status = status.status;
      res.statusCode = status.status;
      res.setHeader("content-type", "application/problem+json");
      if (status.retryAfter !== undefined) res.setHeader("retry-after", status.retryAfter);
      res.end(
        JSON.stringify({
          status: status.status,
          title: "injected",
          code: status.code ?? (status.status === 503 ? "RELEASE_BUSY" : `HTTP_${status.status}`),
          requestId: `rq-${request.n}`,
          ...(status.details ? { details: status.details } : {}),
        }),
      );
      return;
    }

    const file = join(root, ...path.split("/"));
    if (!file.startsWith(root + sep)) return send(res, 404, "not found");
    const info = await stat(file).catch(() => undefined);
    if (!info || !info.isFile()) {
      entry.status = 404;
      return send(res, 404, "not found");
    }
    const replace = fault("replace");
    const size = replace ? replace.body.length : info.size;
    const etag =
      fault("etag")?.value ??
      `"${info.ino.toString(16)}-${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;

    let start = 0;
    let end = size; // exclusive
    let partial = false;
    const range = fault("ignore-range") ? undefined : request.range;
    const ifRangeOk =
      request.ifRange === undefined || request.ifRange === etag || fault("ignore-if-range") !== undefined;
    const forced416 = fault("416");
    if (forced416 && range) {
      entry.status = 416;
      res.writeHead(416, { "content-range": `bytes */${forced416.total ?? size}`, "content-length": "0" });
      res.end();
      return;
    }
    if (!range && fault("partial-whole")) partial = true;
    if (range && ifRangeOk) {
      const match = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
      if (match && (match[1] !== "" || match[2] !== "")) {
        if (match[1] === "") {
          start = Math.max(0, size - Number(match[2]));
        } else {
          start = Number(match[1]);
          if (match[2] !== "" && !fault("open-range")) end = Math.min(size, Number(match[2]) + 1);
        }
        if (start >= size || start >= end) {
          entry.status = 416;
          res.writeHead(416, { "content-range": `bytes */${size}`, "content-length": "0" });
          res.end();
          return;
        }
        partial = true;
        const from = fault("range-from");
        if (from) start = Math.min(Math.max(0, start + from.by), end - 1);
      }
    }

    const headers: Record<string, string> = {
      "accept-ranges": "bytes",
      etag,
      "content-type": "application/octet-stream",
      "last-modified": info.mtime.toUTCString(),
    };
    if (partial) {
      const shift = fault("shift-range")?.by ?? 0;
      const totalLabel = fault("range-total")?.total ?? size;
      const endBy = fault("range-end")?.by ?? 0;
      headers["content-range"] = `bytes ${start + shift}-${end - 1 + shift + endBy}/${totalLabel}`;
    }
    const gzip = fault("gzip");
    const chunked = fault("truncate") || fault("extra") || fault("endless") || fault("range-end");
    let body: Buffer | undefined;
    if (gzip) {
      body = gzipSync(await readSlice(file, replace?.body, start, end));
      headers["content-encoding"] = "gzip";
      if (!gzip.chunked) headers["content-length"] = String(body.length);
    } else if (!chunked) {
      headers["content-length"] = String(end - start);
    }
    const cl = fault("content-length");
    if (cl) headers["content-length"] = String(cl.value);
    entry.status = partial ? 206 : 200;
    res.writeHead(entry.status, headers);

    const count = (n: number) => {
      entry.bytesSent += n;
      total += n;
    };
    if (body) {
      count(body.length);
      res.end(body);
      return;
    }

    const reset = fault("reset");
    const truncate = fault("truncate");
    const trickle = fault("trickle");
    const plain = !reset && !truncate && !trickle && !fault("extra") && !fault("endless") && !replace && !cl;
    if (plain) {
      // the fast path the benchmark measures: a plain file stream into the TLS socket
      const stream = createReadStream(file, { start, end: end - 1, highWaterMark: 1 << 20 });
      stream.on("data", (chunk) => count(chunk.length));
      stream.pipe(res);
      await new Promise<void>((done) => res.on("close", done));
      stream.destroy();
      return;
    }

    let limit = end - start;
    if (reset) limit = Math.min(limit, reset.after);
    if (truncate) limit = Math.max(0, Math.min(limit, truncate.at - start));
    let closed = false;
    res.on("close", () => (closed = true));
    const write = (chunk: Buffer) =>
      new Promise<void>((done) => {
        count(chunk.length);
        if (res.write(chunk)) done();
        else {
          const go = () => {
            res.off("drain", go);
            res.off("close", go);
            done();
          };
          res.on("drain", go);
          res.on("close", go);
        }
      });
    const step = trickle?.chunk ?? 256 * 1024;
    let at = start;
    const source = replace ? undefined : await open(file, "r");
    try {
      while (at < start + limit && !closed) {
        const n = Math.min(step, start + limit - at);
        const chunk = replace ? replace.body.subarray(at, at + n) : await readAt(source!, at, n);
        await write(chunk);
        at += n;
        if (trickle) await new Promise((r) => setTimeout(r, trickle.intervalMs));
      }
    } finally {
      await source?.close();
    }
    if (closed) return;
    if (reset) {
      // let the bytes reach the client, then break the connection under it
      await new Promise((r) => setTimeout(r, 5));
      res.socket?.destroy();
      return;
    }
    const extra = fault("extra");
    if (extra) await write(Buffer.alloc(extra.bytes, 0x5a));
    if (fault("endless")) {
      const junk = Buffer.alloc(64 * 1024, 0x5a);
      let sent = 0;
      while (!closed && sent < 1024 ** 3) {
        await write(junk);
        sent += junk.length;
      }
      res.destroy();
      return;
    }
    res.end();
  }

  await new Promise<void>((ready) => server.listen(options.port ?? 0, "127.0.0.1", ready));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}${prefix}`,
    port,
    caPem: pki.caPem,
    log,
    setFaults(next) {
      hook = next;
      perPath.clear();
    },
    bytesSent: () => total,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

function send(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain" });
  res.end(text);
}

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buffer, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}

async function readSlice(file: string, replace: Buffer | undefined, start: number, end: number): Promise<Buffer> {
  if (replace) return replace.subarray(start, end);
  const fh = await open(file, "r");
  try {
    return await readAt(fh, start, end - start);
  } finally {
    await fh.close();
  }
}
