import { constants as fsc } from "node:fs";
import { mkdir, open, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { inspect } from "node:util";
import { Client } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StratumApiError } from "../../src/errors/index.js";
import { ReleaseArgumentError, verifyReleaseDirectory } from "../../src/release/index.js";
import { ReleaseDownloadError } from "../../src/errors/release.js";
import { dispatcherSource, mirrorSource, type ReleaseSource } from "../../src/transport/sources.js";
import { downloadReleaseFrom, type ReleaseProgress } from "../../src/transport/download/index.js";
import { startMirror, type Mirror } from "./helpers/mirror.js";
import { startMirroredRelease, type MirroredRelease } from "./helpers/mirrored-release.js";
import { makeTestPki, type TestPki } from "./helpers/pki.js";
import type { Fixture } from "./helpers/release.js";
import { RELEASE_TEST_HOOKS, type ReleaseTestHooks } from "../../src/transport/download/index.js";
import { countOverlap, download, failure, listTree } from "./helpers/run.js";

let pki: TestPki;
let fx: Fixture;
let mirror: Mirror;
let env: MirroredRelease;

const FILES = {
  "os/blobs/sha256-1": 700_000,
  "os/blobs/sha256-2": 300_000,
  "os/blobs/deep/er/sha256-3": 123_457,
  "sysext/kubernetes.raw": 2_500_000,
  "sysext/empty.conf": 0,
};

beforeAll(async () => {
  env = await startMirroredRelease(FILES);
  ({ pki, fx, mirror } = env);
});

afterAll(async () => {
  await env?.close();
});

const dest = (): Promise<string> => env.dest();

async function expectRelease(dir: string): Promise<void> {
  for (const [path, content] of fx.contents) expect((await readFile(join(dir, path))).equals(content)).toBe(true);
  // exactly the release: no .partial left, the manifest in place, everything verifies
  await verifyReleaseDirectory(dir, { trustedKeys: [fx.keys[0]!.publicKeyPem], expectRelease: fx.release });
}

/** Whether the file system of `dir` takes O_DIRECT (Linux ext4, xfs…; not older tmpfs). */
async function directIoWorks(dir: string): Promise<boolean> {
  if (process.platform !== "linux") return false;
  const probe = join(dir, ".direct-probe");
  try {
    await (await open(probe, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_DIRECT)).close();
    return true;
  } catch {
    return false;
  } finally {
    await rm(probe, { force: true });
  }
}

