// The join session file stage 2 reads: its shape is checked by hand (no schema library is
// loaded to read it), the endpoint normalised, and the CA held to its recorded fingerprint.
import { describe, expect, it } from "vitest";
import { StratumError } from "../../src/errors/index.js";
import { parseJoinSession, serializeJoinSession, type JoinSession } from "../../src/node/join-session.js";
import { createClusterCa } from "../../src/server/ca.js";

async function session(): Promise<JoinSession> {
  const ca = await createClusterCa();
  return {
    version: 1,
    endpoint: "192.0.2.240:9444",
    caPem: ca.certPem,
    caFingerprint: ca.fingerprint,
    joinId: "nj-8w2k4m1p",
    keyFingerprint: "AB:CD",
    pairingCode: "4F7-K2Q",
    release: "0.6.0",
  };
}

function refusal(input: unknown): string {
  try {
    parseJoinSession(input);
  } catch (error) {
    expect(StratumError.is(error) && error.code).toBe("JOIN_SESSION_INVALID");
    return (error as Error).message;
  }
  throw new Error("expected parseJoinSession to refuse the session");
}

describe("parseJoinSession", () => {
  it("reads back what serializeJoinSession wrote, dropping unknown fields and normalising the endpoint", async () => {
    const written = await session();
    expect(parseJoinSession(serializeJoinSession(written))).toEqual(written);
    const extra = { ...written, endpoint: "192.0.2.240", note: "kept by hand" };
    expect(parseJoinSession(JSON.stringify(extra))).toEqual(written);
    expect(parseJoinSession(extra)).toEqual(written);
  });

  it("names what is wrong with the shape, never quoting a value", async () => {
    const written = await session();
    expect(refusal("{")).toBe("the join session is not valid JSON");
    expect(refusal("[]")).toBe("the join session is malformed: (document): expected object");
    expect(refusal(null)).toBe("the join session is malformed: (document): expected object");
    expect(refusal({ ...written, version: 2 })).toBe("the join session is malformed: version: expected 1");
    const { joinId: _joinId, ...noJoinId } = written;
    expect(refusal(noJoinId)).toBe("the join session is malformed: joinId: expected a string");
    expect(refusal({ ...written, release: 6 })).toBe("the join session is malformed: release: expected a string");
  });

  it("refuses a CA that is not a certificate or not the one recorded", async () => {
    const written = await session();
    expect(refusal({ ...written, caPem: "not a certificate" })).toBe("the join session's caPem is not a certificate");
    const other = await createClusterCa();
    expect(refusal({ ...written, caPem: other.certPem })).toBe(
      "the join session's caPem does not match its caFingerprint",
    );
    expect(parseJoinSession({ ...written, caFingerprint: written.caFingerprint.toLowerCase() }).caFingerprint).toBe(
      written.caFingerprint.toLowerCase(),
    );
  });
});

describe("the clock offset a session keeps", () => {
  it("round-trips, is optional (an older session has none), and must be a whole number of ms", async () => {
    const base = await session();
    const kept = { ...base, clockOffsetMs: -31_536_000_123 };
    expect(parseJoinSession(serializeJoinSession(kept))).toEqual(kept);
    expect("clockOffsetMs" in parseJoinSession(serializeJoinSession(base))).toBe(false);
    for (const bad of ["1000", 1.5, null, Number.MAX_VALUE]) {
      expect(refusal({ ...base, clockOffsetMs: bad })).toContain("clockOffsetMs");
    }
  });
});

describe("the listener leaf a session pins", () => {
  const pin = {
    listenerKeyFingerprint: Array.from({ length: 32 }, () => "5A").join(":"),
    listenerNotBefore: "2026-12-01T10:00:00.000Z",
  };

  it("round-trips, and is optional (a session written before it has none)", async () => {
    const written = { ...(await session()), ...pin };
    expect(parseJoinSession(serializeJoinSession(written))).toEqual(written);
    expect(parseJoinSession(serializeJoinSession(await session())).listenerKeyFingerprint).toBeUndefined();
  });

  it("is refused when half of it is missing or malformed: an edited session cannot loosen the pin", async () => {
    const base = await session();
    expect(refusal({ ...base, listenerKeyFingerprint: pin.listenerKeyFingerprint })).toContain("listenerNotBefore");
    expect(refusal({ ...base, listenerNotBefore: pin.listenerNotBefore })).toContain("listenerKeyFingerprint");
    expect(refusal({ ...base, ...pin, listenerKeyFingerprint: "AB:CD" })).toContain("listenerKeyFingerprint");
    expect(refusal({ ...base, ...pin, listenerNotBefore: "yesterday" })).toContain("listenerNotBefore");
  });
});
