// What the listener check refuses and how it says so, on real certificates of a real CA: a
// pinned CA or a leaf that cannot be parsed, an empty chain, an intermediate of the CA that did
// not sign the leaf, SANs that name another address, the role URI of the right kind only, and
// the validity dates taken inclusively.
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { inspectListenerCertificate, verifyListenerCertificate } from "../../src/protocol/pki.js";
import { loadX509 } from "../../src/protocol/x509.js";
import { createClusterCa, issueListenerCertificate, type ClusterCa } from "../../src/server/ca.js";
import type * as X509 from "@peculiar/x509";
import { listenerRefusal as refusal } from "../helpers/pki.js";

const x509 = await loadX509();
const HOST = "127.0.0.1";
const EC = { name: "ECDSA", namedCurve: "P-256" } as const;

/** A leaf `ca` signs with exactly `extensions` (no others), valid from an hour ago for a day. */
async function leafWith(ca: ClusterCa, extensions: X509.Extension[], isCa = false) {
  const keys = (await crypto.subtle.generateKey(EC, true, ["sign", "verify"])) as CryptoKeyPair;
  const caKey = await crypto.subtle.importKey("pkcs8", x509.PemConverter.decodeFirst(ca.keyPem), EC, false, ["sign"]);
  const cert = await x509.X509CertificateGenerator.create({
    subject: "CN=leaf",
    issuer: new x509.X509Certificate(ca.certPem).subject,
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    notBefore: new Date(Date.now() - 3_600_000),
    notAfter: new Date(Date.now() + 86_400_000),
    extensions: isCa ? [new x509.BasicConstraintsExtension(true, 0, true), ...extensions] : extensions,
  });
  return new Uint8Array(cert.rawData);
}

const sans = (names: X509.JsonGeneralName[]) => new x509.SubjectAlternativeNameExtension(names);

describe("the listener check", () => {
  it("refuses a pinned CA or a leaf it cannot parse, and an empty chain, saying which", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: [HOST] });
    const garbage = new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x01]);
    let error = refusal(() => verifyListenerCertificate({ chain: [leaf.certDer], caDer: garbage, dialledHost: HOST }));
    expect(error.check).toBe("chain");
    expect(error.message).toBe("listener certificate: the pinned CA certificate cannot be parsed");
    expect(error.cause).toBeInstanceOf(Error);
    error = refusal(() => verifyListenerCertificate({ chain: [garbage], caDer: ca.certDer, dialledHost: HOST }));
    expect(error.check).toBe("missing");
    expect(error.message).toBe("listener certificate: the listener's certificate cannot be parsed");
    expect(error.cause).toBeInstanceOf(Error);
    for (const chain of [[], [ca.certDer]]) {
      error = refusal(() => verifyListenerCertificate({ chain, caDer: ca.certDer, dialledHost: HOST }));
      expect(error.check).toBe("missing");
      expect(error.message).toBe("listener certificate: the listener presented no certificate");
    }
  });

  it("takes an intermediate of the CA only for a leaf it signed: one riding along lends another CA's leaf nothing", async () => {
    const ca = await createClusterCa();
    const intermediate = await leafWith(ca, [], true);
    const attackerCa = await createClusterCa();
    const attackerLeaf = await issueListenerCertificate(attackerCa, { hosts: [HOST] });
    const error = refusal(() =>
      verifyListenerCertificate({ chain: [attackerLeaf.certDer, intermediate], caDer: ca.certDer, dialledHost: HOST }),
    );
    expect(error.check).toBe("chain");
  });

  it("compares IP SANs as whole addresses and says whether it was the IP or the host it did not find", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: [HOST, "join.example.org"] });
    const check = (dialledHost: string) =>
      refusal(() => verifyListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost }));
    expect(check("127.0.0.2").message).toBe("listener certificate: its SANs do not name the dialled IP 127.0.0.2");
    // 7f00:1:: begins with the 4 bytes of 127.0.0.1: a prefix is not the address.
    const v6 = check("[7f00:1::]");
    expect(v6.check).toBe("name");
    expect(v6.message).toBe("listener certificate: its SANs do not name the dialled IP 7f00:1::");
    expect(check("other.example.org").message).toBe(
      "listener certificate: its SANs do not name the dialled host other.example.org",
    );
    expect(() =>
      verifyListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost: " JOIN.example.org. " }),
    ).not.toThrow();
  });

  it("refuses a leaf whose subjectAltName cannot be parsed", async () => {
    const ca = await createClusterCa();
    // GeneralNames in BER, of indefinite length: OpenSSL reads it, it is not the DER X.509 asks for.
    const broken = new x509.Extension(
      "2.5.29.17",
      false,
      new Uint8Array([0x30, 0x80, 0x87, 0x04, 127, 0, 0, 1, 0x00, 0x00]),
    );
    const leaf = await leafWith(ca, [broken]);
    const error = refusal(() => verifyListenerCertificate({ chain: [leaf], caDer: ca.certDer, dialledHost: HOST }));
    expect(error.check).toBe("name");
    expect(error.message).toBe("listener certificate: the leaf's subjectAltName cannot be parsed");
    expect(error.cause).toBeInstanceOf(Error);
  });

  it("takes the role only as the URI SAN urn:stratum:join-listener, not that text in another kind of name", async () => {
    const ca = await createClusterCa();
    const role = "urn:stratum:join-listener";
    const good = await leafWith(ca, [
      sans([
        { type: "ip", value: HOST },
        { type: "url", value: role },
      ]),
    ]);
    expect(() => verifyListenerCertificate({ chain: [good], caDer: ca.certDer, dialledHost: HOST })).not.toThrow();
    for (const names of [
      [{ type: "email", value: role }],
      [{ type: "url", value: `${role}:x` }],
      [{ type: "url", value: "urn:stratum:node:n1" }],
    ] as X509.JsonGeneralName[][]) {
      const leaf = await leafWith(ca, [sans([{ type: "ip", value: HOST }, ...names])]);
      const error = refusal(() => verifyListenerCertificate({ chain: [leaf], caDer: ca.certDer, dialledHost: HOST }));
      expect(error.check).toBe("role");
      expect(error.message).toBe(`listener certificate: it lacks the listener role (URI SAN ${role})`);
    }
  });

  it("takes a certificate's dates inclusively: valid at its notBefore and at its notAfter, not a second outside", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: [HOST], validDays: 2 });
    const checked = inspectListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost: HOST });
    const { validFrom, validTo } = new X509Certificate(leaf.certDer);
    const from = Date.parse(validFrom);
    const to = Date.parse(validTo);
    expect(checked.validAt(new Date(from))).toBe(true);
    expect(checked.validAt(new Date(to))).toBe(true);
    expect(checked.validAt(new Date(to + 1000))).toBe(false);
    expect(() => checked.assertValidAt(new Date(to))).not.toThrow();
    expect(refusal(() => checked.assertValidAt(new Date(to + 1000))).check).toBe("validity");
  });
});
