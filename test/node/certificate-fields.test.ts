// The two fields the joiner reads straight from a certificate's DER (src/protocol/certificate-fields.ts):
// the SubjectPublicKeyInfo as encoded, and the subjectAltName entries. Held against Node's own
// reading of the same certificates, including a key whose encoding Node would change.
import { createECDH, createHash, createPublicKey, X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { subjectAltNames, subjectPublicKeyInfo } from "../../src/protocol/certificate-fields.js";
import { createMachineIdentity } from "../../src/node/identity.js";
import { spkiFingerprint } from "../../src/protocol/pki.js";
import { createClusterCa, issueListenerCertificate, issueNodeCertificate } from "../../src/server/ca.js";

const sha256Hex = (bytes: Uint8Array) =>
  createHash("sha256").update(bytes).digest("hex").toUpperCase().match(/../g)!.join(":");

/** The SPKI DER of a P-256 public key with its point compressed (RFC 5480 allows either form). */
function compressedP256Spki(): Uint8Array {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  const point = ecdh.getPublicKey(undefined, "compressed");
  // SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) point }
  const header = Buffer.from("3039301306072a8648ce3d020106082a8648ce3d030107032200", "hex");
  return new Uint8Array(Buffer.concat([header, point]));
}

describe("certificate fields", () => {
  it("reads the SPKI of Ed25519, P-256 CA and leaf certificates as Node exports it", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] });
    const machine = await createMachineIdentity();
    for (const pem of [ca.certPem, leaf.certPem, machine.certPem]) {
      const cert = new X509Certificate(pem);
      expect(Buffer.from(subjectPublicKeyInfo(new Uint8Array(cert.raw)))).toEqual(
        cert.publicKey.export({ type: "spki", format: "der" }),
      );
    }
  });

  it("fingerprints the SPKI exactly as the certificate encodes it, a compressed point too", async () => {
    const ca = await createClusterCa();
    const spki = compressedP256Spki();
    expect(createPublicKey({ key: Buffer.from(spki), format: "der", type: "spki" }).asymmetricKeyType).toBe("ec");
    const node = await issueNodeCertificate(ca, { nodeId: "node-c", publicKey: spki });
    expect(Buffer.from(subjectPublicKeyInfo(node.certDer))).toEqual(Buffer.from(spki));
    expect(spkiFingerprint(node.certDer)).toBe(sha256Hex(spki));
    // The founder's fingerprint of the leaf it issued is the joiner's.
    expect(node.keyFingerprint).toBe(sha256Hex(spki));
  });

  it("reads DNS, IP and URI names as Node lists them, and none from a certificate without any", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: ["10.0.0.5", "[2001:db8::1]", "Join.Example"] });
    const names = subjectAltNames(leaf.certDer);
    expect(names).toEqual([
      { type: "ip", bytes: Uint8Array.of(10, 0, 0, 5) },
      { type: "ip", bytes: Uint8Array.of(0x20, 0x01, 0x0d, 0xb8, ...new Array<number>(11).fill(0), 1) },
      { type: "dns", value: "join.example" },
      { type: "url", value: "urn:stratum:join-listener" },
    ]);
    expect(new X509Certificate(leaf.certDer).subjectAltName).toBe(
      "IP Address:10.0.0.5, IP Address:2001:DB8:0:0:0:0:0:1, DNS:join.example, URI:urn:stratum:join-listener",
    );
    // The CA has extensions, but no subjectAltName.
    expect(subjectAltNames(ca.certDer)).toEqual([]);
  });

  it("refuses DER that is cut short or is not a certificate, rather than reading past it", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] });
    const refusals: [Uint8Array, string][] = [
      [leaf.certDer.subarray(0, leaf.certDer.length - 40), "DER element longer than its container"],
      [leaf.certDer.subarray(0, 1), "truncated DER element"],
      [Uint8Array.of(0x30, 0x84, 0xff, 0xff, 0xff, 0xff), "DER element longer than its container"],
      [Uint8Array.of(0x04, 0x00), "the certificate's outer SEQUENCE is not where X.509 puts it"],
      [new Uint8Array(0), "truncated DER element"],
    ];
    for (const [bad, why] of refusals) {
      expect(() => subjectPublicKeyInfo(bad)).toThrow(why);
      expect(() => subjectAltNames(bad)).toThrow(why);
    }
  });
});
