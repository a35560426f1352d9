/**
 * Rules 6 and 7 of docs/protocol.md#release-verification, one test per rule and bound: what a
 * manifest's file list may name (paths) and ask for (sizes, counts), each at its boundary, as
 * the verifier applies them to a signed manifest and the tooling before it signs.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ReleaseVerificationError, verifyReleaseManifest, type ReleaseLimits } from "../../src/release/index.js";
import {
  checkManifestFiles,
  DEFAULT_RELEASE_LIMITS,
  releasePathProblem,
  resolveLimits,
} from "../../src/release/manifest-rules.js";
import { caseKeys, payload, sign, type CaseKeys } from "./helpers/manifest-cases.js";

const SHA = "0".repeat(64);
const file = (path: string, size = 1) => ({ path, size, sha256: SHA });

let keys: CaseKeys;
beforeAll(() => {
  keys = caseKeys();
});

/** Signs a manifest listing `files` and verifies it: the manifest's files, or the error. */
function verdict(
  files: { path: string; size: number; sha256: string }[],
  limits?: ReleaseLimits,
): ReleaseVerificationError | string[] {
  try {
    const { manifest } = verifyReleaseManifest(sign(payload({ files }), [keys.a]), {
      trustedKeys: [keys.a.publicKeyPem],
      expectRelease: "0.6.0",
      ...(limits ? { limits } : {}),
    });
    return manifest.files.map((f) => f.path);
  } catch (error) {
    expect(error).toBeInstanceOf(ReleaseVerificationError);
    return error as ReleaseVerificationError;
  }
}

/** Expects the verifier to refuse `files` under `rule`, naming `path` when given, with `why` in the message. */
function refused(
  files: { path: string; size: number; sha256: string }[],
  rule: "path" | "size",
  why: string | RegExp,
  path?: string,
  limits?: ReleaseLimits,
): void {
  const result = verdict(files, limits);
  expect(result).toBeInstanceOf(ReleaseVerificationError);
  const error = result as ReleaseVerificationError;
  expect(error.rule).toBe(rule);
  expect(error.message).toMatch(why);
  expect(error.path).toBe(path);
}

/** A path under os/blobs/ of exactly `bytes` UTF-8 bytes, in segments of at most 200 bytes. */
function pathOfBytes(bytes: number, unit = "a"): string {
  const unitBytes = Buffer.byteLength(unit);
  let rest = bytes - "os/blobs/".length;
  const segments: string[] = [];
  while (rest > 0) {
    // a segment and, unless it is the last, its slash
    const take = Math.min(rest, 200);
    const last = take === rest;
    const body = last ? take : take - 1;
    const units = Math.floor(body / unitBytes);
    segments.push(unit.repeat(units) + "b".repeat(body - units * unitBytes));
    rest -= take;
  }
  const path = `os/blobs/${segments.join("/")}`;
  expect(Buffer.byteLength(path)).toBe(bytes);
  return path;
}

