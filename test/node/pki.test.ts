import { createHash, X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createMachineIdentity } from "../../src/node/identity.js";
import {
  caFingerprint,
  ipBytes,
  LISTENER_ROLE_URI,
  spkiFingerprint,
  verifyListenerCertificate,
} from "../../src/protocol/pki.js";
import { loadX509 } from "../../src/protocol/x509.js";
import { listenerRefusal as rejection } from "../helpers/pki.js";
import { createClusterCa, issueListenerCertificate, issueNodeCertificate } from "../../src/server/ca.js";
import { StratumError } from "../../src/errors/index.js";

const x509 = await loadX509();

const DAY = 86_400_000;

function sanOf(der: Uint8Array) {
  return new x509.X509Certificate(new Uint8Array(der))
    .getExtension(x509.SubjectAlternativeNameExtension)!
    .names.items.map((n) => [n.type, n.value]);
}

describe("pki", () => {
  it("loads @peculiar/x509 without leaving a Reflect polyfill behind", () => {
    expect((Reflect as unknown as Record<string, unknown>).getMetadata).toBeUndefined();
    expect(typeof x509.X509Certificate).toBe("function");
  });

  it("creates a P-256 CA with CA constraints and a fingerprint like Node's", async () => {
    const ca = await createClusterCa({ commonName: "test, cluster", validDays: 10 });
    const cert = new X509Certificate(ca.certDer);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe("CN=test\\, cluster");
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(cert.verify(cert.publicKey)).toBe(true);
    // Node's fingerprint256 uses the same upper-case colon format.
    expect(ca.fingerprint).toBe(cert.fingerprint256);
    expect(caFingerprint(ca.certDer)).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    const parsed = new x509.X509Certificate(ca.certPem);
    const ku = parsed.getExtension(x509.KeyUsagesExtension)!;
    expect(ku.critical).toBe(true);
    expect(ku.usages).toBe(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    expect(parsed.getExtension(x509.BasicConstraintsExtension)!.critical).toBe(true);
    expect(Date.parse(cert.validTo) - Date.now()).toBeGreaterThan(9 * DAY);
    expect(Date.parse(cert.validTo) - Date.now()).toBeLessThan(11 * DAY);
  });

  it("issues a listener leaf with IP/DNS SANs, the role URI and serverAuth", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: ["10.0.0.5", "[2001:DB8::1]", "API.Example.org."] });
    expect(sanOf(leaf.certDer)).toEqual([
      ["ip", "10.0.0.5"],
      ["ip", "2001:db8::1"],
      ["dns", "api.example.org"],
      ["url", LISTENER_ROLE_URI],
    ]);
    const cert = new X509Certificate(leaf.certDer);
    expect(cert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"]);
    expect(cert.ca).toBe(false);
    expect(cert.verify(new X509Certificate(ca.certDer).publicKey)).toBe(true);
    expect(cert.checkPrivateKey((await import("node:crypto")).createPrivateKey(leaf.keyPem!))).toBe(true);
    expect(leaf.keyFingerprint).toBe(spkiFingerprint(leaf.certPem));
    await expect(issueListenerCertificate(ca, { hosts: [] })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(issueListenerCertificate(ca, { hosts: ["bad host"] })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });

  it("issues node leaves that never carry the listener role, also for a given public key", async () => {
    const ca = await createClusterCa();
    const node = await issueNodeCertificate(ca, { nodeId: "node-1", hosts: ["10.0.0.7"] });
    expect(sanOf(node.certDer)).toEqual([
      ["ip", "10.0.0.7"],
      ["url", "urn:stratum:node:node-1"],
    ]);
    expect(new X509Certificate(node.certDer).keyUsage.sort()).toEqual(["1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2"]);
    expect(node.keyPem).toContain("PRIVATE KEY");

    const machine = await createMachineIdentity();
    const spkiPem = new X509Certificate(machine.certPem).publicKey.export({ type: "spki", format: "pem" }).toString();
    const own = await issueNodeCertificate(ca, { nodeId: "node-2", publicKey: spkiPem });
    expect(own.keyPem).toBeUndefined();
    expect(own.keyFingerprint).toBe(machine.keyFingerprint);
    expect(new X509Certificate(own.certDer).verify(new X509Certificate(ca.certDer).publicKey)).toBe(true);

    await expect(issueNodeCertificate(ca, { nodeId: "a:b" })).rejects.toSatisfy(
      (e: unknown) => StratumError.is(e) && e.code === "INVALID_ARGUMENT",
    );
  });

  it("computes the key fingerprint over the SPKI DER as encoded in the certificate", async () => {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] });
    const spki = new X509Certificate(leaf.certDer).publicKey.export({ type: "spki", format: "der" });
    const expected = createHash("sha256").update(spki).digest("hex").toUpperCase().match(/../g)!.join(":");
    expect(spkiFingerprint(leaf.certDer)).toBe(expected);
    expect(spkiFingerprint(leaf.certPem)).toBe(expected);
    expect(spkiFingerprint(leaf.certDer)).not.toBe(caFingerprint(leaf.certDer));
  });

  it("compares IP literals as addresses", () => {
    expect(ipBytes("::1")).toEqual(ipBytes("0:0:0:0:0:0:0:1"));
    expect(ipBytes("[2001:DB8:0::1]")).toEqual(ipBytes("2001:db8::0:1"));
    expect(ipBytes("::ffff:10.0.0.1")).toEqual(ipBytes("10.0.0.1"));
    expect(ipBytes("fe80::1%eth0")).toEqual(ipBytes("fe80::1"));
    expect(ipBytes("1::")).toEqual(Uint8Array.from([0, 1, ...new Array<number>(14).fill(0)]));
    expect(ipBytes("example.org")).toBeUndefined();
    expect(ipBytes("::2")).not.toEqual(ipBytes("::1"));
  });

  describe("verifyListenerCertificate", () => {
    it("accepts a good leaf by IP (any IPv6 spelling) and by DNS name", async () => {
      const ca = await createClusterCa();
      const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1", "::1", "Join.Example"] });
      for (const dialledHost of ["127.0.0.1", "::1", "[0:0:0:0:0:0:0:1]", "join.example", "JOIN.EXAMPLE."]) {
        expect(() =>
          verifyListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost }),
        ).not.toThrow();
      }
      // The root sent along by the server is ignored, not mistaken for an intermediate.
      expect(() =>
        verifyListenerCertificate({ chain: [leaf.certDer, ca.certDer], caDer: ca.certDer, dialledHost: "::1" }),
      ).not.toThrow();
    });

    it("rejects a leaf of another CA", async () => {
      const ca = await createClusterCa();
      const other = await createClusterCa({ commonName: "Stratum cluster CA" });
      const leaf = await issueListenerCertificate(other, { hosts: ["127.0.0.1"] });
      const error = rejection(() =>
        verifyListenerCertificate({
          chain: [leaf.certDer, other.certDer],
          caDer: ca.certDer,
          dialledHost: "127.0.0.1",
        }),
      );
      expect(error.check).toBe("chain");
      expect(error.message).toContain("not signed by the pinned cluster CA");
    });

    it("rejects an expired or not yet valid leaf", async () => {
      const ca = await createClusterCa();
      const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1"], validDays: 1 });
      const later = rejection(() =>
        verifyListenerCertificate({
          chain: [leaf.certDer],
          caDer: ca.certDer,
          dialledHost: "127.0.0.1",
          now: new Date(Date.now() + 2 * DAY),
        }),
      );
      expect(later.check).toBe("validity");
      expect(later.message).toContain("the leaf is not valid now");
      const earlier = rejection(() =>
        verifyListenerCertificate({
          chain: [leaf.certDer],
          caDer: ca.certDer,
          dialledHost: "127.0.0.1",
          now: new Date(Date.now() - DAY),
        }),
      );
      expect(earlier.check).toBe("validity");
    });

    it("rejects a leaf whose SANs do not name the dialled host or IP", async () => {
      const ca = await createClusterCa();
      const leaf = await issueListenerCertificate(ca, { hosts: ["10.0.0.5", "join.example"] });
      for (const dialledHost of ["10.0.0.6", "::ffff:10.0.0.6", "other.example", "join.example.evil", "::1"]) {
        const error = rejection(() =>
          verifyListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost }),
        );
        expect(error.check).toBe("name");
        expect(error.message).toContain("do not name the dialled");
      }
      // An IP SAN never satisfies a dialled name that spells the same address as text, and vice versa.
      const named = await issueListenerCertificate(ca, { hosts: ["localhost"] });
      expect(
        rejection(() =>
          verifyListenerCertificate({ chain: [named.certDer], caDer: ca.certDer, dialledHost: "127.0.0.1" }),
        ).check,
      ).toBe("name");
    });

    it("rejects a node transport leaf: it lacks the listener role", async () => {
      const ca = await createClusterCa();
      const node = await issueNodeCertificate(ca, { nodeId: "node-1", hosts: ["127.0.0.1"] });
      const error = rejection(() =>
        verifyListenerCertificate({ chain: [node.certDer], caDer: ca.certDer, dialledHost: "127.0.0.1" }),
      );
      expect(error.check).toBe("role");
      expect(error.message).toContain(LISTENER_ROLE_URI);
    });

    it("rejects an empty chain", async () => {
      const ca = await createClusterCa();
      expect(
        rejection(() => verifyListenerCertificate({ chain: [], caDer: ca.certDer, dialledHost: "127.0.0.1" })).check,
      ).toBe("missing");
      expect(
        rejection(() => verifyListenerCertificate({ chain: [ca.certDer], caDer: ca.certDer, dialledHost: "127.0.0.1" }))
          .check,
      ).toBe("missing");
    });

    it("accepts one intermediate the CA signed, and only that", async () => {
      const ca = await createClusterCa();
      // An intermediate CA made by hand: the SDK itself never issues one.
      const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
        "sign",
        "verify",
      ])) as CryptoKeyPair;
      const caKey = await crypto.subtle.importKey(
        "pkcs8",
        x509.PemConverter.decodeFirst(ca.keyPem),
        { name: "ECDSA", namedCurve: "P-256" },
        false,
        ["sign"],
      );
      const makeIntermediate = (signingKey: CryptoKey) =>
        x509.X509CertificateGenerator.create({
          subject: "CN=intermediate",
          issuer: new x509.X509Certificate(ca.certPem).subject,
          publicKey: keys.publicKey,
          signingKey,
          signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
          notBefore: new Date(Date.now() - 60_000),
          notAfter: new Date(Date.now() + DAY),
          extensions: [
            new x509.BasicConstraintsExtension(true, 0, true),
            new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
          ],
        });
      const intermediate = await makeIntermediate(caKey);
      const intermediateCa = {
        certPem: intermediate.toString("pem"),
        keyPem: x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
      };
      const leaf = await issueListenerCertificate(intermediateCa, { hosts: ["127.0.0.1"] });
      const intermediateDer = new Uint8Array(intermediate.rawData);
      expect(() =>
        verifyListenerCertificate({
          chain: [leaf.certDer, intermediateDer, ca.certDer],
          caDer: ca.certDer,
          dialledHost: "127.0.0.1",
        }),
      ).not.toThrow();
      // Without the intermediate, or with one the CA did not sign, the chain breaks.
      expect(
        rejection(() =>
          verifyListenerCertificate({ chain: [leaf.certDer], caDer: ca.certDer, dialledHost: "127.0.0.1" }),
        ).check,
      ).toBe("chain");
      const forged = await makeIntermediate(keys.privateKey);
      expect(
        rejection(() =>
          verifyListenerCertificate({
            chain: [leaf.certDer, new Uint8Array(forged.rawData)],
            caDer: ca.certDer,
            dialledHost: "127.0.0.1",
          }),
        ).check,
      ).toBe("chain");
    });
  });
});
