/**
 * The verifier's rules 1 to 5 of docs/protocol.md#release-verification one by one, each refusal
 * with the rule and the words that say what is wrong, each bound at its boundary; then the
 * options that can never verify anything, and the release directory on disk.
 * manifest-rules.test.ts holds rules 6 and 7; verify.test.ts the table of hostile envelopes.
 */
import { sign as cryptoSign } from "node:crypto";
import { readdirSync, readlinkSync } from "node:fs";
import { mkdir, stat, symlink, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ReleaseArgumentError,
  ReleaseVerificationError,
  verifyReleaseDirectory,
  verifyReleaseManifest,
  type ReleaseVerificationRule,
  type VerifyReleaseManifestOptions,
} from "../../src/release/index.js";
import { preAuthEncoding } from "../../src/release/dsse.js";
import { caseKeys, payload, sign, type CaseKeys } from "./helpers/manifest-cases.js";
import { makeRelease, removeDir, writeEnvelope } from "./helpers/release.js";

/** The payloadType of a release manifest, as the wire carries it. */
const MANIFEST_TYPE = "application/vnd.stratum.release-manifest.v1+json";

let keys: CaseKeys;
beforeAll(() => {
  keys = caseKeys();
});

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map(removeDir));
});

const options = (over: Partial<VerifyReleaseManifestOptions> = {}): VerifyReleaseManifestOptions => ({
  trustedKeys: [keys.a.publicKeyPem, keys.b.publicKeyPem],
  expectRelease: "0.6.0",
  ...over,
});

/** Expects the envelope to be refused under `rule`, with `message` as the whole message or a pattern of it. */
function refused(
  envelope: string | Uint8Array,
  rule: ReleaseVerificationRule,
  message: string | RegExp,
  over?: Partial<VerifyReleaseManifestOptions>,
): void {
  let caught: unknown;
  try {
    verifyReleaseManifest(envelope, options(over));
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ReleaseVerificationError);
  expect((caught as ReleaseVerificationError).rule).toBe(rule);
  if (typeof message === "string") expect((caught as Error).message).toBe(message);
  else expect((caught as Error).message).toMatch(message);
}

/** An envelope object signed by `a` (its fields overridable), as text. */
function envelope(over: Record<string, unknown> = {}, body: Record<string, unknown> | string = payload()): string {
  return JSON.stringify({ ...JSON.parse(sign(body, [keys.a])), ...over });
}

/** An envelope whose payload is these raw bytes, signed by `a`. */
function envelopeOfPayload(bytes: Buffer): string {
  const sig = cryptoSign(null, preAuthEncoding(MANIFEST_TYPE, bytes), keys.a.privateKeyPem).toString("base64");
  return JSON.stringify({
    payloadType: MANIFEST_TYPE,
    payload: bytes.toString("base64"),
    signatures: [{ keyid: keys.a.keyid, sig }],
  });
}

const envelopeError = (why: string) => `the manifest is not a DSSE envelope: ${why}`;
const payloadError = (why: string) => `the manifest payload is not a v1 release manifest: ${why}`;

describe("rule 1: the envelope is at most maxEnvelopeBytes, counted before anything reads it", () => {
  it("an envelope of exactly the bound verifies, one byte more is refused", () => {
    const text = sign(payload(), [keys.a]);
    const size = Buffer.byteLength(text);
    expect(verifyReleaseManifest(text, options({ limits: { maxEnvelopeBytes: size } })).signedBy).toEqual([
      keys.a.keyid,
    ]);
    refused(text, "envelope-size", `the manifest envelope is ${size} bytes, more than the ${size - 1} allowed`, {
      limits: { maxEnvelopeBytes: size - 1 },
    });
  });

  it("text is counted in UTF-8 bytes, as the bytes it came from", () => {
    // a keyid hint of two-byte characters: the text has fewer characters than bytes
    const text = envelope({ signatures: [{ ...JSON.parse(envelope()).signatures[0], keyid: "é".repeat(40) }] });
    const bytes = Buffer.from(text);
    expect(bytes.length).toBe(text.length + 40);
    for (const input of [text, bytes, new Uint8Array(bytes)]) {
      expect(verifyReleaseManifest(input, options({ limits: { maxEnvelopeBytes: bytes.length } })).signedBy).toEqual([
        keys.a.keyid,
      ]);
      refused(
        input,
        "envelope-size",
        `the manifest envelope is ${bytes.length} bytes, more than the ${text.length} allowed`,
        {
          limits: { maxEnvelopeBytes: text.length },
        },
      );
    }
  });
});