describe("rule 6: a release path is relative POSIX inside os/blobs/ or sysext/", () => {
  it("accepts files in both roots, nested or not", () => {
    const paths = ["os/blobs/sha256-aa", "os/blobs/nested/deep/x", "sysext/kube.raw", "sysext/a b.raw", "sysext/é~"];
    expect(verdict(paths.map((p) => file(p)))).toEqual(paths);
    for (const path of paths) expect(releasePathProblem(path)).toBeUndefined();
  });

  it.each([
    ["os/a", "outside os/blobs/"],
    ["os/blobsx/a", "outside os/blobs/"],
    ["sysextra/a", "outside os/blobs/"],
    ["OS/BLOBS/a", "outside os/blobs/"],
    ["etc/passwd", "outside os/blobs/"],
    ["sysext", "outside os/blobs/"],
    ["x/sysext/a", "outside os/blobs/"],
    ["/os/blobs/a", "an absolute path"],
    ["sysext/../../etc/passwd", "a .. segment"],
    ["sysext/..", "a .. segment"],
    ["sysext/./a", "a . segment"],
    ["sysext/.", "a . segment"],
    ["sysext//a", "an empty path segment"],
    ["sysext/", "an empty path segment"],
    ["os/blobs/a/", "an empty path segment"],
    ["sysext\\a", "a backslash"],
    ["sysext/a\0b", "a NUL byte"],
    ["sysext/a.partial", "ending in .partial"],
    ["", "an empty path"],
  ])("refuses %j: %s", (path, why) => {
    refused([file("sysext/fine"), file(path)], "path", why, path);
    expect(releasePathProblem(path)).toContain(why);
  });

  it.each([
    ["\u0001", true],
    ["\u001f", true],
    ["\t", true],
    ["\n", true],
    ["\u007f", true],
    [" ", false],
    ["~", false],
    ["\u0080", false],
  ])("a control character is refused (%j: %s), other characters are not", (character, refuse) => {
    const path = `sysext/a${character}b`;
    if (refuse) refused([file(path)], "path", "a control character", path);
    else expect(verdict([file(path)])).toEqual([path]);
  });

  it("a name that only contains .partial, or a directory named so, is a release file", () => {
    const paths = ["sysext/a.partial.raw", "sysext/x.partial/a", "sysext/.partialx"];
    expect(verdict(paths.map((p) => file(p)))).toEqual(paths);
  });

  it("an empty path is that, not an empty segment", () => {
    expect(releasePathProblem("")).toBe("an empty path");
    refused([file("")], "path", 'manifest path "": an empty path', "");
  });

  it("refuses a path that is not a string (the tooling's own list)", () => {
    expect(releasePathProblem(undefined as unknown as string)).toBe("an empty path");
    expect(releasePathProblem(7 as unknown as string)).toBe("an empty path");
  });
});

describe("rule 6: the path and segment bounds, in UTF-8 bytes", () => {
  it("a path of 1024 bytes is accepted, of 1025 refused", () => {
    const longest = pathOfBytes(1024);
    expect(verdict([file(longest)])).toEqual([longest]);
    const over = pathOfBytes(1025);
    refused([file(over)], "path", "a path longer than 1024 bytes", over);
  });

  it("the path bound counts bytes, not characters: 1023 characters of which some take two bytes is too long", () => {
    const over = pathOfBytes(1030, "é");
    expect(over.length).toBeLessThan(1024);
    refused([file(over)], "path", "a path longer than 1024 bytes", over);
  });

  it("a segment of 255 bytes is accepted, of 256 refused", () => {
    const longest = `sysext/${"s".repeat(255)}`;
    expect(verdict([file(longest)])).toEqual([longest]);
    const over = `sysext/${"s".repeat(256)}`;
    refused([file(over)], "path", "a path segment longer than 255 bytes", over);
  });

  it("the segment bound counts bytes, not characters: 128 two-byte characters are too long", () => {
    const over = `sysext/${"é".repeat(128)}`;
    refused([file(over)], "path", "a path segment longer than 255 bytes", over);
    const fits = `sysext/${"é".repeat(127)}`;
    expect(verdict([file(fits)])).toEqual([fits]);
  });

  it("every segment is bounded, not only the last", () => {
    const over = `os/blobs/${"d".repeat(256)}/a`;
    refused([file(over)], "path", "a path segment longer than 255 bytes", over);
  });
});

describe("rule 6: the list names each file once, and no file is another's directory", () => {
  it("refuses a path listed twice", () => {
    refused([file("sysext/a"), file("os/blobs/b"), file("sysext/a", 2)], "path", "is listed twice", "sysext/a");
  });

  it("refuses a file that is also a directory, whichever comes first and however deep", () => {
    refused([file("sysext/a"), file("sysext/a/b")], "path", "is both a file and a directory", "sysext/a");
    refused([file("os/blobs/x/y/z/w"), file("os/blobs/x/y")], "path", "both a file and a directory", "os/blobs/x/y");
    refused([file("os/blobs/x/y/z"), file("os/blobs/x")], "path", "both a file and a directory", "os/blobs/x");
  });

  it("siblings whose names share a prefix are no directory of each other", () => {
    const paths = ["sysext/a", "sysext/ab", "sysext/a.raw", "sysext/b/a"];
    expect(verdict(paths.map((p) => file(p)))).toEqual(paths);
  });

  it("checks every path before the count or the sizes (rule 6 before rule 7)", () => {
    refused([file("sysext/a", 2 ** 60), file("../a")], "path", "a .. segment", "../a");
    refused([file("sysext/a"), file("sysext/a")], "path", "listed twice", "sysext/a", { maxFiles: 1 });
  });
});

