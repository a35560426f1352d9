/**
 * Local failures: a process killed mid-download, a corrupted .partial, a full disk.
 */
import { execFileSync } from "node:child_process";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReleaseDownloadError } from "../../src/errors/release.js";
import { RELEASE_TEST_HOOKS, type ReleaseTestHooks } from "../../src/transport/download/index.js";
import type { Mirror } from "./helpers/mirror.js";
import { startMirroredRelease, type MirroredRelease } from "./helpers/mirrored-release.js";
import type { Fixture } from "./helpers/release.js";
import { download, downloadInChild, failure, listTree } from "./helpers/run.js";

const BIG = "os/blobs/big";
const SIZE = 4 * 1024 * 1024;

let fx: Fixture;
let mirror: Mirror;
let env: MirroredRelease;

beforeAll(async () => {
  env = await startMirroredRelease({ [BIG]: SIZE, "sysext/small.raw": 5000 });
  ({ fx, mirror } = env);
});

afterAll(async () => {
  await env?.close();
});

const dest = (): Promise<string> => env.dest();

describe("killed mid-download", () => {
  it("a SIGKILLed process's .partial is re-hashed and resumed: only the missing bytes are fetched", async () => {
    const dir = await dest();
    mirror.setFaults((r) => (r.path === BIG ? { kind: "trickle", chunk: 64 * 1024, intervalMs: 8 } : undefined));
    const ended = await downloadInChild(
      { url: mirror.url, ca: mirror.caPem, destDir: dir, release: fx.release, key: fx.keys[0]!.publicKeyPem },
      SIZE / 2 + 5000,
    );
    mirror.setFaults(undefined);
    expect(ended.signal, ended.stderr).toBe("SIGKILL");
    const tree = await listTree(dir);
    expect(tree).not.toContain(BIG);
    expect(tree).not.toContain("payload/manifest.json");
    const partial = (await stat(join(dir, `${BIG}.partial`))).size;
    expect(partial).toBeGreaterThan(SIZE / 4);
    expect(partial).toBeLessThan(SIZE);

    mirror.log.length = 0;
    const result = await download(fx, mirror, dir);
    expect((await readFile(join(dir, BIG))).equals(fx.contents.get(BIG)!)).toBe(true);
    const big = mirror.log.filter((e) => e.path === BIG);
    expect(big.map((e) => [e.range, e.status])).toEqual([[`bytes=${partial}-`, 206]]);
    expect(result.files.find((f) => f.path === BIG)!.bytesFetched).toBe(SIZE - partial);
  }, 30_000);
});

describe("a damaged .partial", () => {
  it("a corrupted prefix is caught by the hash and fetched again from zero, once", async () => {
    const dir = await dest();
    const half = SIZE / 2;
    const prefix = Buffer.from(fx.contents.get(BIG)!.subarray(0, half));
    prefix[1234] = prefix[1234]! ^ 0x01;
    await mkdir(join(dir, "os/blobs"), { recursive: true });
    await writeFile(join(dir, `${BIG}.partial`), prefix);
    mirror.log.length = 0;
    const result = await download(fx, mirror, dir);
    expect((await readFile(join(dir, BIG))).equals(fx.contents.get(BIG)!)).toBe(true);
    expect(mirror.log.filter((e) => e.path === BIG).map((e) => e.range)).toEqual([`bytes=${half}-`, undefined]);
    expect(result.files.find((f) => f.path === BIG)!.bytesFetched).toBe(SIZE - half + SIZE);
  });

  it("a .partial longer than the file is dropped", async () => {
    const dir = await dest();
    await mkdir(join(dir, "os/blobs"), { recursive: true });
    await writeFile(join(dir, `${BIG}.partial`), Buffer.concat([fx.contents.get(BIG)!, Buffer.alloc(100)]));
    mirror.log.length = 0;
    await download(fx, mirror, dir);
    expect((await readFile(join(dir, BIG))).equals(fx.contents.get(BIG)!)).toBe(true);
    expect(mirror.log.filter((e) => e.path === BIG).map((e) => e.range)).toEqual([undefined]);
  });
});

describe("a full disk", () => {
  let mount: string | undefined;
  afterAll(() => {
    if (mount) execFileSync("umount", [mount]);
  });

  it("fails with disk-full, keeps what was written, and resumes once there is room", async () => {
    const dir = await dest();
    const hooks: ReleaseTestHooks = {};
    let mode: "tmpfs" | "hook";
    try {
      if (process.env.RELEASE_TEST_NO_TMPFS) throw new Error("tmpfs disabled");
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir], { stdio: "ignore" });
      mount = dir;
      mode = "tmpfs";
    } catch {
      // not root (or no mount namespace): a write hook that fails as a full disk would
      mode = "hook";
      hooks.beforeWrite = (_path, position, length) => {
        if (position + length > 1024 * 1024)
          throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", errno: -28 });
      };
    }
    console.info(`full disk simulated with ${mode === "tmpfs" ? "a 1 MiB tmpfs" : "an ENOSPC write hook"}`);
    const error = await failure(download(fx, mirror, dir, { [RELEASE_TEST_HOOKS]: hooks } as never));
    expect(error).toBeInstanceOf(ReleaseDownloadError);
    expect(error).toMatchObject({ reason: "disk-full", path: BIG });
    const tree = await listTree(dir);
    expect(tree).not.toContain(BIG);
    expect(tree).not.toContain("payload/manifest.json");
    const kept = (await stat(join(dir, `${BIG}.partial`))).size;
    // a real disk takes what fits before ENOSPC; the hook refuses whole writes
    if (mode === "tmpfs") expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(1024 * 1024);

    if (mode === "tmpfs") execFileSync("mount", ["-o", "remount,size=16m", dir]);
    else delete hooks.beforeWrite;
    mirror.log.length = 0;
    const result = await download(fx, mirror, dir, { [RELEASE_TEST_HOOKS]: hooks } as never);
    expect((await readFile(join(dir, BIG))).equals(fx.contents.get(BIG)!)).toBe(true);
    expect(mirror.log.filter((e) => e.path === BIG).map((e) => e.range)).toEqual([
      kept > 0 ? `bytes=${kept}-` : undefined,
    ]);
    expect(result.files.find((f) => f.path === BIG)!.bytesFetched).toBe(SIZE - kept);
  });
});