describe("rule 1: the envelope is a DSSE envelope, parsed strictly", () => {
  it("is UTF-8 JSON as it is: invalid UTF-8, a byte order mark or broken JSON is refused", () => {
    const valid = Buffer.from(envelope());
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), valid]);
    const badUtf8 = Buffer.from(valid);
    badUtf8[badUtf8.indexOf("application")] = 0xff;
    for (const bytes of [withBom, badUtf8, Buffer.from("{ not json")]) {
      refused(bytes, "envelope-parse", envelopeError("not UTF-8 JSON"));
    }
  });

  it.each([["[]"], ["5"], ["null"], ['"envelope"']])("is a JSON object, not %s", (text) => {
    refused(text, "envelope-parse", envelopeError("not a JSON object"));
  });

  it("has exactly payloadType, payload and signatures", () => {
    const base = JSON.parse(envelope());
    const { signatures: _s, ...withoutSignatures } = base;
    const renamed = { payloadType: base.payloadType, payload: base.payload, signature: base.signatures };
    for (const shape of [{ ...base, extra: 1 }, withoutSignatures, renamed]) {
      refused(
        JSON.stringify(shape),
        "envelope-parse",
        envelopeError("fields other than payloadType, payload, signatures"),
      );
    }
  });

  it("payloadType and payload are strings", () => {
    refused(envelope({ payloadType: 5 }), "envelope-parse", envelopeError("payloadType is not a string"));
    refused(envelope({ payload: 5 }), "envelope-parse", envelopeError("payload is not a string"));
    refused(envelope({ payload: ["e30="] }), "envelope-parse", envelopeError("payload is not a string"));
  });

  it("the payload is canonical base64: padded, standard alphabet, nothing around it", () => {
    const good = JSON.parse(envelope()).payload as string;
    const unpadded = Buffer.from("{}").toString("base64").replace(/=+$/, "");
    for (const payloadText of [
      unpadded,
      ` ${good}`,
      `${good}\n`,
      good.replace(/(.{8})/, "$1 "),
      `${good}====`,
      "e30-",
    ]) {
      refused(envelope({ payload: payloadText }), "envelope-parse", envelopeError("payload is not canonical base64"));
    }
  });

  it("signatures is an array of at most maxSignatures", () => {
    refused(envelope({ signatures: {} }), "envelope-parse", envelopeError("signatures is not an array"));
    const [real] = JSON.parse(envelope()).signatures;
    const bogus = { keyid: "", sig: Buffer.alloc(64, 7).toString("base64") };
    const sixteen = [...Array.from({ length: 15 }, () => bogus), real];
    expect(verifyReleaseManifest(envelope({ signatures: sixteen }), options()).signedBy).toEqual([keys.a.keyid]);
    refused(envelope({ signatures: [bogus, ...sixteen] }), "envelope-parse", envelopeError("more than 16 signatures"));
    refused(envelope({ signatures: [bogus, real] }), "envelope-parse", envelopeError("more than 1 signatures"), {
      limits: { maxSignatures: 1 },
    });
  });

  it("each signature is { keyid, sig }: sig a string, keyid a string or absent", () => {
    const [real] = JSON.parse(envelope()).signatures;
    for (const shape of ["sig", null, [real.sig], { keyid: real.keyid }, { keyid: 5, sig: real.sig }, { sig: 5 }]) {
      refused(
        envelope({ signatures: [real, shape] }),
        "envelope-parse",
        envelopeError("a signature is not { keyid, sig }"),
      );
    }
    expect(verifyReleaseManifest(envelope({ signatures: [{ sig: real.sig }] }), options()).signedBy).toEqual([
      keys.a.keyid,
    ]);
  });
});