describe("rule 7: how many files, and how large", () => {
  it(`lists at most ${DEFAULT_RELEASE_LIMITS.maxFiles} files by default: one more is refused`, () => {
    const files = Array.from({ length: DEFAULT_RELEASE_LIMITS.maxFiles }, (_, i) => file(`os/blobs/${i}`));
    expect(() => checkManifestFiles(files)).not.toThrow();
    files.push(file("sysext/one-more"));
    expect(() => checkManifestFiles(files)).toThrow(
      expect.objectContaining({
        rule: "size",
        message: expect.stringMatching(/lists 10001 files, more than the 10000/),
      }),
    );
  });

  it("the file count bound is the caller's when given", () => {
    const three = [file("sysext/a"), file("sysext/b"), file("sysext/c")];
    expect(verdict(three, { maxFiles: 3 })).toEqual(["sysext/a", "sysext/b", "sysext/c"]);
    refused(three, "size", "lists 3 files, more than the 2 allowed", undefined, { maxFiles: 2 });
  });

  it(`a file of ${DEFAULT_RELEASE_LIMITS.maxFileSize} bytes is accepted by default, one byte more refused`, () => {
    const max = DEFAULT_RELEASE_LIMITS.maxFileSize;
    expect(verdict([file("sysext/big", max)])).toEqual(["sysext/big"]);
    refused([file("sysext/big", max + 1)], "size", `declares ${max + 1} bytes, more than the ${max}`, "sysext/big");
  });

  it("a size past 2^53 is refused whatever the bound: it is not exact in a number", () => {
    const unbounded = { maxFileSize: Number.MAX_VALUE, maxTotalSize: Number.MAX_VALUE };
    expect(() => checkManifestFiles([file("sysext/a", 2 ** 53 - 1)], resolveLimits(unbounded))).not.toThrow();
    expect(() => checkManifestFiles([file("sysext/a", 2 ** 53)], resolveLimits(unbounded))).toThrow(
      expect.objectContaining({ rule: "size", path: "sysext/a" }),
    );
    expect(() => checkManifestFiles([file("sysext/a", 1.5)], resolveLimits(unbounded))).toThrow(
      expect.objectContaining({ rule: "size", path: "sysext/a" }),
    );
  });

  it(`the sum of the sizes is at most ${DEFAULT_RELEASE_LIMITS.maxTotalSize} bytes by default`, () => {
    const max = DEFAULT_RELEASE_LIMITS.maxFileSize;
    const four = [file("sysext/a", max), file("sysext/b", max), file("sysext/c", max), file("sysext/d", max)];
    expect(verdict(four)).toHaveLength(4);
    refused([...four, file("sysext/e", 1)], "size", /declares 274877906945 bytes in all, more than the 274877906944/);
  });

  it("each size bound is the caller's when given, and the defaults stand for what is left out", () => {
    expect(verdict([file("sysext/a", 10), file("sysext/b", 10)], { maxFileSize: 10, maxTotalSize: 20 })).toHaveLength(
      2,
    );
    refused([file("sysext/a", 11)], "size", "more than the 10 allowed", "sysext/a", { maxFileSize: 10 });
    refused([file("sysext/a", 10), file("sysext/b", 11)], "size", "21 bytes in all, more than the 20", undefined, {
      maxTotalSize: 20,
    });
    expect(resolveLimits({ maxFiles: 5, maxFileSize: undefined })).toEqual({ ...DEFAULT_RELEASE_LIMITS, maxFiles: 5 });
    expect(resolveLimits(undefined)).toEqual(DEFAULT_RELEASE_LIMITS);
  });
});
