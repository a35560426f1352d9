// IPv6 SANs with a dotted IPv4 tail (an IPv4-mapped address, a NAT64 address) are signed as
// the address they spell, checked through real TLS handshakes: the joiner's own listener check
// dialling `::ffff:127.0.0.2`, and OpenSSL's verification by Node dialling `64:ff9b::192.0.2.1`
// inside a network namespace where that address is local.
import { X509Certificate } from "node:crypto";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMachineIdentity } from "../../src/node/identity.js";
import { openPinnedConnection } from "../../src/node/pinned-connection.js";
import { createClusterCa, issueListenerCertificate, type ClusterCa } from "../../src/server/ca.js";
import { disableSessionTickets, tlsServerOptions } from "../../src/server/tls.js";
import { createNamespace } from "../netns.js";

const MAPPED = "::ffff:127.0.0.2";
const NAT64 = "64:ff9b::192.0.2.1";

let ca: ClusterCa;
let leaf: { certPem: string; keyPem: string };
beforeAll(async () => {
  ca = await createClusterCa();
  const issued = await issueListenerCertificate(ca, { hosts: [MAPPED, NAT64] });
  leaf = { certPem: issued.certPem, keyPem: issued.keyPem };
});

describe("IPv6 SANs with a dotted IPv4 tail", () => {
  it("are signed as the addresses they spell", () => {
    const cert = new X509Certificate(leaf.certPem);
    expect(cert.subjectAltName).toContain("IP Address:0:0:0:0:0:FFFF:7F00:2");
    expect(cert.subjectAltName).toContain("IP Address:64:FF9B:0:0:0:0:C000:201");
    expect(cert.checkIP(NAT64)).toBe(NAT64);
  });

  describe("the joiner dialling an IPv4-mapped address", () => {
    let server: Server;
    beforeAll(async () => {
      server = createServer(tlsServerOptions({ ...leaf, caPem: ca.certPem }), (_req, res) => res.end("{}"));
      disableSessionTickets(server);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve));
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("finds it in the listener's leaf over TLS", async () => {
      const connection = await openPinnedConnection({
        host: MAPPED,
        port: (server.address() as AddressInfo).port,
        identity: await createMachineIdentity(),
        ca: ca.certDer,
      });
      await connection.close();
    });
  });

  it("a NAT64 address passes OpenSSL's host check in a TLS handshake to that address", async () => {
    const ns = createNamespace("san", ["64:ff9b::/96"]);
    try {
      // Plain node:tls in the namespace: listen on the NAT64 address, dial it with the CA, and
      // let Node's own checkServerIdentity match the dialled IP against the leaf's SANs.
      const script = `
        const tls = require("node:tls");
        const { CERT, KEY, CA } = process.env;
        const server = tls.createServer({ cert: CERT, key: KEY, minVersion: "TLSv1.3" }, (s) => s.end("ok"));
        server.listen(0, "64:ff9b::c000:201", () => {
          const socket = tls.connect({ host: ${JSON.stringify(NAT64)}, port: server.address().port, ca: CA });
          socket.once("secureConnect", () => { console.log("verified " + socket.remoteAddress); socket.destroy(); server.close(); });
          socket.once("error", (e) => { console.log("refused " + e.message); server.close(); });
        });`;
      const out = await ns.run(process.execPath, ["-e", script], {
        env: { CERT: leaf.certPem, KEY: leaf.keyPem, CA: ca.certPem },
      });
      expect(out.trim()).toBe("verified 64:ff9b::c000:201");
    } finally {
      ns.remove();
    }
  });
});
