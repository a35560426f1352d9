/**
 * A large file on several connections: closed ranges in segments, If-Range on each, the hash in
 * file order, each answer held to the range rules, a fall back to one connection when a
 * segment stumbles, and a SIGKILL that leaves a prefix a resume continues.
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReleaseDownloadError } from "../../src/errors/release.js";
import { ReleaseVerificationError, verifyReleaseDirectory } from "../../src/release/index.js";
import { RELEASE_TEST_HOOKS, type DownloadReleaseOptions } from "../../src/transport/download/index.js";
import { mirrorSource } from "../../src/transport/sources.js";
import type { MirrorFault, MirrorLogEntry, MirrorRequest } from "./helpers/mirror.js";
import { startMirroredRelease, type MirroredRelease } from "./helpers/mirrored-release.js";
import { countOverlap, download, downloadInChild, listTree } from "./helpers/run.js";

const BIG = "os/blobs/big";
const SIZE = 1024 * 1024 + 37;
const SEGMENT = 64 * 1024;

let env: MirroredRelease;

beforeAll(async () => {
  env = await startMirroredRelease({ [BIG]: SIZE, "sysext/small.raw": 5000 });
});

afterAll(async () => {
  await env?.close();
});

/** Options that put BIG on `connections` connections in 64 KiB segments. */
function parallel(connections = 3, extra: Partial<DownloadReleaseOptions> = {}): Partial<DownloadReleaseOptions> {
  return { connections, filesAtOnce: 1, ...extra, [RELEASE_TEST_HOOKS]: { segmentBytes: SEGMENT } } as never;
}

async function expectBig(dir: string): Promise<void> {
  expect((await readFile(join(dir, BIG))).equals(env.fx.contents.get(BIG)!)).toBe(true);
  await verifyReleaseDirectory(dir, { trustedKeys: [env.fx.keys[0]!.publicKeyPem], expectRelease: env.fx.release });
}

/** The [start, end] of each ranged request of BIG, in the order made. */
function ranges(log: MirrorLogEntry[]): Array<[number, number | undefined]> {
  return log
    .filter((e) => e.path === BIG && e.range)
    .map((e) => {
      const [, a, b] = /^bytes=(\d+)-(\d*)$/.exec(e.range!)!;
      return [Number(a), b === "" ? undefined : Number(b)];
    });
}

async function run(
  faults: ((r: MirrorRequest) => MirrorFault | MirrorFault[] | undefined) | undefined,
  options: Partial<DownloadReleaseOptions> = parallel(),
): Promise<{ dir: string; log: MirrorLogEntry[]; outcome: unknown }> {
  const dir = await env.dest();
  env.mirror.setFaults(faults && ((r) => (r.path === BIG ? faults(r) : undefined)));
  env.mirror.log.length = 0;
  let outcome: unknown;
  try {
    outcome = await download(env.fx, env.mirror, dir, options);
  } catch (error) {
    outcome = error;
  } finally {
    env.mirror.setFaults(undefined);
  }
  return { dir, log: env.mirror.log.filter((e) => e.path === BIG), outcome };
}