describe("rule 2: signatures by at least threshold distinct trusted keys", () => {
  it("says how many distinct trusted keys signed and how many are required", () => {
    refused(
      sign(payload(), [keys.a, keys.stranger]),
      "signature-threshold",
      "the manifest carries valid signatures by 1 distinct trusted release key(s); 2 required",
      { threshold: 2 },
    );
  });

  it("a signature that is not 64 bytes of canonical base64 counts for nothing, and stops nothing", () => {
    const [real] = JSON.parse(envelope()).signatures;
    const raw = Buffer.from(real.sig, "base64");
    const broken = [
      "not base64 at all!",
      raw.subarray(0, 63).toString("base64"),
      Buffer.concat([raw, Buffer.from([0])]).toString("base64"),
      real.sig.replace(/=+$/, ""),
      ` ${real.sig}`,
      "",
    ];
    for (const sig of broken) {
      refused(envelope({ signatures: [{ keyid: keys.a.keyid, sig }] }), "signature-threshold", /by 0 distinct/);
      const beside = envelope({ signatures: [{ keyid: keys.a.keyid, sig }, real] });
      expect(verifyReleaseManifest(beside, options()).signedBy).toEqual([keys.a.keyid]);
    }
  });

  it("every trusted key is tried whatever keyid a signature names, and each counts once", () => {
    const both = JSON.parse(sign(payload(), [keys.a, keys.b]));
    // the keyids swapped, then both claiming the stranger's: the signers are still a and b
    for (const keyids of [
      [keys.b.keyid, keys.a.keyid],
      [keys.stranger.keyid, keys.stranger.keyid],
    ]) {
      both.signatures[0].keyid = keyids[0];
      both.signatures[1].keyid = keyids[1];
      const { signedBy } = verifyReleaseManifest(JSON.stringify(both), options({ threshold: 2 }));
      expect(signedBy.sort()).toEqual([keys.a.keyid, keys.b.keyid].sort());
    }
    const twice = JSON.parse(sign(payload(), [keys.a, keys.a]));
    expect(verifyReleaseManifest(JSON.stringify(twice), options()).signedBy).toEqual([keys.a.keyid]);
  });
});

describe("rule 3: the payloadType is the release manifest's", () => {
  it(`is ${MANIFEST_TYPE}, byte for byte`, () => {
    // an envelope built here from the wire value, not from the SDK's constant
    expect(
      verifyReleaseManifest(envelopeOfPayload(Buffer.from(JSON.stringify(payload()))), options()).signedBy,
    ).toEqual([keys.a.keyid]);
    refused(
      sign(payload(), [keys.a], "application/vnd.in-toto+json"),
      "payload-type",
      `the envelope's payloadType is not ${MANIFEST_TYPE}`,
    );
  });
});

