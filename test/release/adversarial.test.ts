/**
 * The adversarial suite: every case runs downloadRelease against the fault-injecting mirror
 * and must end in a clear, typed error or in the correct file, never a wrong file in place.
 */
import { randomBytes } from "node:crypto";
import { link, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReleaseDownloadError, type ReleaseDownloadFailure } from "../../src/errors/release.js";
import {
  ReleaseVerificationError,
  verifyReleaseDirectory,
  type ReleaseVerificationRule,
} from "../../src/release/index.js";
import { type DownloadedRelease, type DownloadReleaseOptions } from "../../src/transport/download/index.js";
import { type StratumApiError } from "../../src/errors/index.js";
import { MANIFEST_CASES, caseKeys, type CaseKeys } from "./helpers/manifest-cases.js";
import {
  startMirror,
  type Mirror,
  type MirrorFault,
  type MirrorLogEntry,
  type MirrorRequest,
} from "./helpers/mirror.js";
import { startMirroredRelease, type MirroredRelease } from "./helpers/mirrored-release.js";
import type { TestPki } from "./helpers/pki.js";
import { makeRelease, removeDir, tempDir, writeEnvelope, type Fixture } from "./helpers/release.js";
import { download, failure, listTree } from "./helpers/run.js";

const TARGET = "os/blobs/target";
const SIZE = 600_000;
const HALF = 300_000;

let pki: TestPki;
let fx: Fixture;
let mirror: Mirror;
let env: MirroredRelease;

beforeAll(async () => {
  env = await startMirroredRelease({ [TARGET]: SIZE, "sysext/other.raw": 10_000 });
  ({ pki, fx, mirror } = env);
});

afterAll(async () => {
  await env?.close();
});

const dest = (): Promise<string> => env.dest();

type Outcome = { ok: true } | { rule: ReleaseVerificationRule } | { reason: ReleaseDownloadFailure };

interface Case {
  name: string;
  /** Faults for requests of the target file. */
  faults: (r: MirrorRequest) => MirrorFault | MirrorFault[] | undefined;
  expect: Outcome;
  prepare?: (dir: string) => Promise<void>;
  options?: Partial<DownloadReleaseOptions>;
  check?: (log: MirrorLogEntry[], outcome: DownloadedRelease | unknown, dir: string) => void | Promise<void>;
}

const junk = randomBytes(SIZE);
const resetFirst = (then: (r: MirrorRequest) => MirrorFault | MirrorFault[] | undefined) => (r: MirrorRequest) =>
  r.nth === 0 ? ({ kind: "reset", after: HALF } as const) : then(r);