describe("a large file on several connections", () => {
  it("probes one segment, then fetches the rest in closed ranges with If-Range, several at once, hashed in order", async () => {
    const inner = mirrorSource(env.mirror.url, { ca: env.mirror.caPem });
    // The segments after the probe (which goes alone, with no ETag to send yet) are counted.
    const counting = countOverlap(inner, 3, (path, request) => path === BIG && request.ifRange !== undefined);
    const { dir, log, outcome } = await run(undefined, parallel(3, { source: counting.source }));
    await inner.close!();
    if (outcome instanceof Error) throw outcome;
    await expectBig(dir);
    expect(counting.peak()).toBe(3);
    const asked = ranges(log);
    // the probe: one segment without If-Range (no ETag yet); then every segment with it
    expect(log[0]).toMatchObject({ range: `bytes=0-${SEGMENT - 1}`, ifRange: undefined, status: 206 });
    const etag = log[0]!.ifRange ?? log[1]!.ifRange;
    expect(etag).toMatch(/^"/);
    expect(log.slice(1).every((e) => e.ifRange === etag && e.status === 206)).toBe(true);
    // closed ranges, exactly covering the file once
    const sorted = [...asked].sort((a, b) => a[0] - b[0]);
    let next = 0;
    for (const [start, end] of sorted) {
      expect(start).toBe(next);
      expect(end).toBeDefined();
      expect(end! - start + 1).toBeLessThanOrEqual(SEGMENT);
      next = end! + 1;
    }
    expect(next).toBe(SIZE);
    // nothing fetched twice
    const result = outcome as { files: Array<{ path: string; bytesFetched: number }> };
    expect(result.files.find((f) => f.path === BIG)!.bytesFetched).toBe(SIZE);
  });

  it("one connection by default, whatever the size; `connections` asks for more", async () => {
    const one = await run(undefined, { filesAtOnce: 1, [RELEASE_TEST_HOOKS]: { segmentBytes: SEGMENT } } as never);
    if (one.outcome instanceof Error) throw one.outcome;
    await expectBig(one.dir);
    expect(one.log.map((e) => e.range)).toEqual([undefined]);
    const two = await run(undefined, parallel(2));
    if (two.outcome instanceof Error) throw two.outcome;
    await expectBig(two.dir);
    expect(ranges(two.log).length).toBeGreaterThan(2);
    expect(ranges(two.log).every(([, end]) => end !== undefined)).toBe(true);
  });
});

type Outcome = { ok: true } | { rule: string } | { reason: string };

interface Case {
  name: string;
  /** Faults for requests of BIG; `nth` 0 is the probe, the others are segments (several at once). */
  faults: (r: MirrorRequest) => MirrorFault | MirrorFault[] | undefined;
  expect: Outcome;
  check?: (log: MirrorLogEntry[], outcome: unknown) => void;
}

const junk = Buffer.alloc(SIZE, 0x5a);
const segment = (n: number) => (r: MirrorRequest) => r.nth === n;

const CASES: Case[] = [
  {
    name: "a segment's Content-Range shifted",
    faults: (r) => (segment(3)(r) ? { kind: "shift-range", by: 1 } : undefined),
    expect: { reason: "bad-response" },
  },
  {
    name: "a truthful 206 for another range than the segment asked",
    faults: (r) => (segment(3)(r) ? { kind: "range-from", by: -1000 } : undefined),
    expect: { reason: "bad-response" },
  },
  {
    name: "a segment's Content-Range with another total",
    faults: (r) => (segment(2)(r) ? { kind: "range-total", total: SIZE + 1 } : undefined),
    expect: { reason: "bad-response" },
  },
  {
    name: "a segment's Content-Length that disagrees with its Content-Range",
    faults: (r) => (segment(2)(r) ? { kind: "content-length", value: 5 } : undefined),
    expect: { reason: "bad-response" },
  },
  {
    name: "a segment answered past the END asked (the source ignores it)",
    faults: (r) => (segment(2)(r) ? { kind: "open-range" } : undefined),
    expect: { reason: "bad-response" },
  },
  {
    name: "bytes past a segment's Content-Range end (chunked)",
    faults: (r) => (segment(2)(r) ? { kind: "extra", bytes: 1 } : undefined),
    expect: { reason: "bad-response" },
  },
  {
    name: "bytes past the declared size in the last segment",
    faults: (r) => (r.range?.endsWith(`-${SIZE - 1}`) ? { kind: "extra", bytes: 1 } : undefined),
    expect: { rule: "size" },
  },
  {
    name: "a gzip segment despite Accept-Encoding: identity",
    faults: (r) => (segment(2)(r) ? { kind: "gzip" } : undefined),
    expect: { reason: "bad-response" },
  },
  {
    name: "a segment the source refuses (404)",
    faults: (r) => (segment(2)(r) ? { kind: "status", status: 404 } : undefined),
    expect: { reason: "refused" },
  },
  {
    name: "the ETag changes mid-download: one connection from there, If-Range brings the whole file",
    faults: (r) => (r.nth >= 3 ? { kind: "etag", value: '"v2"' } : undefined),
    expect: { ok: true },
    check: (log) => expect(log.some((e) => e.status === 200)).toBe(true),
  },
  {
    name: "the file changes to other content mid-download",
    faults: (r) =>
      r.nth >= 3
        ? [
            { kind: "etag", value: '"v2"' },
            { kind: "replace", body: junk },
          ]
        : undefined,
    expect: { rule: "hash" },
  },
  {
    name: "a segment reset mid-way: one connection from there, resumed where the bytes in order end",
    faults: (r) => (segment(2)(r) ? { kind: "reset", after: 1000 } : undefined),
    expect: { ok: true },
    check: (log) => expect(log.at(-1)!.range).toMatch(/^bytes=\d+-$/),
  },
  {
    name: "a mirror that refuses a second connection (503): one connection from there",
    faults: (r) => (r.nth >= 1 && r.nth <= 3 ? { kind: "status", status: 503, retryAfter: "0" } : undefined),
    expect: { ok: true },
  },
  {
    name: "ranges ignored after the probe (200): one connection, the whole file",
    faults: (r) => (r.nth >= 1 ? { kind: "ignore-range" } : undefined),
    expect: { ok: true },
  },
  {
    name: "416 for a segment inside the file: one connection from there",
    faults: (r) => (segment(2)(r) ? { kind: "416" } : undefined),
    expect: { ok: true },
  },
  {
    name: "right sizes, wrong bytes in one segment: one clean restart, then right",
    faults: (r) => (segment(2)(r) ? { kind: "replace", body: junk } : undefined),
    expect: { ok: true },
  },
  {
    name: "wrong bytes in every segment: the hash refuses it",
    faults: (r) => (r.nth >= 1 ? { kind: "replace", body: junk } : undefined),
    expect: { rule: "hash" },
  },
  {
    name: "a trickling segment",
    faults: (r) => (segment(2)(r) ? { kind: "trickle", chunk: 4096, intervalMs: 1 } : undefined),
    expect: { ok: true },
  },
];

describe("adversarial: a source that lies to a download on several connections", () => {
  it.each(CASES.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const { dir, log, outcome } = await run(c.faults);
    if ("ok" in c.expect) {
      if (outcome instanceof Error) throw outcome;
      await expectBig(dir);
    } else {
      if ("rule" in c.expect) {
        expect(outcome).toBeInstanceOf(ReleaseVerificationError);
        expect(outcome).toMatchObject({ rule: c.expect.rule, path: BIG });
      } else {
        expect(outcome).toBeInstanceOf(ReleaseDownloadError);
        expect(outcome).toMatchObject({ reason: c.expect.reason });
      }
      const tree = await listTree(dir);
      expect(tree).not.toContain("payload/manifest.json");
      expect(tree).not.toContain(BIG);
      // what stays for a resume is a prefix of the file, never a hole or bytes of a lie
      const partial = await readFile(join(dir, `${BIG}.partial`)).catch(() => Buffer.alloc(0));
      expect(partial.equals(env.fx.contents.get(BIG)!.subarray(0, partial.length))).toBe(true);
    }
    c.check?.(log, outcome);
  });

  it("retries run out on one connection after the fall back, as on one connection from the start", async () => {
    const { outcome } = await run(
      (r) => (r.nth >= 1 ? { kind: "status", status: 503, retryAfter: "0" } : undefined),
      parallel(3, { retry: { attempts: 2 } }),
    );
    expect(outcome).toBeInstanceOf(ReleaseDownloadError);
    expect(outcome).toMatchObject({ reason: "exhausted", status: 503 });
  });
});

