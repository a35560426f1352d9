// The rules of the listener check that a mutation of src/protocol/pki.ts and
// src/protocol/founder-time.ts would break: which certificate signs for the CA, what an
// exception in a signature check means, the intermediate's dates, the pin of a later
// connection, and which clock judges the dates. All on real certificates of a real CA.
import { X509Certificate } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  CLOCK_TOLERANCE_SECONDS,
  founderNow,
  measureClockOffset,
  pastTolerance,
} from "../../src/protocol/founder-time.js";
import {
  inspectListenerCertificate,
  spkiFingerprint,
  verifyListenerCertificate,
  verifyPinnedListener,
} from "../../src/protocol/pki.js";
import { loadX509 } from "../../src/protocol/x509.js";
import { listenerRefusal as refusal } from "../helpers/pki.js";
import { createClusterCa, issueListenerCertificate, type ClusterCa } from "../../src/server/ca.js";

const x509 = await loadX509();
const DAY = 86_400_000;
const MINUTE = 60_000;
const TOLERANCE_MS = CLOCK_TOLERANCE_SECONDS * 1000;
const HOST = "127.0.0.1";
const EC = { name: "ECDSA", namedCurve: "P-256" } as const;

/** A listener leaf of `ca` as issued at `issuedAtMs` (valid from 5 minutes before, for `validDays`). */
async function leafIssuedAt(ca: Pick<ClusterCa, "certPem" | "keyPem">, issuedAtMs: number, validDays = 365) {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(issuedAtMs);
  try {
    return await issueListenerCertificate(ca, { hosts: [HOST], validDays });
  } finally {
    vi.useRealTimers();
  }
}

/** An intermediate CA certificate signed by `ca`, valid from `notBefore` to `notAfter`, and its key. */
async function intermediateOf(ca: ClusterCa, notBefore: Date, notAfter: Date) {
  const keys = (await crypto.subtle.generateKey(EC, true, ["sign", "verify"])) as CryptoKeyPair;
  const caKey = await crypto.subtle.importKey("pkcs8", x509.PemConverter.decodeFirst(ca.keyPem), EC, false, ["sign"]);
  const cert = await x509.X509CertificateGenerator.create({
    subject: "CN=intermediate",
    issuer: new x509.X509Certificate(ca.certPem).subject,
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    notBefore,
    notAfter,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  return {
    der: new Uint8Array(cert.rawData),
    signer: {
      certPem: cert.toString("pem"),
      keyPem: x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
    },
  };
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe("the CA's signature", () => {
  it("must be on the leaf or on the one intermediate that signed it: the real listener leaf riding along as an 'intermediate' lends an attacker's leaf nothing", async () => {
    const ca = await createClusterCa();
    const realLeaf = await issueListenerCertificate(ca, { hosts: [HOST] });
    const attackerCa = await createClusterCa();
    const attackerLeaf = await issueListenerCertificate(attackerCa, { hosts: [HOST] });
    // The real leaf alone passes: the chain check is what refuses the rest.
    expect(() =>
      verifyListenerCertificate({ chain: [realLeaf.certDer], caDer: ca.certDer, dialledHost: HOST }),
    ).not.toThrow();
    for (const chain of [
      [attackerLeaf.certDer, attackerCa.certDer, realLeaf.certDer],
      [attackerLeaf.certDer, realLeaf.certDer, attackerCa.certDer],
      [attackerLeaf.certDer, realLeaf.certDer, ca.certDer],
    ]) {
      const error = refusal(() => verifyListenerCertificate({ chain, caDer: ca.certDer, dialledHost: HOST }));
      expect(error.check).toBe("chain");
      expect(error.message).toContain("not signed by the pinned cluster CA");
    }
  });

  it("is 'not signed' when the runtime's check throws (an algorithm or key it cannot handle): never taken as signed", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: [HOST] });
    // Node answers false for a bad signature or key; a runtime's X509Certificate may throw instead.
    vi.spyOn(X509Certificate.prototype, "verify").mockImplementation(() => {
      throw new Error("unsupported signature algorithm");
    });
    expect(
      refusal(() => verifyListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost: HOST })).check,
    ).toBe("chain");
    vi.restoreAllMocks();
    vi.spyOn(X509Certificate.prototype, "checkIssued").mockImplementation(() => {
      throw new Error("malformed issuer");
    });
    expect(
      refusal(() => verifyListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost: HOST })).check,
    ).toBe("chain");
    vi.restoreAllMocks();
    expect(() =>
      verifyListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost: HOST }),
    ).not.toThrow();
  });
});