const CASES: Record<string, Case[]> = {
  sizes: [
    {
      name: "an endless body is cut off past the declared size",
      faults: () => ({ kind: "endless" }),
      expect: { rule: "size" },
      check: (log) => expect(log[0]!.bytesSent).toBeLessThan(SIZE + 64 * 1024 * 1024),
    },
    { name: "one byte extra (chunked)", faults: () => ({ kind: "extra", bytes: 1 }), expect: { rule: "size" } },
    {
      name: "one byte extra, declared in Content-Length",
      faults: () => ({ kind: "content-length", value: SIZE + 1 }),
      expect: { reason: "bad-response" },
    },
    {
      name: "truncated once, then resumed from where it stopped",
      faults: (r) => (r.nth === 0 ? { kind: "truncate", at: 200_000 } : undefined),
      expect: { ok: true },
      check: (log) => expect(log.map((e) => e.range)).toEqual([undefined, "bytes=200000-"]),
    },
    {
      name: "truncated on every request: retries run out",
      faults: () => ({ kind: "truncate", at: SIZE - 10 }),
      options: { retry: { attempts: 3 } },
      expect: { reason: "exhausted" },
      check: async (_log, _error, dir) =>
        expect((await readFile(join(dir, `${TARGET}.partial`))).length).toBe(SIZE - 10),
    },
    {
      name: "the right size with the wrong hash",
      faults: () => ({ kind: "replace", body: junk }),
      expect: { rule: "hash" },
    },
    {
      name: "a wrong prefix spliced to a right tail: one restart from zero, then right",
      faults: (r) =>
        r.nth === 0
          ? [
              { kind: "replace", body: junk },
              { kind: "reset", after: HALF },
            ]
          : undefined,
      expect: { ok: true },
      check: (log) => expect(log.map((e) => e.range)).toEqual([undefined, `bytes=${HALF}-`, undefined]),
    },
  ],
  http: [
    {
      name: "Range ignored: 200 on resume restarts from zero",
      faults: resetFirst(() => ({ kind: "ignore-range" })),
      expect: { ok: true },
      check: (log) =>
        expect(log.map((e) => [e.range, e.status])).toEqual([
          [undefined, 200],
          [`bytes=${HALF}-`, 200],
        ]),
    },
    {
      name: "a Content-Range shifted forwards",
      faults: resetFirst(() => ({ kind: "shift-range", by: 1 })),
      expect: { reason: "bad-response" },
    },
    {
      name: "a Content-Range shifted backwards",
      faults: resetFirst(() => ({ kind: "shift-range", by: -1 })),
      expect: { reason: "bad-response" },
    },
    {
      name: "a truthful 206 for another range than the one asked",
      faults: resetFirst(() => ({ kind: "range-from", by: -1000 })),
      expect: { reason: "bad-response" },
    },
    {
      name: "a truthful 206 starting later than the offset asked for",
      faults: resetFirst(() => ({ kind: "range-from", by: 1000 })),
      expect: { reason: "bad-response" },
      check: (log) =>
        expect(log.map((e) => [e.range, e.status])).toEqual([
          [undefined, 200],
          [`bytes=${HALF}-`, 206],
        ]),
    },
    {
      name: "a 206 to a request that asked for no range is refused, even labelled truthfully",
      faults: () => ({ kind: "partial-whole" }),
      expect: { reason: "bad-response" },
      check: (log, error) => {
        expect(log.map((e) => [e.range, e.status])).toEqual([[undefined, 206]]);
        expect((error as Error).message).toContain("answered 206 to a request without Range");
      },
    },
    {
      name: "a Content-Range ending past the file's last byte is refused on one connection",
      faults: resetFirst(() => ({ kind: "range-end", by: 1 })),
      expect: { reason: "bad-response" },
      check: (log, error) => {
        expect(log.map((e) => [e.range, e.status])).toEqual([
          [undefined, 200],
          [`bytes=${HALF}-`, 206],
        ]);
        expect((error as Error).message).toContain(`Content-Range "bytes ${HALF}-${SIZE}/${SIZE}"`);
      },
    },
    {
      name: "a Content-Range with another total",
      faults: resetFirst(() => ({ kind: "range-total", total: SIZE + 1 })),
      expect: { reason: "bad-response" },
    },
    {
      name: "a Content-Length mismatch on a 200",
      faults: () => ({ kind: "content-length", value: SIZE - 1 }),
      expect: { reason: "bad-response" },
    },
    {
      name: "a Content-Length mismatch on a 206",
      faults: resetFirst(() => ({ kind: "content-length", value: 5 })),
      expect: { reason: "bad-response" },
    },
    {
      name: "the ETag changes mid-download: If-Range brings the whole file",
      faults: (r) =>
        r.nth === 0
          ? [
              { kind: "etag", value: '"v1"' },
              { kind: "reset", after: HALF },
            ]
          : { kind: "etag", value: '"v2"' },
      expect: { ok: true },
      check: (log) => {
        expect(log[1]).toMatchObject({ range: `bytes=${HALF}-`, ifRange: '"v1"', status: 200 });
      },
    },
    {
      name: "the ETag changes and the source ignores If-Range: restart from zero",
      faults: (r) =>
        r.nth === 0
          ? [
              { kind: "etag", value: '"v1"' },
              { kind: "reset", after: HALF },
            ]
          : [{ kind: "etag", value: '"v2"' }, { kind: "ignore-if-range" }],
      expect: { ok: true },
      check: (log) =>
        expect(log.map((e) => [e.range, e.status])).toEqual([
          [undefined, 200],
          [`bytes=${HALF}-`, 206],
          [undefined, 200],
        ]),
    },
    {
      name: "the file changes on the mirror mid-download to other content",
      faults: (r) =>
        r.nth === 0
          ? [
              { kind: "etag", value: '"v1"' },
              { kind: "reset", after: HALF },
            ]
          : [
              { kind: "etag", value: '"v2"' },
              { kind: "replace", body: junk },
            ],
      expect: { rule: "hash" },
    },
    {
      name: "416 at the end: a complete .partial needs no request",
      prepare: async (dir) => {
        await mkdir(join(dir, "os/blobs"), { recursive: true });
        await writeFile(join(dir, `${TARGET}.partial`), fx.contents.get(TARGET)!);
      },
      faults: () => ({ kind: "416" }),
      expect: { ok: true },
      check: (log) => expect(log).toHaveLength(0),
    },
    {
      name: "416 for a range inside a file of the right size: restart from zero",
      faults: (r) => (r.nth === 0 ? { kind: "reset", after: HALF } : r.nth === 1 ? { kind: "416" } : undefined),
      expect: { ok: true },
      check: (log) =>
        expect(log.map((e) => [e.range, e.status])).toEqual([
          [undefined, 200],
          [`bytes=${HALF}-`, 416],
          [undefined, 200],
        ]),
    },
    {
      name: "416 naming another size",
      faults: resetFirst(() => ({ kind: "416", total: 1000 })),
      expect: { reason: "bad-response" },
    },
    {
      name: "gzip encoding despite Accept-Encoding: identity",
      faults: () => ({ kind: "gzip" }),
      expect: { reason: "bad-response" },
      check: (log) => expect(log[0]!.acceptEncoding).toBe("identity"),
    },
    {
      name: "gzip encoding, chunked (no length to give it away)",
      faults: () => ({ kind: "gzip", chunked: true }),
      expect: { reason: "bad-response" },
    },
    {
      name: "a 503 storm that passes",
      faults: (r) => (r.nth < 6 ? { kind: "status", status: 503, retryAfter: "0" } : undefined),
      expect: { ok: true },
      check: (log) => expect(log.map((e) => e.status)).toEqual([503, 503, 503, 503, 503, 503, 200]),
    },
    {
      name: "a 503 storm that does not end: RELEASE_BUSY, retries exhausted",
      faults: () => ({ kind: "status", status: 503, retryAfter: "0" }),
      options: { retry: { attempts: 3 } },
      expect: { reason: "exhausted" },
      check: (log, error) => {
        expect(log).toHaveLength(4);
        expect(error).toMatchObject({ status: 503, attempts: 4 });
        expect(((error as ReleaseDownloadError).cause as StratumApiError).code).toBe("RELEASE_BUSY");
      },
    },
    {
      name: "429 then fine",
      faults: (r) => (r.nth < 2 ? { kind: "status", status: 429, retryAfter: "0" } : undefined),
      expect: { ok: true },
    },
    {
      name: "500 and 502 then fine",
      faults: (r) => (r.nth < 2 ? { kind: "status", status: 500 + 2 * r.nth } : undefined),
      expect: { ok: true },
    },
    {
      name: "the connection reset before any byte",
      faults: (r) => (r.nth < 3 ? { kind: "reset", after: 0 } : undefined),
      expect: { ok: true },
    },
    {
      name: "a slow trickle",
      faults: () => ({ kind: "trickle", chunk: 16 * 1024, intervalMs: 1 }),
      expect: { ok: true },
    },
  ],
  staging: [
    {
      name: "a symlinked directory in the staging tree",
      prepare: async (dir) => {
        const outside = await dest();
        await symlink(outside, join(dir, "os"));
      },
      faults: () => undefined,
      expect: { reason: "unsafe-staging" },
    },
    {
      name: "a symlinked .partial pointing outside",
      prepare: async (dir) => {
        const outside = join(await dest(), "precious");
        await writeFile(outside, "precious");
        await mkdir(join(dir, "os/blobs"), { recursive: true });
        await symlink(outside, join(dir, `${TARGET}.partial`));
      },
      faults: () => undefined,
      expect: { reason: "unsafe-staging" },
    },
    {
      name: "a symlink where the file belongs",
      prepare: async (dir) => {
        const outside = join(await dest(), "precious");
        await writeFile(outside, "precious");
        await mkdir(join(dir, "os/blobs"), { recursive: true });
        await symlink(outside, join(dir, TARGET));
      },
      faults: () => undefined,
      expect: { reason: "unsafe-staging" },
    },
    {
      name: "a hard-linked .partial",
      prepare: async (dir) => {
        const outside = join(dir, "precious");
        await writeFile(outside, "precious");
        await mkdir(join(dir, "os/blobs"), { recursive: true });
        await link(outside, join(dir, `${TARGET}.partial`));
      },
      faults: () => undefined,
      expect: { reason: "unsafe-staging" },
      check: async (_log, _error, dir) => expect(await readFile(join(dir, "precious"), "utf8")).toBe("precious"),
    },
  ],
};

