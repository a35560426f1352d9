import { createHash, createHmac, hkdfSync, randomBytes } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { StratumError } from "../../src/errors/index.js";
import { CROCKFORD_ALPHABET } from "../../src/core/base32.js";
import { fromBase64, fromBase64Url, toBase64, toBase64Url } from "../../src/core/bytes.js";
import { PairingCodeError } from "../../src/errors/input.js";
import {
  bindingTranscript,
  clientBinding,
  derivePairingCode,
  deriveBindingKeys,
  fingerprintHex,
  formatPairingCode,
  parsePairingCode,
  serverBinding,
  sha256Fingerprint,
  verifyBinding,
} from "../../src/core/pairing.js";

const seq = (n: number, start: number) => Uint8Array.from({ length: n }, (_, i) => (start + i) & 0xff);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const utf8 = (s: string) => new TextEncoder().encode(s);

// Fixed inputs of the test vectors.
const SESSION_KEY = seq(64, 0);
const SESSION = "pk-0123456789ABCDEF";
const KE1 = seq(96, 1);
const KE2 = seq(320, 7);
const EXPORTER = seq(32, 200);
const CA_FP = "69:59:09:70:01:D1:05:01:AC:7D:54:C0:BD:B8:DB:61:42:0F:65:8F:29:22:CC:26:E4:6D:53:61:19:A3:11:26"; // sha256("ca")
const KEY_FP = "25:C3:9B:FD:3E:6F:2F:56:B3:FB:E8:D5:E3:70:BF:8D:DF:AB:35:A1:67:52:02:F1:B4:64:3D:72:B4:19:D8:79"; // sha256("client key")

// Computed once with this implementation, and cross-checked below against node:crypto.
/** The founder's time as the PAKE answer carries it: field 7 of the transcript. */
const SERVER_TIME = "2026-11-29T14:00:00.000Z";

const VECTORS = {
  kc: "16c5185ca8117acfa831c7518f99657c48ff244cbf72fb5f0a657b4ac32caf04",
  ks: "ffce72cb03e1debf60a3122269cd8d9d97883f7d1eda1f69ff6a31ba4560c27e",
  pairingKey: "b2efe26c7dd1e3cbedd9364576db8724b554822bec420d1ce29c8ca4eeb6f514",
  transcript:
    "0000000f7374726174756d2d6a6f696e2f7631" +
    "00000013706b2d30313233343536373839414243444546" +
    "0000002097ca53e4fd752f81c31c88062fcd06b6574b73039fba35b99cdf87b3036cc6dc" +
    "0000005f36393a35393a30393a37303a30313a44313a30353a30313a41433a37443a35343a43303a42443a42383a44423a36313a34323a30463a36353a38463a32393a32323a43433a32363a45343a36443a35333a36313a31393a41333a31313a3236" +
    "0000005f32353a43333a39423a46443a33453a36463a32463a35363a42333a46423a45383a44353a45333a37303a42463a38443a44463a41423a33353a41313a36373a35323a30323a46313a42343a36343a33443a37323a42343a31393a44383a3739" +
    "00000020c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7" +
    "00000018323032362d31312d32395431343a30303a30302e3030305a",
  clientBinding: "KWyDPjbmnURAykU7Xgm14VS47/ypSPeKzALFR0JtSxc=",
  serverBinding: "l7yNdzQbiZznrXnNZXzh4zbcGrnAQvkdhcJ9DLsPSmA=",
  pairingCode: "NGWPRR",
};

function transcriptInput() {
  return {
    session: SESSION,
    ke1: KE1,
    ke2: KE2,
    caFingerprint: CA_FP,
    clientKeyFingerprint: KEY_FP,
    exporter: EXPORTER,
    serverTime: SERVER_TIME,
  };
}

/** The transcript built independently with node:crypto and Buffer, from docs/protocol.md#pairing-code. */
function nodeTranscript(i: ReturnType<typeof transcriptInput>): Buffer {
  const field = (b: Uint8Array) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  return Buffer.concat([
    field(utf8("stratum-join/v1")),
    field(utf8(i.session)),
    field(createHash("sha256").update(i.ke1).update(i.ke2).digest()),
    field(utf8(i.caFingerprint)),
    field(utf8(i.clientKeyFingerprint)),
    field(i.exporter),
    field(utf8(i.serverTime)),
  ]);
}

