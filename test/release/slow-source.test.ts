/**
 * Sources that are slow on purpose: a mirror that holds a chunked body open with trailer
 * lines after the last chunk, and bodies that trickle below or above the minimum rate
 * (`minSpeed`). Each must end: in a typed error, or in the verified release.
 */
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import * as tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NetworkError, ReleaseDownloadError, TimeoutError } from "../../src/errors/index.js";
import { startMirroredRelease, type MirroredRelease } from "./helpers/mirrored-release.js";
import { download, failure } from "./helpers/run.js";

const TARGET = "os/blobs/target";
const SIZE = 600_000;

let env: MirroredRelease;

beforeAll(async () => {
  env = await startMirroredRelease({ [TARGET]: SIZE });
});

afterAll(async () => {
  await env?.close();
});

/**
 * A mirror that answers every file whole in one chunk, then `0\r\n`, then a 100-byte
 * trailer line every 200 ms for as long as the connection stays open: each line is a read,
 * and no silence ever reaches a body timeout.
 */
async function startTrailerDripMirror(): Promise<{ url: string; close(): Promise<void> }> {
  const { pki } = env;
  const sockets = new Set<tls.TLSSocket>();
  const server = tls.createServer({ key: pki.keyPem, cert: pki.certPem }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let head = "";
    const onData = (chunk: Buffer): void => {
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      socket.off("data", onData);
      void drip(socket, /^GET \/release\/(\S+) /.exec(head)?.[1]);
    };
    socket.on("data", onData);
  });
  async function drip(socket: tls.TLSSocket, path: string | undefined): Promise<void> {
    const file = await readFile(join(env.fx.dir, ...decodeURIComponent(path ?? "none").split("/"))).catch(() => null);
    if (!file) {
      socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    socket.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    socket.write(`${file.length.toString(16)}\r\n`);
    socket.write(file);
    socket.write("\r\n0\r\n");
    const line = `X-Pad: ${"p".repeat(91)}\r\n`; // 100 bytes with its CRLF
    while (!socket.destroyed) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (!socket.destroyed) socket.write(line);
    }
  }
  server.on("tlsClientError", () => {});
  await new Promise<void>((ready) => server.listen(0, "127.0.0.1", ready));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/release`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

describe("a source that drips trailer lines after the last chunk", () => {
  it("fails fast with `exhausted` instead of keeping the download pending", async () => {
    const drip = await startTrailerDripMirror();
    try {
      const mirror = { ...env.mirror, url: drip.url };
      // the manifest is first: every attempt at it ends at the trailer bound (HTTP1_PARSE), a
      // broken connection, so the retries run out; the default minimum rate is left as it is
      const error = await failure(download(env.fx, mirror, await env.dest(), { retry: { attempts: 1 } }));
      expect(error).toBeInstanceOf(ReleaseDownloadError);
      expect(error).toMatchObject({ reason: "exhausted", path: "payload/manifest.json", attempts: 2 });
    } finally {
      await drip.close();
    }
  }, 20_000);
});

describe("the minimum transfer rate (minSpeed)", () => {
  it("a body trickling below it is cut and retried, and the retries run out: `exhausted`, caused by a TimeoutError", async () => {
    const { mirror, fx } = env;
    // ~50 KB/s against a floor of 1 MB/s over 200 ms windows
    mirror.setFaults((r) => (r.path === TARGET ? { kind: "trickle", chunk: 1024, intervalMs: 20 } : undefined));
    mirror.log.length = 0;
    try {
      const error = await failure(
        download(fx, mirror, await env.dest(), {
          minSpeed: { bytesPerSecond: 1_000_000, windowMs: 200 },
          retry: { attempts: 2 },
        }),
      );
      expect(error).toBeInstanceOf(ReleaseDownloadError);
      expect(error).toMatchObject({ reason: "exhausted", path: TARGET, attempts: 3 });
      // each attempt brought new bytes, but bytes that slow are no progress
      const cause = (error as ReleaseDownloadError).cause;
      expect(cause).toBeInstanceOf(NetworkError);
      expect((cause as NetworkError).cause).toBeInstanceOf(TimeoutError);
      expect(mirror.log.filter((e) => e.path === TARGET)).toHaveLength(3);
    } finally {
      mirror.setFaults(undefined);
    }
  });

  it("a body slow but well above it arrives whole and verified", async () => {
    const { mirror, fx } = env;
    // 8 KiB every 20 ms (~400 KB/s) for about 1.5 s, against a floor of 2 KiB/s over 300 ms windows
    mirror.setFaults((r) => (r.path === TARGET ? { kind: "trickle", chunk: 8192, intervalMs: 20 } : undefined));
    try {
      const dir = await env.dest();
      await download(fx, mirror, dir, {
        minSpeed: { bytesPerSecond: 2048, windowMs: 300 },
        retry: { attempts: 1 },
      });
      expect((await readFile(join(dir, TARGET))).equals(fx.contents.get(TARGET)!)).toBe(true);
    } finally {
      mirror.setFaults(undefined);
    }
  });

  it("refuses a minSpeed that can never hold", async () => {
    const { mirror, fx } = env;
    for (const minSpeed of [{ bytesPerSecond: -1 }, { windowMs: 0 }, { bytesPerSecond: Number.NaN }]) {
      const error = await failure(download(fx, mirror, await env.dest(), { minSpeed }));
      expect(error).toMatchObject({ code: "INVALID_ARGUMENT" });
    }
  });
});