describe("an intermediate's dates", () => {
  it("are judged like the leaf's: an expired or not yet valid intermediate is refused", async () => {
    const now = Date.now();
    // A CA made 4 days ago, valid throughout.
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(now - 4 * DAY);
    const ca = await createClusterCa();
    vi.useRealTimers();
    const cases = [
      { from: new Date(now - 3 * DAY), to: new Date(now - DAY) },
      { from: new Date(now + DAY), to: new Date(now + 3 * DAY) },
    ];
    for (const { from, to } of cases) {
      const intermediate = await intermediateOf(ca, from, to);
      // The leaf is valid now and within the intermediate's dates: only the intermediate fails.
      const leaf = await leafIssuedAt(intermediate.signer, Math.min(now, from.getTime() + DAY / 2));
      const chain = [leaf.certDer, intermediate.der];
      const checked = inspectListenerCertificate({ chain, caDer: ca.certDer, dialledHost: HOST });
      expect(checked.validAt(new Date())).toBe(false);
      const error = refusal(() => verifyListenerCertificate({ chain, caDer: ca.certDer, dialledHost: HOST }));
      expect(error.check).toBe("validity");
      expect(error.message).toContain("the intermediate is not valid now");
      // Within its dates, the same chain passes.
      expect(checked.validAt(new Date(from.getTime() + DAY / 2))).toBe(true);
    }
  });
});