describe("rule 4: the payload is a v1 release manifest, parsed strictly", () => {
  const body = (over: Record<string, unknown>) => envelope({}, payload(over));

  it("is UTF-8 JSON as it is: invalid UTF-8, a byte order mark or broken JSON is refused", () => {
    const json = Buffer.from(JSON.stringify(payload()));
    const badUtf8 = Buffer.from(json);
    badUtf8[badUtf8.indexOf("0.6.0")] = 0xff;
    for (const bytes of [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]), badUtf8, Buffer.from("{ nope")]) {
      refused(envelopeOfPayload(bytes), "payload-parse", payloadError("not UTF-8 JSON"));
    }
  });

  it("is a JSON object with exactly schema, release, createdAt and files", () => {
    for (const text of ["[]", "5", "null"]) {
      refused(envelopeOfPayload(Buffer.from(text)), "payload-parse", payloadError("not a JSON object"));
    }
    const { files, ...withoutFiles } = payload();
    const renamed = { ...withoutFiles, file: files };
    for (const shape of [{ ...payload(), extra: true }, withoutFiles, renamed]) {
      refused(
        envelope({}, shape),
        "payload-parse",
        payloadError("fields other than schema, release, createdAt, files"),
      );
    }
  });

  it("schema is the number 1", () => {
    for (const schema of [2, "1", 0, null]) refused(body({ schema }), "payload-parse", payloadError("schema is not 1"));
  });

  it("release is a name of 1 to 128 characters without control characters", () => {
    const longest = "r".repeat(128);
    expect(
      verifyReleaseManifest(body({ release: longest }), options({ expectRelease: longest })).manifest.release,
    ).toBe(longest);
    for (const release of [5, "", "r".repeat(129), "0.6\n", "0.6\u007f", "\u00010.6", null]) {
      refused(body({ release }), "payload-parse", payloadError("release is not a release name"), {
        expectRelease: typeof release === "string" && release !== "" ? release : "0.6.0",
      });
    }
  });

  it.each([["2025-01-01T00:00:00Z"], ["2025-01-01T00:00:00+02:00"], ["2025-01-01T00:00:00.123456789-05:30"]])(
    "createdAt %s is an RFC 3339 time",
    (createdAt) => {
      expect(verifyReleaseManifest(body({ createdAt }), options()).manifest.createdAt).toBe(createdAt);
    },
  );

  it.each([
    ["a number", 1735689600000],
    ["an array holding a time", ["2025-01-01T00:00:00Z"]],
    ["a space for the T", "2025-01-01 00:00:00Z"],
    ["an expanded year", "+002025-01-01T00:00:00Z"],
    ["an offset without its colon", "2025-01-01T00:00:00+0200"],
    ["no zone", "2025-01-01T00:00:00"],
    ["ten fraction digits", "2025-01-01T00:00:00.1234567890Z"],
    ["a month 13", "2025-13-01T00:00:00Z"],
    ["an RFC 1123 date", "Wed, 01 Jan 2025 00:00:00 GMT"],
  ])("createdAt as %s is refused", (_, createdAt) => {
    refused(body({ createdAt }), "payload-parse", payloadError("createdAt is not an RFC 3339 time"));
  });

  it("files is an array of { path, size, sha256 }, the first wrong one named by its index", () => {
    refused(body({ files: {} }), "payload-parse", payloadError("files is not an array"));
    const good = { path: "sysext/a", size: 1, sha256: "a".repeat(64) };
    const { sha256: _h, ...withoutHash } = good;
    for (const file of [5, null, ["sysext/a", 1, "a".repeat(64)], withoutHash, { ...good, mode: 420 }]) {
      refused(body({ files: [good, file] }), "payload-parse", payloadError("files[1] is not { path, size, sha256 }"));
    }
  });

  it("a path is a string (its rules are rule 6's)", () => {
    refused(
      body({ files: [{ path: 5, size: 1, sha256: "a".repeat(64) }] }),
      "payload-parse",
      payloadError("files[0].path is not a string"),
    );
  });

  it("a size is a whole number of bytes, 0 included", () => {
    const file = (size: unknown) => ({ path: "sysext/a", size, sha256: "a".repeat(64) });
    expect(verifyReleaseManifest(body({ files: [file(0)] }), options()).manifest.files[0]!.size).toBe(0);
    for (const size of ["3", -1, 1.5, null, true]) {
      refused(body({ files: [file(size)] }), "payload-parse", payloadError("files[0].size is not a byte count"));
    }
  });

  it("a sha256 is 64 lower-case hex digits, nothing more", () => {
    const file = (sha256: unknown) => ({ path: "sysext/a", size: 1, sha256 });
    expect(verifyReleaseManifest(body({ files: [file("0123456789abcdef".repeat(4))] }), options())).toBeTruthy();
    for (const sha256 of [
      "A".repeat(64),
      "a".repeat(63),
      "a".repeat(65),
      `x${"a".repeat(64)}`,
      `${"a".repeat(64)}\n`,
      ["a".repeat(64)],
      5,
    ]) {
      refused(
        body({ files: [file(sha256)] }),
        "payload-parse",
        payloadError("files[0].sha256 is not lower-case hex SHA-256"),
      );
    }
  });
});

describe("rule 5: the release is the one the cluster named", () => {
  it("names both releases when they differ", () => {
    refused(
      sign(payload(), [keys.a]),
      "release",
      'the manifest is of release "0.6.0", not the "0.7.0" the cluster runs',
      {
        expectRelease: "0.7.0",
      },
    );
  });
});

describe("options that could never verify anything are refused before any envelope is read", () => {
  const argumentError = (over: Partial<VerifyReleaseManifestOptions>, message: string) => {
    // an envelope that would fail rule 1: the options are checked first
    expect(() => verifyReleaseManifest("x".repeat(10), options({ ...over, limits: { maxEnvelopeBytes: 1 } }))).toThrow(
      new ReleaseArgumentError(message),
    );
  };

  it("a threshold is a whole number of at least 1, and at most the distinct trusted keys", () => {
    for (const threshold of [0, -1, 1.5, Number.NaN]) {
      argumentError({ threshold }, "threshold is a whole number of at least 1");
    }
    argumentError({ threshold: 3 }, "threshold 3 exceeds the 2 distinct trusted release key(s)");
    expect(verifyReleaseManifest(sign(payload(), [keys.b]), options({ threshold: undefined })).signedBy).toEqual([
      keys.b.keyid,
    ]);
  });

  it("expectRelease names a release", () => {
    for (const expectRelease of ["", undefined, 5]) {
      argumentError({ expectRelease: expectRelease as string }, "expectRelease names the release the cluster runs");
    }
  });

  it("trustedKeys names at least one key", () => {
    for (const trustedKeys of [[], keys.a.publicKeyPem, undefined]) {
      argumentError(
        { trustedKeys: trustedKeys as unknown as string[] },
        "trustedKeys names at least one release public key",
      );
    }
  });
});