describe("killed mid-download on several connections", () => {
  it("the .partial is a prefix of the file; the resumed run fetches only what is missing", async () => {
    const dir = await env.dest();
    env.mirror.setFaults((r) => (r.path === BIG ? { kind: "trickle", chunk: 8 * 1024, intervalMs: 15 } : undefined));
    const { signal, stderr } = await downloadInChild(
      {
        url: env.mirror.url,
        ca: env.mirror.caPem,
        destDir: dir,
        release: env.fx.release,
        key: env.fx.keys[0]!.publicKeyPem,
        connections: 3,
        segmentBytes: SEGMENT,
      },
      SIZE / 2,
    );
    env.mirror.setFaults(undefined);
    expect(signal, stderr).toBe("SIGKILL");
    // several connections were at work when it died
    const killedLog = env.mirror.log.filter((e) => e.path === BIG);
    expect(killedLog.filter((e) => e.ifRange !== undefined).length).toBeGreaterThan(1);
    const partial = await readFile(join(dir, `${BIG}.partial`));
    expect(partial.length).toBeGreaterThan(SIZE / 4);
    expect(partial.length).toBeLessThan(SIZE);
    expect(partial.equals(env.fx.contents.get(BIG)!.subarray(0, partial.length))).toBe(true);

    env.mirror.log.length = 0;
    const result = await download(env.fx, env.mirror, dir, parallel(3));
    await expectBig(dir);
    const fetched = result.files.find((f) => f.path === BIG)!.bytesFetched;
    expect(fetched).toBe(SIZE - partial.length);
    expect(ranges(env.mirror.log)[0]![0]).toBe(partial.length);
    expect((await stat(join(dir, BIG))).size).toBe(SIZE);
  }, 30_000);
});