function nodeKeys(sessionKey: Uint8Array) {
  const k = (info: string) => new Uint8Array(hkdfSync("sha256", sessionKey, new Uint8Array(0), info, 32));
  return { kc: k("stratum-join/v1 client"), ks: k("stratum-join/v1 server"), pairingKey: k("stratum-join/v1 pairing") };
}

/** First 30 bits of the HMAC as 6 Crockford symbols, computed with BigInt to be independent of the bit loop. */
function nodePairingCode(pairingKey: Uint8Array, fingerprint: string): string {
  const mac = createHmac("sha256", pairingKey).update(fingerprint, "utf8").digest();
  const first32 = mac.readUInt32BE(0);
  const bits30 = first32 >>> 2;
  let out = "";
  for (let i = 5; i >= 0; i--) out += CROCKFORD_ALPHABET[(bits30 >>> (i * 5)) & 31];
  return out;
}

describe("fixed vectors", () => {
  it("derives kc, ks and the pairing key", async () => {
    const keys = await deriveBindingKeys(SESSION_KEY);
    expect(hex(keys.kc)).toBe(VECTORS.kc);
    expect(hex(keys.ks)).toBe(VECTORS.ks);
    expect(hex(keys.pairingKey)).toBe(VECTORS.pairingKey);
    const node = nodeKeys(SESSION_KEY);
    expect(hex(node.kc)).toBe(VECTORS.kc);
    expect(hex(node.ks)).toBe(VECTORS.ks);
    expect(hex(node.pairingKey)).toBe(VECTORS.pairingKey);
  });

  it("builds the transcript", async () => {
    const t = await bindingTranscript(transcriptInput());
    expect(hex(t)).toBe(VECTORS.transcript);
    expect(t.length).toBe(7 * 4 + 15 + SESSION.length + 32 + 95 + 95 + 32 + SERVER_TIME.length);
    expect(hex(nodeTranscript(transcriptInput()))).toBe(VECTORS.transcript);
  });

  it("computes both bindings", async () => {
    const keys = await deriveBindingKeys(SESSION_KEY);
    const t = await bindingTranscript(transcriptInput());
    expect(await clientBinding(keys.kc, t)).toBe(VECTORS.clientBinding);
    expect(await serverBinding(keys.ks, t)).toBe(VECTORS.serverBinding);
    expect(createHmac("sha256", keys.kc).update(t).digest("base64")).toBe(VECTORS.clientBinding);
    expect(createHmac("sha256", keys.ks).update(t).digest("base64")).toBe(VECTORS.serverBinding);
  });

  it("computes the pairing code", async () => {
    const keys = await deriveBindingKeys(SESSION_KEY);
    expect(await derivePairingCode(keys.pairingKey, KEY_FP)).toBe(VECTORS.pairingCode);
    expect(nodePairingCode(keys.pairingKey, KEY_FP)).toBe(VECTORS.pairingCode);
    expect(await derivePairingCode(keys.pairingKey, KEY_FP.toLowerCase())).toBe(VECTORS.pairingCode);
  });

  it("fingerprints like node:crypto", async () => {
    expect(await sha256Fingerprint(utf8("ca"))).toBe(CA_FP);
    expect(await sha256Fingerprint(utf8("client key"))).toBe(KEY_FP);
    expect(fingerprintHex(Uint8Array.of(0, 0x0a, 0xff))).toBe("00:0A:FF");
    expect(fingerprintHex(new Uint8Array(0))).toBe("");
  });
});

