// The admin API over HTTPS (any address but loopback) speaks TLS 1.3 only, so every suite is an
// AEAD with forward secrecy, and issues no session tickets, as the join listener does. Checked
// from outside with Debian's sslscan (protocols and suites) and OpenSSL's s_client (tickets),
// against the reference server's command run in a network namespace on a non-loopback address.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNamespace, type Namespace } from "../netns.js";
import { startMainProcess, type MainProcess } from "./main-process.js";

const ADDRESS = "10.22.0.1";
let ns: Namespace;
let founder: MainProcess;
let dataDir: string;
let target: string;

beforeAll(async () => {
  ns = createNamespace("admintls");
  // Not a loopback address to the founder (it only looks at the address), so it serves HTTPS.
  ns.exec("ip", ["addr", "add", `${ADDRESS}/32`, "dev", "lo"]);
  dataDir = mkdtempSync(join(tmpdir(), "stratum-admin-tls-"));
  founder = await startMainProcess(dataDir, { STRATUM_ADMIN_ADDR: `${ADDRESS}:0` }, { netns: ns.name });
  expect(founder.adminUrl).toMatch(/^https:\/\/10\.22\.0\.1:\d+$/);
  target = new URL(founder.adminUrl).host;
});
afterAll(() => {
  founder?.child.kill("SIGKILL");
  ns?.remove();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe("the admin API over HTTPS", () => {
  it("offers TLS 1.3 only: sslscan finds no other protocol and no suite outside TLS 1.3", async () => {
    const xml = await ns.run("sslscan", ["--no-colour", "--xml=-", target]);
    const protocols = [...xml.matchAll(/<protocol type="(\w+)" version="([\d.]+)" enabled="(\d)"/g)].map(
      ([, type, version, enabled]) => `${type}${version}:${enabled}`,
    );
    expect(protocols.sort()).toEqual(["ssl2:0", "ssl3:0", "tls1.0:0", "tls1.1:0", "tls1.2:0", "tls1.3:1"]);
    const accepted = [
      ...xml.matchAll(/<cipher status="(?:accepted|preferred)" sslversion="([^"]+)"[^>]* cipher="([^"]+)"/g),
    ];
    expect(accepted.length).toBeGreaterThan(0);
    for (const [, version, cipher] of accepted) {
      expect(version, cipher).toBe("TLSv1.3");
      expect(cipher).toMatch(/^TLS_(AES_(128|256)_GCM_SHA(256|384)|CHACHA20_POLY1305_SHA256)$/);
    }
  });

  it("sends no session ticket after a full request", async () => {
    // -msg lists every handshake message; a ticket would be a NewSessionTicket after the
    // handshake. The request makes the server speak, so a ticket sent late is seen too.
    const out = await ns.run("sh", [
      "-c",
      `printf 'GET /v1/admin/cluster/members HTTP/1.1\\r\\nHost: founder\\r\\nConnection: close\\r\\n\\r\\n' | openssl s_client -connect ${target} -tls1_3 -msg -ign_eof 2>&1`,
    ]);
    expect(out).toContain("ServerHello");
    expect(out).toMatch(/New, TLSv1.3, Cipher is TLS_/);
    expect(out).toMatch(/HTTP\/1\.1 401/);
    expect(out).not.toContain("NewSessionTicket");
  });
});