describe("a release directory is its manifest and exactly the files it lists", () => {
  it("an envelope file larger than the bound is refused from its size, before it is read", async () => {
    const fx = await makeRelease({ "sysext/a": 10 });
    dirs.push(fx.dir);
    const at = join(fx.dir, "payload/manifest.json");
    const size = (await stat(at)).size;
    await expect(
      verifyReleaseDirectory(
        fx.dir,
        options({ trustedKeys: [fx.keys[0]!.publicKeyPem], limits: { maxEnvelopeBytes: size } }),
      ),
    ).resolves.toBeTruthy();
    // 3 GiB, sparse: reading it whole would fail (past what one read may return) or take the memory
    await truncate(at, 3 * 1024 ** 3);
    await expect(
      verifyReleaseDirectory(fx.dir, options({ trustedKeys: [fx.keys[0]!.publicKeyPem] })),
    ).rejects.toMatchObject({
      rule: "envelope-size",
      message: `the manifest envelope is ${3 * 1024 ** 3} bytes, more than the ${4 * 1024 * 1024} allowed`,
    });
  });

  it("closes the envelope file whatever the outcome", async () => {
    const fx = await makeRelease({ "sysext/a": 10 });
    dirs.push(fx.dir);
    const trusted = options({ trustedKeys: [fx.keys[0]!.publicKeyPem] });
    const envelope = join(fx.dir, "payload/manifest.json");
    // this process's descriptors open on the envelope (one closed meanwhile reads as none)
    const openOnEnvelope = () =>
      readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === envelope;
        } catch {
          return false;
        }
      }).length;
    await verifyReleaseDirectory(fx.dir, trusted);
    expect(openOnEnvelope()).toBe(0);
    await expect(
      verifyReleaseDirectory(fx.dir, { ...trusted, limits: { maxEnvelopeBytes: 10 } }),
    ).rejects.toMatchObject({ rule: "envelope-size" });
    expect(openOnEnvelope()).toBe(0);
  });

  it("a listed file that is missing, a directory or a symlink is refused by its path", async () => {
    const fx = await makeRelease({ "sysext/a": 10, "sysext/b": 10 });
    dirs.push(fx.dir);
    const trusted = options({ trustedKeys: [fx.keys[0]!.publicKeyPem] });
    const b = join(fx.dir, "sysext/b");
    const expected = { rule: "size", path: "sysext/b", message: "sysext/b is missing or not a regular file" };
    await removeDir(b);
    await expect(verifyReleaseDirectory(fx.dir, trusted)).rejects.toMatchObject(expected);
    await mkdir(b);
    await expect(verifyReleaseDirectory(fx.dir, trusted)).rejects.toMatchObject(expected);
    await removeDir(b);
    await symlink(join(fx.dir, "sysext/a"), b);
    await expect(verifyReleaseDirectory(fx.dir, trusted)).rejects.toMatchObject(expected);
  });

  it("says which file has the wrong size or hash, and which file is not listed", async () => {
    const fx = await makeRelease({ "sysext/a": 10 });
    dirs.push(fx.dir);
    const trusted = options({ trustedKeys: [fx.keys[0]!.publicKeyPem] });
    const a = join(fx.dir, "sysext/a");
    await writeFile(a, "short");
    await expect(verifyReleaseDirectory(fx.dir, trusted)).rejects.toMatchObject({
      rule: "size",
      path: "sysext/a",
      message: "sysext/a is 5 bytes; the manifest says 10",
    });
    await writeFile(a, "0123456789");
    await expect(verifyReleaseDirectory(fx.dir, trusted)).rejects.toMatchObject({
      rule: "hash",
      path: "sysext/a",
      message: "sysext/a does not have the SHA-256 the manifest gives",
    });
    await writeFile(a, fx.contents.get("sysext/a")!);
    await writeFile(join(fx.dir, "sysext/extra"), "x");
    await expect(verifyReleaseDirectory(fx.dir, trusted)).rejects.toMatchObject({
      rule: "path",
      path: "sysext/extra",
      message: "sysext/extra is in the release directory but not in its manifest",
    });
  });

  it("verifies the envelope it reads with the manifest rules", async () => {
    const fx = await makeRelease({ "sysext/a": 10 });
    dirs.push(fx.dir);
    await writeEnvelope(fx.dir, sign(payload(), [fx.keys[0]!]));
    await expect(
      verifyReleaseDirectory(fx.dir, options({ trustedKeys: [fx.keys[0]!.publicKeyPem], expectRelease: "0.7.0" })),
    ).rejects.toMatchObject({ rule: "release" });
  });
});