describe("verifyPinnedListener", () => {
  const pinned = (
    options: Partial<Parameters<typeof verifyPinnedListener>[0]> & { chain: Uint8Array[]; caDer: Uint8Array },
  ) => verifyPinnedListener({ dialledHost: HOST, openSslError: undefined, ...options });

  it("takes the proven key, or a leaf the CA issued no earlier than the proven one; never an older leaf of another key", async () => {
    const ca = await createClusterCa();
    const now = Date.now();
    const proven = await leafIssuedAt(ca, now - DAY);
    const provenPin = inspectListenerCertificate({ chain: [proven.certDer], caDer: ca.certDer, dialledHost: HOST }).pin;
    expect(provenPin.keyFingerprint).toBe(spkiFingerprint(proven.certDer));
    const older = await leafIssuedAt(ca, now - 2 * DAY);
    const later = await leafIssuedAt(ca, now - DAY / 2);
    const sameInstant = await leafIssuedAt(ca, now - DAY);

    expect(() => pinned({ chain: [proven.certDer], caDer: ca.certDer, pin: provenPin })).not.toThrow();
    expect(() => pinned({ chain: [later.certDer], caDer: ca.certDer, pin: provenPin })).not.toThrow();
    // Issued in the same second as the proven leaf: "no earlier" includes it.
    expect(sameInstant.keyFingerprint).not.toBe(proven.keyFingerprint);
    expect(() => pinned({ chain: [sameInstant.certDer], caDer: ca.certDer, pin: provenPin })).not.toThrow();
    const error = refusal(() => pinned({ chain: [older.certDer], caDer: ca.certDer, pin: provenPin }));
    expect(error.check).toBe("pinned");
    expect(error.message).toContain("neither the leaf the join proved");
    // One second later than that leaf's notBefore and it is older than the proof.
    const oneSecondOn = { ...provenPin, notBeforeMs: provenPin.notBeforeMs + 1000 };
    expect(refusal(() => pinned({ chain: [sameInstant.certDer], caDer: ca.certDer, pin: oneSecondOn })).check).toBe(
      "pinned",
    );
    // The proven key itself is taken whatever its leaf's notBefore (a reissue of that key).
    expect(() => pinned({ chain: [proven.certDer], caDer: ca.certDer, pin: oneSecondOn })).not.toThrow();
    // A session written before the pin was recorded: any leaf of the CA that passes the rest.
    expect(() => pinned({ chain: [older.certDer], caDer: ca.certDer })).not.toThrow();
  });

  it("judges the dates by this machine's clock within the tolerance, by the founder's past it, and by this clock again when the founder's time fails", async () => {
    const ca = await createClusterCa();
    const now = Date.now();
    // Valid from 3 minutes from now: not yet valid by this clock, valid 4 minutes on.
    const startsSoon = await leafIssuedAt(ca, now + 8 * MINUTE);
    // Valid until 2 minutes from now.
    const endsSoon = await leafIssuedAt(ca, now, 2 / (24 * 60));
    // Valid only in 10 days' time.
    const future = await leafIssuedAt(ca, now + 9 * DAY, 2);
    const ordinary = await leafIssuedAt(ca, now);

    for (const clockOffsetMs of [4 * MINUTE, TOLERANCE_MS]) {
      // Within the tolerance this clock judges, even where the founder's would differ.
      expect(refusal(() => pinned({ chain: [startsSoon.certDer], caDer: ca.certDer, clockOffsetMs })).check).toBe(
        "validity",
      );
      expect(() => pinned({ chain: [endsSoon.certDer], caDer: ca.certDer, clockOffsetMs })).not.toThrow();
    }
    // Past the tolerance, the founder's time.
    expect(() =>
      pinned({ chain: [startsSoon.certDer], caDer: ca.certDer, clockOffsetMs: TOLERANCE_MS + 4 * MINUTE }),
    ).not.toThrow();
    expect(() => pinned({ chain: [future.certDer], caDer: ca.certDer, clockOffsetMs: 10 * DAY })).not.toThrow();
    expect(refusal(() => pinned({ chain: [future.certDer], caDer: ca.certDer })).check).toBe("validity");
    expect(refusal(() => pinned({ chain: [future.certDer], caDer: ca.certDer, clockOffsetMs: 20 * DAY })).check).toBe(
      "validity",
    );
    // The founder's time says no, this clock (fixed since the join) says yes: taken.
    expect(() => pinned({ chain: [ordinary.certDer], caDer: ca.certDer, clockOffsetMs: -10 * DAY })).not.toThrow();
  });

  it("hears OpenSSL's verdict, all but its date verdicts once the offset is past the tolerance", async () => {
    const ca = await createClusterCa();
    const future = await leafIssuedAt(ca, Date.now() + 9 * DAY, 2);
    const ordinary = await issueListenerCertificate(ca, { hosts: [HOST] });
    for (const openSslError of ["CERT_NOT_YET_VALID", "CERT_HAS_EXPIRED"]) {
      expect(() =>
        pinned({ chain: [future.certDer], caDer: ca.certDer, clockOffsetMs: 10 * DAY, openSslError }),
      ).not.toThrow();
      const within = refusal(() =>
        pinned({ chain: [ordinary.certDer], caDer: ca.certDer, clockOffsetMs: TOLERANCE_MS, openSslError }),
      );
      expect(within.check).toBe("chain");
      expect(within.message).toContain(openSslError);
    }
    for (const clockOffsetMs of [undefined, 10 * DAY]) {
      const chain = clockOffsetMs ? [future.certDer] : [ordinary.certDer];
      const error = refusal(() =>
        pinned({ chain, caDer: ca.certDer, clockOffsetMs, openSslError: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" }),
      );
      expect(error.check).toBe("chain");
    }
  });
});

describe("pastTolerance", () => {
  it("is true only more than the tolerance away, either way; never without an offset", () => {
    for (const offset of [undefined, 0, 1, -1, TOLERANCE_MS - 1, TOLERANCE_MS, -TOLERANCE_MS])
      expect(pastTolerance(offset), String(offset)).toBe(false);
    for (const offset of [TOLERANCE_MS + 1, -TOLERANCE_MS - 1, 95 * DAY, -10 * 365 * DAY])
      expect(pastTolerance(offset), String(offset)).toBe(true);
  });
});

describe("founderNow", () => {
  it("is this machine's clock up to the tolerance, either way, and the founder's time past it", () => {
    const now = 1_800_000_000_000;
    for (const offset of [undefined, 0, 1, -1, TOLERANCE_MS - 1, TOLERANCE_MS, -TOLERANCE_MS]) {
      expect(founderNow(offset, now).getTime()).toBe(now);
    }
    for (const offset of [TOLERANCE_MS + 1, -TOLERANCE_MS - 1, 95 * DAY, -10 * 365 * DAY]) {
      expect(founderNow(offset, now).getTime()).toBe(now + offset);
    }
    const before = Date.now();
    const defaulted = founderNow(TOLERANCE_MS + 1).getTime() - (TOLERANCE_MS + 1);
    expect(defaulted).toBeGreaterThanOrEqual(before);
    expect(defaulted).toBeLessThanOrEqual(Date.now());
  });

  it("measures the offset from an RFC 3339 serverTime only", () => {
    expect(measureClockOffset("2026-01-01T00:05:00Z", Date.parse("2026-01-01T00:00:00Z"))).toBe(5 * MINUTE);
    expect(measureClockOffset("2026-01-01T01:00:00.5+01:00", Date.parse("2026-01-01T00:00:00Z"))).toBe(500);
    // Up to nine fraction digits (nanoseconds, as Go writes them); the clock keeps the milliseconds.
    expect(measureClockOffset("2026-01-01T00:00:00.123456789Z", Date.parse("2026-01-01T00:00:00Z"))).toBe(123);
    expect(measureClockOffset("2026-01-01t00:00:00.12z", Date.parse("2026-01-01T00:00:00Z"))).toBe(120);
    // "+002026-…" is an ECMAScript extended year Date.parse reads, not an RFC 3339 date-time.
    for (const bad of [
      "2026-01-01",
      "Thu, 01 Jan 2026 00:00:00 GMT",
      "2026-01-01T00:00:00",
      "",
      "+002026-01-01T00:00:00Z",
      "2026-01-01T00:00:00.1234567890Z",
    ]) {
      expect(() => measureClockOffset(bad, 0), bad).toThrow(
        expect.objectContaining({
          name: "ResponseValidationError",
          code: "RESPONSE_INVALID",
          operation: "POST /v1/join/pake",
          issues: [{ path: "serverTime", message: "is not an RFC 3339 date-time" }],
        }),
      );
    }
  });
});
