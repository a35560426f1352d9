import { createPrivateKey, generateKeyPairSync, X509Certificate } from "node:crypto";
import * as tls from "node:tls";
import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { StratumError } from "../../src/errors/index.js";
import { IdentityError } from "../../src/errors/join.js";
import {
  createMachineIdentity,
  createThrowawayIdentity,
  loadMachineIdentity,
  type MachineIdentity,
} from "../../src/node/identity.js";
import { peerKeyFingerprint, tlsServerOptions } from "../../src/server/tls.js";
import { createClusterCa, issueListenerCertificate } from "../../src/server/ca.js";
import { spkiFingerprint } from "../../src/protocol/pki.js";

const servers: tls.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A TLS 1.3 handshake presenting `identity`; what the server saw of the client key. */
async function handshake(
  identity: MachineIdentity,
): Promise<{ serverSaw: string | undefined; protocol: string | null }> {
  const ca = await createClusterCa();
  const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] });
  let serverSaw: string | undefined;
  const server = tls.createServer(tlsServerOptions({ certPem: leaf.certPem, keyPem: leaf.keyPem! }), (socket) => {
    serverSaw = peerKeyFingerprint(socket);
    socket.end("ok");
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const client = tls.connect({
    host: "127.0.0.1",
    port,
    cert: identity.certPem,
    key: identity.keyPem,
    rejectUnauthorized: false,
    minVersion: "TLSv1.3",
  });
  client.on("data", () => {});
  await new Promise<void>((resolve, reject) => {
    client.on("end", resolve);
    client.on("error", reject);
  });
  return { serverSaw, protocol: client.getProtocol() };
}

describe("machine identity", () => {
  it("defaults to Ed25519, which Node's TLS 1.3 accepts as a client certificate", async () => {
    const identity = await createMachineIdentity();
    const cert = new X509Certificate(identity.certPem);
    expect(cert.publicKey.asymmetricKeyType).toBe("ed25519");
    expect(cert.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2"]);
    expect(cert.checkPrivateKey(createPrivateKey(identity.keyPem))).toBe(true);
    expect(identity.keyFingerprint).toBe(spkiFingerprint(identity.certPem));
    // The handshake proves possession (CertificateVerify); the server sees exactly this key.
    const { serverSaw, protocol } = await handshake(identity);
    expect(protocol).toBe("TLSv1.3");
    expect(serverSaw).toBe(identity.keyFingerprint);
  });

  it("creates P-256 identities on request, also usable in a handshake", async () => {
    const identity = await createMachineIdentity({ algorithm: "P-256", commonName: "node a" });
    const cert = new X509Certificate(identity.certPem);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(cert.subject).toBe("CN=node a");
    expect((await handshake(identity)).serverSaw).toBe(identity.keyFingerprint);
  });

  it("never shows the private key in inspect, JSON, keys or spread, yet keyPem is readable", async () => {
    const identity = await createMachineIdentity();
    expect(identity.keyPem).toContain("-----BEGIN PRIVATE KEY-----");
    const body = identity.keyPem.split("\n")[1]!;
    for (const text of [
      inspect(identity),
      inspect(identity, { showHidden: true, depth: 5 }),
      JSON.stringify(identity),
      JSON.stringify({ nested: identity }),
      String(Object.keys(identity)),
    ]) {
      expect(text).not.toContain("PRIVATE KEY");
      expect(text).not.toContain(body);
    }
    expect(inspect(identity)).toContain(identity.keyFingerprint);
    expect(JSON.parse(JSON.stringify(identity))).toEqual({
      certPem: identity.certPem,
      keyFingerprint: identity.keyFingerprint,
    });
    expect({ ...identity }).not.toHaveProperty("keyPem");
  });

  it("loads a stored identity and refuses a key of another certificate", async () => {
    const a = await createMachineIdentity();
    const b = await createMachineIdentity();
    const loaded = loadMachineIdentity({ certPem: a.certPem, keyPem: a.keyPem });
    expect(loaded.keyFingerprint).toBe(a.keyFingerprint);
    expect(loaded.keyPem).toBe(a.keyPem);
    expect(JSON.stringify(loaded)).not.toContain("PRIVATE KEY");

    const mismatch = (() => {
      try {
        loadMachineIdentity({ certPem: a.certPem, keyPem: b.keyPem });
      } catch (error) {
        return error;
      }
    })();
    expect(mismatch).toBeInstanceOf(IdentityError);
    expect(StratumError.is(mismatch) && mismatch.code).toBe("IDENTITY_INVALID");
    expect((mismatch as Error).message).not.toContain(b.keyPem.split("\n")[1]!);
  });

  it("refuses garbage, encrypted and unsupported keys with IDENTITY_INVALID", async () => {
    const a = await createMachineIdentity();
    const encrypted = createPrivateKey(a.keyPem)
      .export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "secret" })
      .toString();
    const dsa = generateKeyPairSync("dsa", { modulusLength: 2048, divisorLength: 256 })
      .privateKey.export({ type: "pkcs8", format: "pem" })
      .toString();
    for (const stored of [
      { certPem: "not a cert", keyPem: a.keyPem },
      { certPem: a.certPem, keyPem: "not a key" },
      { certPem: a.certPem, keyPem: encrypted },
      { certPem: a.certPem, keyPem: dsa },
    ]) {
      expect(() => loadMachineIdentity(stored)).toThrow(expect.objectContaining({ code: "IDENTITY_INVALID" }));
    }
  });

  it("makes throwaway identities with a fresh key every time", async () => {
    const [x, y] = await Promise.all([createThrowawayIdentity(), createThrowawayIdentity()]);
    expect(x.keyFingerprint).not.toBe(y.keyFingerprint);
    expect(new X509Certificate(x.certPem).subject).toBe("CN=stratum-join throwaway");
  });
});
