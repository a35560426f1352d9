import { createHash, generateKeyPairSync } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  ReleaseArgumentError,
  ReleaseVerificationError,
  importReleasePublicKey,
  verifyReleaseManifest,
} from "../../src/release/index.js";
import { StratumError } from "../../src/errors/index.js";
import { MANIFEST_CASES, caseKeys, payload, sign, type CaseKeys } from "./helpers/manifest-cases.js";

let keys: CaseKeys;
beforeAll(() => {
  keys = caseKeys();
});

const trustedOf = (k: CaseKeys) => [k.a.publicKeyPem, k.b.publicKeyPem];

describe("verifyReleaseManifest: every rule, in order", () => {
  it.each(MANIFEST_CASES.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    const envelope = c.envelope(keys);
    let caught: unknown;
    try {
      verifyReleaseManifest(envelope, {
        trustedKeys: c.trusted?.(keys) ?? trustedOf(keys),
        threshold: c.threshold ?? 1,
        expectRelease: "0.6.0",
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ReleaseVerificationError);
    const error = caught as ReleaseVerificationError;
    expect(error.rule).toBe(c.rule);
    expect(error.code).toBe("RELEASE_UNVERIFIED");
    expect(StratumError.is(error)).toBe(true);
  });

  it("accepts a valid manifest and names the signers", () => {
    const result = verifyReleaseManifest(sign(payload(), [keys.a, keys.b]), {
      trustedKeys: trustedOf(keys),
      threshold: 2,
      expectRelease: "0.6.0",
    });
    expect(result.manifest.release).toBe("0.6.0");
    expect(result.signedBy.sort()).toEqual([keys.a.keyid, keys.b.keyid].sort());
  });

  it("treats the keyid as a hint only: a wrong or empty keyid on a valid signature still counts", () => {
    const env = JSON.parse(sign(payload(), [keys.a, keys.b]));
    env.signatures[0].keyid = keys.b.keyid;
    env.signatures[1].keyid = "";
    const result = verifyReleaseManifest(JSON.stringify(env), {
      trustedKeys: trustedOf(keys),
      threshold: 2,
      expectRelease: "0.6.0",
    });
    expect(result.signedBy).toHaveLength(2);
  });

  it("ignores untrusted signatures beside enough trusted ones", () => {
    const result = verifyReleaseManifest(sign(payload(), [keys.stranger, keys.a]), {
      trustedKeys: trustedOf(keys),
      expectRelease: "0.6.0",
    });
    expect(result.signedBy).toEqual([keys.a.keyid]);
  });

  it("accepts trusted keys as PEM, raw 32 bytes or KeyObject, all with the same keyid", () => {
    const raw = keys.a.publicKey;
    expect(createHash("sha256").update(raw).digest("hex")).toBe(keys.a.keyid);
    const fromRaw = importReleasePublicKey(raw);
    const fromPem = importReleasePublicKey(keys.a.publicKeyPem);
    const fromObject = importReleasePublicKey(fromPem.key);
    expect(new Set([fromRaw.keyid, fromPem.keyid, fromObject.keyid, keys.a.keyid]).size).toBe(1);
    for (const trusted of [raw, keys.a.publicKeyPem, fromPem.key]) {
      expect(
        verifyReleaseManifest(sign(payload(), [keys.a]), { trustedKeys: [trusted], expectRelease: "0.6.0" }).signedBy,
      ).toEqual([keys.a.keyid]);
    }
  });

  it("counts a key listed twice in the trust store once: a threshold above the distinct keys is a configuration error", () => {
    expect(() =>
      verifyReleaseManifest(sign(payload(), [keys.a]), {
        trustedKeys: [keys.a.publicKeyPem, keys.a.publicKey],
        threshold: 2,
        expectRelease: "0.6.0",
      }),
    ).toThrow(ReleaseArgumentError);
  });

  it("refuses keys that are not Ed25519, and empty trust stores", () => {
    const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    expect(() => importReleasePublicKey(publicKey)).toThrow(ReleaseArgumentError);
    expect(() => importReleasePublicKey(new Uint8Array(31))).toThrow(ReleaseArgumentError);
    expect(() => verifyReleaseManifest(sign(payload(), [keys.a]), { trustedKeys: [], expectRelease: "0.6.0" })).toThrow(
      ReleaseArgumentError,
    );
  });

  it("applies caller limits", () => {
    expect(() =>
      verifyReleaseManifest(sign(payload(), [keys.a]), {
        trustedKeys: trustedOf(keys),
        expectRelease: "0.6.0",
        limits: { maxEnvelopeBytes: 100 },
      }),
    ).toThrow(expect.objectContaining({ rule: "envelope-size" }));
    expect(() =>
      verifyReleaseManifest(sign(payload(), [keys.a]), {
        trustedKeys: trustedOf(keys),
        expectRelease: "0.6.0",
        limits: { maxFileSize: 2 },
      }),
    ).toThrow(expect.objectContaining({ rule: "size" }));
  });
});