describe.each(Object.entries(CASES))("adversarial: %s", (_group, cases) => {
  it.each(cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const dir = await dest();
    await c.prepare?.(dir);
    const outsideBefore = await snapshotOutside(dir);
    mirror.setFaults((r) => (r.path === TARGET ? c.faults(r) : undefined));
    mirror.log.length = 0;
    let outcome: DownloadedRelease | unknown;
    try {
      outcome = await download(fx, mirror, dir, { filesAtOnce: 1, ...c.options });
    } catch (error) {
      outcome = error;
    } finally {
      mirror.setFaults(undefined);
    }
    const targetLog = mirror.log.filter((e) => e.path === TARGET);
    if ("ok" in c.expect) {
      if (outcome instanceof Error) throw outcome;
      expect((await readFile(join(dir, TARGET))).equals(fx.contents.get(TARGET)!)).toBe(true);
      await verifyReleaseDirectory(dir, {
        trustedKeys: [fx.keys[0]!.publicKeyPem],
        expectRelease: fx.release,
        allowExtraFiles: true,
      });
    } else {
      if ("rule" in c.expect) {
        expect(outcome).toBeInstanceOf(ReleaseVerificationError);
        expect(outcome).toMatchObject({ rule: c.expect.rule, path: TARGET, code: "RELEASE_UNVERIFIED" });
      } else {
        expect(outcome).toBeInstanceOf(ReleaseDownloadError);
        expect(outcome).toMatchObject({ reason: c.expect.reason, code: "RELEASE_DOWNLOAD_FAILED" });
      }
      const tree = await listTree(dir);
      // never a wrong file in place, never a manifest that claims completeness
      expect(tree).not.toContain("payload/manifest.json");
      const inPlace = await readFile(join(dir, TARGET)).catch(() => undefined);
      if (inPlace && !(await isSymlink(join(dir, TARGET)))) expect(inPlace.equals(fx.contents.get(TARGET)!)).toBe(true);
      // a file that failed verification leaves no staging file either
      if ("rule" in c.expect) expect(tree).not.toContain(`${TARGET}.partial`);
    }
    expect(await snapshotOutside(dir)).toEqual(outsideBefore);
    await c.check?.(targetLog, outcome, dir);
  });
});