describe("against node:crypto on random inputs", () => {
  it("keys, transcript, bindings and pairing code agree", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 96 }),
        fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s === Buffer.from(s, "utf8").toString("utf8")),
        fc.uint8Array({ minLength: 1, maxLength: 200 }),
        fc.uint8Array({ minLength: 1, maxLength: 400 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }),
        async (sessionKey, session, ke1, ke2, exporter, caDer, keyDer, when) => {
          const input = {
            session,
            ke1,
            ke2,
            exporter,
            caFingerprint: fingerprintHex(caDer),
            clientKeyFingerprint: fingerprintHex(keyDer),
            serverTime: when.toISOString(),
          };
          const keys = await deriveBindingKeys(sessionKey);
          const node = nodeKeys(sessionKey);
          expect(hex(keys.kc)).toBe(hex(node.kc));
          expect(hex(keys.ks)).toBe(hex(node.ks));
          expect(hex(keys.pairingKey)).toBe(hex(node.pairingKey));
          const t = await bindingTranscript(input);
          expect(hex(t)).toBe(hex(nodeTranscript(input)));
          expect(await clientBinding(keys.kc, t)).toBe(createHmac("sha256", node.kc).update(t).digest("base64"));
          expect(await serverBinding(keys.ks, t)).toBe(createHmac("sha256", node.ks).update(t).digest("base64"));
          expect(await derivePairingCode(keys.pairingKey, input.clientKeyFingerprint)).toBe(
            nodePairingCode(node.pairingKey, input.clientKeyFingerprint),
          );
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("verifyBinding", () => {
  it("accepts the right MAC and refuses every other one", async () => {
    const keys = await deriveBindingKeys(SESSION_KEY);
    const t = await bindingTranscript(transcriptInput());
    expect(await verifyBinding(keys.kc, t, VECTORS.clientBinding)).toBe(true);
    expect(await verifyBinding(keys.ks, t, VECTORS.serverBinding)).toBe(true);
    expect(await verifyBinding(keys.kc, t, ` ${VECTORS.clientBinding} `)).toBe(true);
    // The other side's MAC, a wrong key, another transcript, malformed and absent values.
    expect(await verifyBinding(keys.kc, t, VECTORS.serverBinding)).toBe(false);
    expect(await verifyBinding(keys.ks, t, VECTORS.clientBinding)).toBe(false);
    const other = await bindingTranscript({ ...transcriptInput(), exporter: seq(32, 201) });
    expect(await verifyBinding(keys.kc, other, VECTORS.clientBinding)).toBe(false);
    for (const bad of [undefined, null, "", "not base64!", VECTORS.clientBinding.slice(0, -4), toBase64(seq(31, 0))]) {
      expect(await verifyBinding(keys.kc, t, bad)).toBe(false);
    }
  });

  it("refuses any single flipped bit", async () => {
    const keys = await deriveBindingKeys(SESSION_KEY);
    const t = await bindingTranscript(transcriptInput());
    const mac = fromBase64(VECTORS.clientBinding);
    for (let bit = 0; bit < 256; bit += 7) {
      const m = new Uint8Array(mac);
      m[bit >> 3]! ^= 1 << (bit & 7);
      expect(await verifyBinding(keys.kc, t, toBase64(m))).toBe(false);
    }
  });

  it("a relayed connection (another exporter), another client key or another founder's time gives another transcript", async () => {
    const base = hex(await bindingTranscript(transcriptInput()));
    expect(hex(await bindingTranscript({ ...transcriptInput(), exporter: randomBytes(32) }))).not.toBe(base);
    expect(hex(await bindingTranscript({ ...transcriptInput(), clientKeyFingerprint: CA_FP }))).not.toBe(base);
    expect(hex(await bindingTranscript({ ...transcriptInput(), ke2: seq(320, 8) }))).not.toBe(base);
    // The founder's time, exactly as carried: another instant, or the same one spelt otherwise.
    expect(hex(await bindingTranscript({ ...transcriptInput(), serverTime: "2023-11-29T14:00:00.000Z" }))).not.toBe(
      base,
    );
    expect(hex(await bindingTranscript({ ...transcriptInput(), serverTime: "2026-11-29T14:00:00Z" }))).not.toBe(base);
    // Lower-case fingerprints are the same fingerprints.
    expect(hex(await bindingTranscript({ ...transcriptInput(), caFingerprint: CA_FP.toLowerCase() }))).toBe(base);
  });

  it("refuses malformed transcript inputs", async () => {
    const bad = [
      { exporter: seq(31, 0) },
      { exporter: seq(33, 0) },
      { caFingerprint: "69:59" },
      { clientKeyFingerprint: KEY_FP.replace(/:/g, "") },
      { session: "" },
      { ke1: new Uint8Array(0) },
      { serverTime: "" },
    ];
    for (const patch of bad) {
      const error = await bindingTranscript({ ...transcriptInput(), ...patch }).catch((e: unknown) => e);
      expect(StratumError.is(error)).toBe(true);
      expect((error as StratumError).code).toBe("INVALID_ARGUMENT");
    }
    await expect(deriveBindingKeys(new Uint8Array(0))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});

describe("pairing codes", () => {
  it("formats and parses tolerantly", () => {
    expect(formatPairingCode("NGWPRR")).toBe("NGW-PRR");
    expect(formatPairingCode("ngw prr")).toBe("NGW-PRR");
    expect(parsePairingCode("4F7-K2Q")).toBe("4F7K2Q"); // the seed's form
    expect(parsePairingCode(" o1l-I0o ")).toBe("011100");
  });

  it("parse inverts format for every code", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...CROCKFORD_ALPHABET), { minLength: 6, maxLength: 6 }), (s) => {
        const raw = s.join("");
        expect(parsePairingCode(formatPairingCode(raw))).toBe(raw);
        expect(parsePairingCode(raw.toLowerCase())).toBe(raw);
      }),
    );
  });

  it("refuses malformed codes", () => {
    const refusal = (input: string) => {
      try {
        parsePairingCode(input);
      } catch (e) {
        expect(e).toBeInstanceOf(PairingCodeError);
        expect((e as PairingCodeError).code).toBe("PAIRING_CODE_MALFORMED");
        return e as PairingCodeError;
      }
      throw new Error("expected a refusal");
    };
    expect(refusal("").reason).toBe("empty");
    expect(refusal("ABC-DE").reason).toBe("length");
    expect(refusal("ABC-DEFG").reason).toBe("length");
    const e = refusal("ABC-DUF");
    expect(e.reason).toBe("character");
    expect(e.position).toBe(6);
    expect(e.character).toBe("U");
  });
});

