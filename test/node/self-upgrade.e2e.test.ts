// The self-upgrade in the reference server's flow: a joiner on 0.5.0 is told to upgrade, fetches
// and verifies 0.6.0 from the founder (served, pinned to its key) or from a mirror (HTTPS),
// registers again on 0.6.0 and becomes pending.
import { X509Certificate } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StratumApiError } from "../../src/index.js";
import {
  createMachineIdentity,
  downloadRelease,
  registerMachine,
  ReleaseArgumentError,
  ReleaseVerificationError,
  ReleaseDownloadError,
} from "../../src/node/index.js";
import { generateReleaseKeyPair } from "../../src/release/keys.js";
import { caFingerprint } from "../../src/protocol/pki.js";
import { createClusterCa } from "../../src/server/ca.js";
import { startMirror, type Mirror } from "../release/helpers/mirror.js";
import { makeRelease, removeDir, tempDir, type Fixture } from "../release/helpers/release.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

const FILES = { "os/blobs/rootfs.img": 3 << 20, "os/blobs/kernel.efi": 700_000, "sysext/agent.raw": 123_457 };

describe("self-upgrade from a release the founder serves", () => {
  let h: TestServer;
  let releases: string;
  let fixture: Fixture;
  let url: string;

  beforeAll(async () => {
    releases = await tempDir("stratum-served-");
    fixture = await makeRelease(FILES, { dir: join(releases, "0.6.0"), release: "0.6.0" });
    h = await startTestServer({ releaseDir: releases });
    url = (await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint })).url;
  });
  afterAll(async () => {
    await h?.dispose();
    await removeDir(releases);
  });

  it("downloads and verifies the served release, registers again on 0.6.0 and becomes pending", async () => {
    const identity = await createMachineIdentity();
    const first = await registerMachine({ url, identity, release: "0.5.0", selfUpgrade: true });
    expect(first.registration.state).toBe("needs-upgrade");
    expect(first.registration.upgrade).toMatchObject({ from: "0.5.0", to: "0.6.0", served: true });

    // Without the session and identity, a served release cannot be fetched.
    await expect(
      downloadRelease({
        upgrade: first.registration.upgrade!,
        destDir: await tempDir(),
        trustedKeys: [fixture.keys[0]!.publicKeyPem],
      }),
    ).rejects.toBeInstanceOf(ReleaseArgumentError);

    const dest = await tempDir("stratum-dest-");
    try {
      const progress: number[] = [];
      const release = await downloadRelease({
        upgrade: first.registration.upgrade!,
        session: first.session,
        identity,
        destDir: dest,
        trustedKeys: [fixture.keys[0]!.publicKeyPem],
        onProgress: (p) => progress.push(p.bytesDone),
      });
      expect(release.release).toBe("0.6.0");
      expect(release.files.map((f) => f.path).sort()).toEqual(Object.keys(FILES).sort());
      for (const [path, content] of fixture.contents) expect(readFileSync(join(dest, path)).equals(content)).toBe(true);
      expect(progress.at(-1)).toBe(Object.values(FILES).reduce((a, b) => a + b, 0));

      // A key that is not the registration's cannot fetch it.
      const stranger = await createMachineIdentity();
      await expect(
        downloadRelease({
          upgrade: first.registration.upgrade!,
          session: { ...first.session, keyFingerprint: stranger.keyFingerprint },
          identity: stranger,
          destDir: await tempDir(),
          trustedKeys: [fixture.keys[0]!.publicKeyPem],
        }),
      ).rejects.toBeInstanceOf(ReleaseDownloadError);

      // A listener that does not chain to the session's CA is never asked for a byte.
      const foreign = await createClusterCa();
      const elsewhere = await tempDir();
      const pinned = await downloadRelease({
        upgrade: first.registration.upgrade!,
        session: {
          ...first.session,
          caPem: foreign.certPem,
          caFingerprint: caFingerprint(new Uint8Array(new X509Certificate(foreign.certPem).raw)),
        },
        identity,
        destDir: elsewhere,
        trustedKeys: [fixture.keys[0]!.publicKeyPem],
      }).catch((e: unknown) => e);
      expect(pinned).toBeInstanceOf(ReleaseDownloadError);
      expect((pinned as ReleaseDownloadError).reason).toBe("tls");
      expect(existsSync(join(elsewhere, "payload", "manifest.json"))).toBe(false);

      const second = await registerMachine({ url, identity, release: release.release });
      expect(second.created).toBe(false);
      expect(second.session.joinId).toBe(first.session.joinId);
      expect(second.registration.state).toBe("pending");
      expect(second.registration.pairingCode).toBe(first.registration.pairingCode);
      const founder = await h.admin.getNodeJoin(first.session.joinId);
      expect(founder).toMatchObject({ state: "pending", release: "0.6.0" });

      // Served only while needs-upgrade: now it is refused.
      const late = await downloadRelease({
        upgrade: first.registration.upgrade!,
        session: second.session,
        identity,
        destDir: await tempDir(),
        trustedKeys: [fixture.keys[0]!.publicKeyPem],
      }).catch((e: unknown) => e);
      expect(late).toBeInstanceOf(ReleaseDownloadError);
      expect((late as ReleaseDownloadError).reason).toBe("refused");
    } finally {
      await removeDir(dest);
    }
  });

  it("a release signed by a key this machine does not trust is refused before any file is fetched", async () => {
    const identity = await createMachineIdentity();
    const { registration, session } = await registerMachine({ url, identity, release: "0.5.0", selfUpgrade: true });
    const dest = await tempDir("stratum-dest-");
    try {
      const error = await downloadRelease({
        upgrade: registration.upgrade!,
        session,
        identity,
        destDir: dest,
        trustedKeys: [generateReleaseKeyPair().publicKeyPem],
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ReleaseVerificationError);
      expect((error as ReleaseVerificationError).rule).toBe("signature-threshold");
      expect(existsSync(join(dest, "os", "blobs", "rootfs.img"))).toBe(false);
    } finally {
      await removeDir(dest);
    }
  });

  it("never goes through the proxy the environment names: the joiner's calls and the served release reach the founder directly", async () => {
    // a "proxy" that records every connection and answers none
    const seen: string[] = [];
    const proxy = createNetServer((socket) => {
      seen.push("connection");
      socket.destroy();
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const names = ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"] as const;
    const saved = names.map((name) => process.env[name]);
    for (const name of names) delete process.env[name];
    Object.assign(process.env, { HTTPS_PROXY: proxyUrl, HTTP_PROXY: proxyUrl });
    const dest = await tempDir("stratum-dest-");
    try {
      const identity = await createMachineIdentity();
      const first = await registerMachine({ url, identity, release: "0.5.0", selfUpgrade: true });
      const release = await downloadRelease({
        upgrade: first.registration.upgrade!,
        session: first.session,
        identity,
        destDir: dest,
        trustedKeys: [fixture.keys[0]!.publicKeyPem],
      });
      expect(release.source).toContain("founder");
      expect(release.source).not.toContain("proxy");
      expect(seen).toEqual([]);
    } finally {
      names.forEach((name, i) => {
        if (saved[i] === undefined) delete process.env[name];
        else process.env[name] = saved[i];
      });
      await new Promise((r) => proxy.close(r));
      await removeDir(dest);
    }
  });

  it("a joiner that cannot upgrade itself is refused with RELEASE_MISMATCH", async () => {
    const error = await registerMachine({ url, identity: await createMachineIdentity(), release: "0.5.0" }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StratumApiError);
    expect((error as StratumApiError).code).toBe("RELEASE_MISMATCH");
    expect((error as StratumApiError).details).toMatchObject({ clusterRelease: "0.6.0", reason: "no-self-upgrade" });
  });
});

describe("self-upgrade from a release mirror", () => {
  let h: TestServer;
  let root: string;
  let fixture: Fixture;
  let mirror: Mirror;

  beforeAll(async () => {
    root = await tempDir("stratum-mirror-root-");
    fixture = await makeRelease(FILES, { dir: join(root, "0.6.0"), release: "0.6.0" });
    mirror = await startMirror({ root });
    h = await startTestServer({ releaseMirror: mirror.url });
  });
  afterAll(async () => {
    await h?.dispose();
    await mirror?.close();
    await removeDir(root);
  });

  it("is sent to the mirror, downloads and verifies over HTTPS, registers again and becomes pending", async () => {
    const { url } = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    const identity = await createMachineIdentity();
    const first = await registerMachine({ url, identity, release: "0.5.0", selfUpgrade: true });
    expect(first.registration.state).toBe("needs-upgrade");
    const upgrade = first.registration.upgrade!;
    expect(upgrade.served ?? false).toBe(false);
    expect(upgrade.source).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/release\/0\.6\.0\/?$/);

    const dest = await tempDir("stratum-dest-");
    try {
      const release = await downloadRelease({
        upgrade,
        destDir: dest,
        trustedKeys: [fixture.keys[0]!.publicKeyPem],
        mirror: { ca: mirror.caPem },
      });
      for (const [path, content] of fixture.contents) expect(readFileSync(join(dest, path)).equals(content)).toBe(true);
      expect(mirror.log.some((r) => r.path.endsWith("payload/manifest.json"))).toBe(true);
      const second = await registerMachine({ url, identity, release: release.release });
      expect(second.registration.state).toBe("pending");
      expect(second.session.joinId).toBe(first.session.joinId);
    } finally {
      await removeDir(dest);
    }
  });
});