describe("adversarial: connection resets at random offsets", () => {
  it("ends with the right file in 50 runs out of 50", async () => {
    const size = 256 * 1024;
    const small = await makeRelease({ "os/blobs/r": size });
    env.track(small.dir);
    const resets = await startMirror({ root: small.dir, pki });
    let seed = Number(process.env.RELEASE_FUZZ_SEED ?? Date.now() % 1_000_000);
    const initial = seed;
    const random = () => {
      // mulberry32: reproducible from the printed seed
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    try {
      for (let run = 0; run < 50; run++) {
        const breaks = 1 + Math.floor(random() * 4);
        const offsets = Array.from({ length: breaks }, () => Math.floor(random() * size));
        resets.setFaults((r) =>
          r.path === "os/blobs/r" && r.nth < breaks ? { kind: "reset", after: offsets[r.nth]! } : undefined,
        );
        const dir = await dest();
        const result = await download(small, resets, dir).catch((error: unknown) => {
          throw new Error(`run ${run} (seed ${initial}, resets at ${offsets.join(",")}) failed: ${String(error)}`, {
            cause: error,
          });
        });
        expect(
          (await readFile(join(dir, "os/blobs/r"))).equals(small.contents.get("os/blobs/r")!),
          `run ${run} seed ${initial}`,
        ).toBe(true);
        // resumed, not restarted: never more than the file plus what the resets cut off in flight
        expect(result.files[0]!.bytesFetched).toBeLessThanOrEqual(size);
        await removeDir(dir);
      }
    } finally {
      await resets.close();
    }
  });
});

describe("adversarial: hostile manifests served by the mirror", () => {
  let keys: CaseKeys;
  let root: string;
  let served: Mirror;
  beforeAll(async () => {
    keys = caseKeys();
    root = await tempDir();
    env.track(root);
    await mkdir(join(root, "os/blobs"), { recursive: true });
    await writeFile(join(root, "os/blobs/a"), "abc");
    served = await startMirror({ root, pki });
  });
  afterAll(async () => {
    await served?.close();
  });

  it.each(MANIFEST_CASES.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    await writeEnvelope(root, c.envelope(keys));
    const dir = await dest();
    const fake: Fixture = {
      dir: root,
      release: "0.6.0",
      keys: [keys.a],
      manifest: undefined as never,
      contents: new Map(),
    };
    const error = await failure(
      download(fake, served, dir, {
        trustedKeys: c.trusted ? c.trusted(keys) : [keys.a.publicKeyPem, keys.b.publicKeyPem],
        threshold: c.threshold ?? 1,
      }),
    );
    expect(error).toBeInstanceOf(ReleaseVerificationError);
    expect(error).toMatchObject({ rule: c.rule });
    // nothing is fetched or written past a manifest that fails
    expect(await listTree(dir)).toEqual([]);
    expect(served.log.at(-1)!.path).toBe("payload/manifest.json");
  });

  it("cuts off an endless manifest at the envelope cap", async () => {
    served.setFaults((r) => (r.path === "payload/manifest.json" ? { kind: "endless" } : undefined));
    try {
      const fake: Fixture = {
        dir: root,
        release: "0.6.0",
        keys: [keys.a],
        manifest: undefined as never,
        contents: new Map(),
      };
      const error = await failure(download(fake, served, await dest(), { limits: { maxEnvelopeBytes: 64 * 1024 } }));
      expect(error).toMatchObject({ rule: "envelope-size" });
    } finally {
      served.setFaults(undefined);
    }
  });
});

async function isSymlink(path: string): Promise<boolean> {
  const { lstat } = await import("node:fs/promises");
  return (await lstat(path)).isSymbolicLink();
}

/** The contents of every temp dir made by this file other than `dir`: a download must not write outside its destination. */
async function snapshotOutside(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const other of env.dirs()) {
    if (other === dir || other === fx.dir) continue;
    for (const path of await listTree(other)) {
      const content = await readFile(join(other, path)).catch(() => Buffer.alloc(0));
      parts.push(`${other}/${path}:${content.length}:${content.subarray(0, 16).toString("hex")}`);
    }
  }
  return parts.join("\n");
}