describe("base64", () => {
  it("round-trips and matches Buffer", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (b) => {
        expect(toBase64(b)).toBe(Buffer.from(b).toString("base64"));
        expect(toBase64Url(b)).toBe(Buffer.from(b).toString("base64url"));
        expect(hex(fromBase64(toBase64(b)))).toBe(hex(b));
        expect(hex(fromBase64Url(toBase64Url(b)))).toBe(hex(b));
        expect(hex(fromBase64Url(toBase64(b).replace(/\+/g, "-").replace(/\//g, "_")))).toBe(hex(b));
      }),
    );
  });

  it("is strict", () => {
    for (const bad of ["A", "AA", "AAA", "AA=A", "A===", "AB==", "AA-_", " AAAA", "AAAA\n", "AAA$", "===="]) {
      expect(() => fromBase64(bad), bad).toThrow(StratumError);
    }
    for (const bad of ["A", "AB", "AA+/", "AA=", "AAAAA"]) {
      expect(() => fromBase64Url(bad), bad).toThrow(StratumError);
    }
    expect(hex(fromBase64(""))).toBe("");
    expect(hex(fromBase64("AA=="))).toBe("00");
    expect(hex(fromBase64Url("AA"))).toBe("00");
  });
});

describe("every input of the binding is checked, and a refusal names it", () => {
  /** The INVALID_ARGUMENT a promise rejects with: its message. */
  const invalidArgument = async (run: () => Promise<unknown>): Promise<string> => {
    const error = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(StratumError.is(error), String(error)).toBe(true);
    expect((error as StratumError).code).toBe("INVALID_ARGUMENT");
    return (error as StratumError).message;
  };
  const transcriptOf = (patch: Record<string, unknown>) => () =>
    bindingTranscript({ ...transcriptInput(), ...patch } as Parameters<typeof bindingTranscript>[0]);

  it("the session and the founder's time are non-empty strings", async () => {
    for (const session of ["", undefined, 7]) {
      expect(await invalidArgument(transcriptOf({ session }))).toBe("the PAKE session is empty");
    }
    for (const serverTime of ["", undefined, Date.parse(SERVER_TIME)]) {
      expect(await invalidArgument(transcriptOf({ serverTime }))).toBe("the PAKE answer's serverTime is empty");
    }
  });

  it("KE1 and KE2 are non-empty bytes", async () => {
    for (const ke1 of [new Uint8Array(0), "ke1", undefined]) {
      expect(await invalidArgument(transcriptOf({ ke1 }))).toBe("ke1 is empty");
    }
    for (const ke2 of [new Uint8Array(0), "ke2", undefined]) {
      expect(await invalidArgument(transcriptOf({ ke2 }))).toBe("ke2 is empty");
    }
  });

  it("the TLS exporter is exactly 32 bytes", async () => {
    for (const exporter of [seq(31, 0), seq(33, 0), "x".repeat(32), undefined]) {
      expect(await invalidArgument(transcriptOf({ exporter }))).toBe("the TLS exporter must be 32 bytes");
    }
  });

  it("a fingerprint is exactly 32 colon-hex pairs, and the refusal names which one is wrong", async () => {
    const notFingerprints = [
      `${CA_FP}:00`, // 33 pairs
      `00:${CA_FP}`,
      CA_FP.slice(3), // 31 pairs
      `X${CA_FP}`,
      `${CA_FP}X`,
      `${CA_FP}\n`,
      CA_FP.replace(/:/g, "-"),
      CA_FP.replace("69", "6G"),
      undefined,
      32,
    ];
    for (const caFingerprint of notFingerprints) {
      expect(await invalidArgument(transcriptOf({ caFingerprint }))).toBe(
        "caFingerprint is not a SHA-256 fingerprint in colon hex (32 pairs like 7D:9F:…)",
      );
    }
    for (const clientKeyFingerprint of notFingerprints) {
      expect(await invalidArgument(transcriptOf({ clientKeyFingerprint }))).toMatch(
        /^clientKeyFingerprint is not a SHA-256 fingerprint/,
      );
    }
    const keys = await deriveBindingKeys(SESSION_KEY);
    expect(await invalidArgument(() => derivePairingCode(keys.pairingKey, `${KEY_FP}:00`))).toMatch(
      /^clientKeyFingerprint is not a SHA-256 fingerprint/,
    );
    // either case is the same fingerprint
    expect(await derivePairingCode(keys.pairingKey, KEY_FP.toLowerCase())).toBe(VECTORS.pairingCode);
  });

  it("the session key and every HMAC key are non-empty bytes", async () => {
    for (const key of [new Uint8Array(0), "key", undefined]) {
      expect(await invalidArgument(() => deriveBindingKeys(key as Uint8Array))).toBe("the OPAQUE session key is empty");
    }
    const t = await bindingTranscript(transcriptInput());
    for (const key of [new Uint8Array(0), "key" as unknown as Uint8Array]) {
      expect(await invalidArgument(() => clientBinding(key, t))).toBe("the HMAC key is empty");
      expect(await invalidArgument(() => serverBinding(key, t))).toBe("the HMAC key is empty");
      expect(await invalidArgument(() => verifyBinding(key, t, VECTORS.clientBinding))).toBe("the HMAC key is empty");
      expect(await invalidArgument(() => derivePairingCode(key, KEY_FP))).toBe("the HMAC key is empty");
    }
  });
});

describe("a pairing code refusal says what is wrong", () => {
  const refusal = (input: unknown): PairingCodeError => {
    try {
      parsePairingCode(input as string);
    } catch (e) {
      expect(e).toBeInstanceOf(PairingCodeError);
      return e as PairingCodeError;
    }
    throw new Error("expected a refusal");
  };

  it("nothing, or not a string, is `empty`", () => {
    for (const input of ["", " - ", undefined, null, 123456]) {
      const e = refusal(input);
      expect(e.reason).toBe("empty");
      expect(e.message).toBe("no pairing code was given");
    }
  });

  it("a wrong length says how many symbols a pairing code has", () => {
    expect(refusal("ABC-DEFG").message).toBe("a pairing code has 6 symbols (XXX-XXX), this one has 7");
  });

  it("a character outside the alphabet is named with its position", () => {
    expect(refusal("ABC-DUF").message).toBe(
      'the character "U" (U+0055) at position 6 is not part of a pairing code (Crockford base32: 0-9 and A-Z without U)',
    );
  });
});