describe("downloadReleaseFrom from a mirror", () => {
  it("writes with direct I/O where the file system takes it, hashes in the worker, and resumes a .partial cut mid-block", async () => {
    const dir = await dest();
    const path = "sysext/kubernetes.raw";
    await mkdir(join(dir, "sysext"), { recursive: true });
    // a crash leaves a prefix that ends anywhere; direct I/O writes whole blocks from a block boundary
    await writeFile(join(dir, `${path}.partial`), fx.contents.get(path)!.subarray(0, 1_000_003));
    const how = new Map<string, { direct: boolean; hashInWorker: boolean }>();
    const hooks: ReleaseTestHooks = { onWriter: (p, h) => how.set(p, h) };
    mirror.log.length = 0;
    const result = await download(fx, mirror, dir, { [RELEASE_TEST_HOOKS]: hooks } as never);
    await expectRelease(dir);
    expect(mirror.log.filter((e) => e.path === path).map((e) => e.range)).toEqual(["bytes=1000003-"]);
    expect(result.files.find((f) => f.path === path)!.bytesFetched).toBe(FILES[path] - 1_000_003);
    const direct = await directIoWorks(dir);
    console.info(`direct I/O ${direct ? "taken" : "refused"} by the file system of ${dir}`);
    expect([...how.keys()].sort()).toEqual(Object.keys(FILES).sort());
    for (const seen of how.values()) expect(seen).toEqual({ direct, hashInWorker: true });
  });

  it("fetches the manifest first, then every file, verified, and writes the manifest last", async () => {
    mirror.log.length = 0;
    const dir = await dest();
    const events: ReleaseProgress[] = [];
    const result = await download(fx, mirror, dir, { onProgress: (p) => events.push(p) });
    await expectRelease(dir);
    expect(result.files.map((f) => f.path)).toEqual(fx.manifest.files.map((f) => f.path));
    expect(result.files.every((f) => f.location.startsWith(dir))).toBe(true);
    expect(result.signedBy).toEqual([fx.keys[0]!.keyid]);
    const total = Object.values(FILES).reduce((a, b) => a + b, 0);
    expect(result.bytesFetched).toBeGreaterThanOrEqual(total);
    expect(mirror.log[0]!.path).toBe("payload/manifest.json");
    expect(mirror.log.every((r) => r.acceptEncoding === "identity")).toBe(true);
    // a zero-byte file needs no request
    expect(mirror.log.some((r) => r.path === "sysext/empty.conf")).toBe(false);
    const last = events.at(-1)!;
    expect(last).toMatchObject({ bytesDone: total, bytesTotal: total, filesDone: 5, filesTotal: 5 });
    expect(
      events
        .filter((e) => e.file.state === "verified")
        .map((e) => e.file.path)
        .sort(),
    ).toEqual(Object.keys(FILES).sort());
    for (let i = 1; i < events.length; i++)
      expect(events[i]!.bytesFetched).toBeGreaterThanOrEqual(events[i - 1]!.bytesFetched);
  });

  it("keeps at most `filesAtOnce` files in flight, through any ReleaseSource", async () => {
    const inner = mirrorSource(mirror.url, { ca: mirror.caPem });
    const counting = countOverlap(inner, 2, (path) => path !== "payload/manifest.json");
    const dir = await dest();
    await download(fx, mirror, dir, { source: counting.source, filesAtOnce: 2 });
    await inner.close!();
    await expectRelease(dir);
    expect(counting.peak()).toBe(2);
  });

  it("accepts a source whose bodies are web ReadableStreams", async () => {
    const inner = mirrorSource(mirror.url, { ca: mirror.caPem });
    const web: ReleaseSource = {
      describe: () => "web streams",
      async fetch(path, request) {
        const response = await inner.fetch(path, request);
        return {
          ...response,
          body: Readable.toWeb(
            Readable.from(response.body as AsyncIterable<Uint8Array>),
          ) as unknown as ReadableStream<Uint8Array>,
        };
      },
    };
    const dir = await dest();
    await download(fx, mirror, dir, { source: web });
    await inner.close!();
    await expectRelease(dir);
  });

  it("trusts files of an earlier run only after re-hashing them, and replaces a wrong one", async () => {
    const dir = await dest();
    await download(fx, mirror, dir);
    const wrong = Buffer.from(fx.contents.get("os/blobs/sha256-2")!);
    wrong[0] = wrong[0]! ^ 0xff;
    await writeFile(join(dir, "os/blobs/sha256-2"), wrong);
    mirror.log.length = 0;
    const again = await download(fx, mirror, dir);
    await expectRelease(dir);
    expect(mirror.log.map((r) => r.path).sort()).toEqual(["os/blobs/sha256-2", "payload/manifest.json"]);
    expect(again.files.find((f) => f.path === "sysext/kubernetes.raw")!.bytesFetched).toBe(0);
  });

  it("re-throws an abort as is, leaves the .partial, and a later run fetches only the rest", async () => {
    const dir = await dest();
    const controller = new AbortController();
    const reason = new Error("stop now");
    mirror.setFaults((r) =>
      r.path === "sysext/kubernetes.raw" ? { kind: "trickle", chunk: 64 * 1024, intervalMs: 10 } : undefined,
    );
    const error = await failure(
      download(fx, mirror, dir, {
        filesAtOnce: 1,
        signal: controller.signal,
        onProgress: (p) => {
          if (p.file.path === "sysext/kubernetes.raw" && p.file.bytesDone > 1_000_000) controller.abort(reason);
        },
      }),
    );
    mirror.setFaults(undefined);
    expect(error).toBe(reason);
    const tree = await listTree(dir);
    expect(tree).toContain("sysext/kubernetes.raw.partial");
    expect(tree).not.toContain("sysext/kubernetes.raw");
    expect(tree).not.toContain("payload/manifest.json");
    const partialSize = (await readFile(join(dir, "sysext/kubernetes.raw.partial"))).length;
    expect(partialSize).toBeGreaterThan(900_000);
    mirror.log.length = 0;
    const result = await download(fx, mirror, dir);
    await expectRelease(dir);
    const resumed = mirror.log.find((r) => r.path === "sysext/kubernetes.raw")!;
    expect(resumed.range).toBe(`bytes=${partialSize}-`);
    expect(resumed.status).toBe(206);
    expect(result.files.find((f) => f.path === "sysext/kubernetes.raw")!.bytesFetched).toBe(2_500_000 - partialSize);
  });

  it("rejects at once when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(download(fx, mirror, await dest(), { signal: controller.signal })).rejects.toMatchObject({
      name: "AbortError",
    });
  });

  it("honours Retry-After on 503 RELEASE_BUSY", async () => {
    mirror.setFaults((r) =>
      r.path === "os/blobs/sha256-2" && r.nth === 0 ? { kind: "status", status: 503, retryAfter: "1" } : undefined,
    );
    const started = Date.now();
    const dir = await dest();
    await download(fx, mirror, dir, { filesAtOnce: 5 });
    mirror.setFaults(undefined);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    await expectRelease(dir);
  });

  it("waits no longer than retry.maxRetryAfterMs, whatever Retry-After asks", async () => {
    mirror.setFaults((r) =>
      r.path === "os/blobs/sha256-2" && r.nth === 0 ? { kind: "status", status: 503, retryAfter: "3600" } : undefined,
    );
    const dir = await dest();
    // an hour asked, 10 ms allowed: the download finishes instead of sleeping past the test's timeout
    await download(fx, mirror, dir, { retry: { maxRetryAfterMs: 10 } });
    mirror.setFaults(undefined);
    await expectRelease(dir);
  });

  it("refuses a 404 without retrying, with the status and the problem", async () => {
    mirror.setFaults((r) =>
      r.path === "os/blobs/sha256-1" ? { kind: "status", status: 409, code: "UPGRADE_IN_PROGRESS" } : undefined,
    );
    mirror.log.length = 0;
    const error = await failure(download(fx, mirror, await dest()));
    mirror.setFaults(undefined);
    expect(error).toBeInstanceOf(ReleaseDownloadError);
    expect(error).toMatchObject({ reason: "refused", status: 409, path: "os/blobs/sha256-1" });
    expect((error as ReleaseDownloadError).cause).toBeInstanceOf(StratumApiError);
    expect(((error as ReleaseDownloadError).cause as StratumApiError).code).toBe("UPGRADE_IN_PROGRESS");
    expect(mirror.log.filter((r) => r.path === "os/blobs/sha256-1")).toHaveLength(1);
  });

  it("carries the refusal's problem as a StratumApiError, its sensitive details redacted", async () => {
    const secret = "node-key-that-must-not-leak";
    mirror.setFaults((r) =>
      r.path === "os/blobs/sha256-2"
        ? { kind: "status", status: 403, code: "FORBIDDEN", details: { nodeKey: secret, reason: "not yours" } }
        : undefined,
    );
    const error = await failure(download(fx, mirror, await dest()));
    mirror.setFaults(undefined);
    expect(error).toMatchObject({ reason: "refused", status: 403, path: "os/blobs/sha256-2" });
    const cause = (error as ReleaseDownloadError).cause as StratumApiError;
    expect(cause).toBeInstanceOf(StratumApiError);
    expect(cause).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(cause.details).toEqual({ nodeKey: "[redacted]", reason: "not yours" });
    expect(inspect(error, { depth: 10 })).not.toContain(secret);
  });

  it("does not trust a mirror whose certificate does not chain to the CA given", async () => {
    const other = await makeTestPki();
    const error = await failure(
      downloadReleaseFrom({
        upgrade: { to: fx.release, source: mirror.url },
        mirror: { ca: other.caPem },
        destDir: await dest(),
        trustedKeys: [fx.keys[0]!.publicKeyPem],
        retry: { baseMs: 1 },
      }),
    );
    expect(error).toMatchObject({ reason: "tls", code: "RELEASE_DOWNLOAD_FAILED" });
  });

  it("works over any undici Dispatcher with a base path (the founder's shape)", async () => {
    const served = await startMirror({ root: fx.dir, pki, prefix: "/v1/join/registrations/jn-123/release" });
    const client = new Client(`https://127.0.0.1:${served.port}`, { connect: { ca: served.caPem } });
    try {
      const dir = await dest();
      const result = await downloadReleaseFrom({
        upgrade: { from: "0.5.0", to: fx.release, served: true },
        source: dispatcherSource(client, "/v1/join/registrations/jn-123/release"),
        destDir: dir,
        trustedKeys: [fx.keys[0]!.publicKey],
      });
      expect(result.source).toBe("/v1/join/registrations/jn-123/release/");
      await expectRelease(dir);
      expect(served.log[0]!.path).toBe("payload/manifest.json");
    } finally {
      await client.close();
      await served.close();
    }
  });

  it("refuses impossible options before any request", async () => {
    const base = { destDir: await dest(), trustedKeys: [fx.keys[0]!.publicKeyPem] };
    await expect(downloadReleaseFrom({ ...base, upgrade: { to: "0.6.0", served: true } })).rejects.toBeInstanceOf(
      ReleaseArgumentError,
    );
    await expect(
      downloadReleaseFrom({ ...base, upgrade: { to: "0.6.0", source: "http://mirror.example/r" } }),
    ).rejects.toBeInstanceOf(ReleaseArgumentError);
    await expect(
      downloadReleaseFrom({ ...base, upgrade: { to: "0.6.0", source: mirror.url }, filesAtOnce: 0 }),
    ).rejects.toThrow(/filesAtOnce is a whole number/);
    // the former name is still read, and is refused when it contradicts the new one
    await expect(
      downloadReleaseFrom({ ...base, upgrade: { to: "0.6.0", source: mirror.url }, concurrency: 0 }),
    ).rejects.toThrow(/filesAtOnce is a whole number/);
    await expect(
      downloadReleaseFrom({ ...base, upgrade: { to: "0.6.0", source: mirror.url }, filesAtOnce: 2, concurrency: 3 }),
    ).rejects.toThrow(/filesAtOnce and its former name concurrency differ/);
    mirror.log.length = 0;
    await expect(
      downloadReleaseFrom({
        ...base,
        trustedKeys: [],
        upgrade: { to: "0.6.0", source: mirror.url },
        mirror: { ca: mirror.caPem },
      }),
    ).rejects.toBeInstanceOf(ReleaseArgumentError);
    await expect(
      downloadReleaseFrom({
        ...base,
        threshold: 2,
        upgrade: { to: "0.6.0", source: mirror.url },
        mirror: { ca: mirror.caPem },
      }),
    ).rejects.toBeInstanceOf(ReleaseArgumentError);
    expect(mirror.log).toHaveLength(0);
  });

  it("writes nothing through a file that is in the way of a directory", async () => {
    const dir = await dest();
    await mkdir(join(dir, "os"), { recursive: true });
    await writeFile(join(dir, "os/blobs"), "not a directory");
    await expect(download(fx, mirror, dir)).rejects.toMatchObject({ reason: "unsafe-staging" });
  });
});

describe("the manifest in the destination", () => {
  it("is removed before any file is touched and written back only when every file verified", async () => {
    const dir = await dest();
    await download(fx, mirror, dir);
    expect(await listTree(dir)).toContain("payload/manifest.json");
    mirror.setFaults((r) => (r.path === "os/blobs/sha256-1" ? { kind: "status", status: 404 } : undefined));
    await writeFile(join(dir, "os/blobs/sha256-1"), "damaged");
    try {
      await expect(download(fx, mirror, dir)).rejects.toMatchObject({ reason: "refused" });
    } finally {
      mirror.setFaults(undefined);
    }
    const tree = await listTree(dir);
    expect(tree).not.toContain("payload/manifest.json");
    expect(tree).not.toContain("os/blobs/sha256-1");
  });
});
