// The forms src/protocol/pki.ts reads and writes before any certificate is judged: host
// spellings (brackets, zones, white space), IP literals as bytes, the SANs a leaf is issued
// for, PEM text and DN values. Each case is a spelling a caller or a founder really sends.
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { StratumError } from "../../src/errors/index.js";
import {
  dnValue,
  ipBytes,
  normalizePem,
  pemOf,
  sanEntries,
  spkiFingerprint,
  splitHost,
} from "../../src/protocol/pki.js";
import { createClusterCa } from "../../src/server/ca.js";

const bytes = (ip: string) => Array.from(ipBytes(ip) ?? []);

describe("splitHost", () => {
  it("strips white space, the brackets of [v6] (both, never one) and a %zone, and names the family", () => {
    expect(splitHost("  127.0.0.1 ")).toEqual({ bare: "127.0.0.1", family: 4 });
    expect(splitHost("[::1]")).toEqual({ bare: "::1", family: 6 });
    expect(splitHost("[fe80::1%eth0]")).toEqual({ bare: "fe80::1", family: 6 });
    expect(splitHost("fe80::1%eth0")).toEqual({ bare: "fe80::1", family: 6 });
    // One bracket alone is not a bracketed literal: the text stays as it is, and names no IP.
    expect(splitHost("[::1")).toEqual({ bare: "[::1", family: 0 });
    expect(splitHost("::1]")).toEqual({ bare: "::1]", family: 0 });
    // A name keeps what follows a '%': only an IP literal has a zone.
    expect(splitHost("host%eth0")).toEqual({ bare: "host%eth0", family: 0 });
    expect(splitHost("example.org")).toEqual({ bare: "example.org", family: 0 });
  });
});

describe("ipBytes", () => {
  it("gives 4 bytes for IPv4 and for an IPv4-mapped IPv6 address, 16 for any other IPv6 address", () => {
    expect(bytes("127.0.0.2")).toEqual([127, 0, 0, 2]);
    expect(bytes("::ffff:127.0.0.2")).toEqual([127, 0, 0, 2]);
    expect(bytes("::ffff:7f00:2")).toEqual([127, 0, 0, 2]);
    expect(bytes("[0:0:0:0:0:FFFF:7F00:2]")).toEqual([127, 0, 0, 2]);
    expect(bytes("::1")).toEqual([...new Array(15).fill(0), 1]);
    expect(bytes("64:ff9b::192.0.2.1")).toEqual([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1]);
    // Near misses of the mapped prefix ::ffff:0:0/96 are addresses of their own.
    expect(bytes("::ff:102:304")).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3, 4]);
    expect(bytes("::ff00:102:304")).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0, 1, 2, 3, 4]);
    expect(bytes("1::ffff:102:304")).toEqual([0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
    expect(ipBytes("example.org")).toBeUndefined();
  });
});

describe("sanEntries", () => {
  it("issues IP SANs as addresses and DNS SANs lower-cased, trimmed and without a trailing dot", () => {
    expect(sanEntries(["127.0.0.1", "[::ffff:127.0.0.2]", " Join.Example.ORG. ", "a.b", "x"])).toEqual([
      { type: "ip", value: "127.0.0.1" },
      { type: "ip", value: "0:0:0:0:0:ffff:7f00:2" },
      { type: "dns", value: "join.example.org" },
      { type: "dns", value: "a.b" },
      { type: "dns", value: "x" },
    ]);
  });

  it("refuses what is no host name, naming it: bad characters, a label over 63, a name over 253", () => {
    const longest = ["a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61)].join(".");
    expect(longest).toHaveLength(253);
    expect(sanEntries([longest])).toEqual([{ type: "dns", value: longest }]);
    for (const bad of [`${longest}e`, `${"a".repeat(64)}.org`, "a,b", "-a.org", "a-.org", "a..org", ""]) {
      let error: unknown;
      try {
        sanEntries([bad]);
      } catch (caught) {
        error = caught;
      }
      expect(error, bad).toBeInstanceOf(StratumError);
      expect((error as StratumError).code).toBe("INVALID_ARGUMENT");
      expect((error as StratumError).message).toBe(`not a DNS name or IP address: ${JSON.stringify(bad)}`);
    }
  });
});

describe("PEM and DN text", () => {
  it("normalizePem turns CRLF into LF, trims and ends in one newline", () => {
    expect(normalizePem("\r\n-----BEGIN X-----\r\nAAAA\r\n-----END X-----\r\n\r\n")).toBe(
      "-----BEGIN X-----\nAAAA\n-----END X-----\n",
    );
  });

  it("pemOf writes base64 in lines of 64, no empty line when the last one is full", () => {
    const full = pemOf(new Uint8Array(96), "X").split("\n");
    expect(full).toEqual(["-----BEGIN X-----", "A".repeat(64), "A".repeat(64), "-----END X-----", ""]);
    const short = pemOf(new Uint8Array(51).buffer, "X").split("\n");
    expect(short).toEqual(["-----BEGIN X-----", "A".repeat(64), "AAAA", "-----END X-----", ""]);
  });

  it("dnValue escapes RFC 4514's specials, and a space only at either end", () => {
    expect(dnValue('a,b+c"d<e>f;g=h#i\\j')).toBe('a\\,b\\+c\\"d\\<e\\>f\\;g\\=h\\#i\\\\j');
    expect(dnValue(" a b ")).toBe("\\ a b\\ ");
    expect(dnValue("a b")).toBe("a b");
  });
});

describe("spkiFingerprint", () => {
  it("refuses what is no certificate with INVALID_ARGUMENT, saying which form it was given", () => {
    for (const [input, message] of [
      ["-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not a PEM certificate"],
      [new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x01]), "not a certificate"],
    ] as const) {
      let error: unknown;
      try {
        spkiFingerprint(input);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(StratumError);
      expect((error as StratumError).code).toBe("INVALID_ARGUMENT");
      expect((error as StratumError).message).toBe(message);
      expect((error as StratumError).cause).toBeInstanceOf(Error);
    }
  });

  it("refuses a certificate OpenSSL reads but whose bytes are not DER (an indefinite-length TBS)", async () => {
    const { certDer } = await createClusterCa();
    // 30 82 LL LL | TBS: 30 82 LL LL body | algorithm, signature
    const tbsLength = (certDer[6]! << 8) | certDer[7]!;
    const inner = Buffer.concat([
      Buffer.from([0x30, 0x80]),
      certDer.subarray(8, 8 + tbsLength),
      Buffer.from([0, 0]),
      certDer.subarray(8 + tbsLength),
    ]);
    const ber = Buffer.concat([Buffer.from([0x30, 0x82, inner.length >> 8, inner.length & 0xff]), inner]);
    // OpenSSL keeps the TBS as it was read, so the bytes it hands back are still BER.
    expect(new X509Certificate(ber).raw.subarray(4, 6)).toEqual(Buffer.from([0x30, 0x80]));
    let error: unknown;
    try {
      spkiFingerprint(ber);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(StratumError);
    expect((error as StratumError).code).toBe("INVALID_ARGUMENT");
    expect((error as StratumError).message).toBe("not a certificate");
    expect((error as StratumError).cause).toBeInstanceOf(Error);
  });
});
