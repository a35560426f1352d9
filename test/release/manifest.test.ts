import { createHash, verify as cryptoVerify, createPublicKey } from "node:crypto";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  RELEASE_MANIFEST_PAYLOAD_TYPE,
  ReleaseVerificationError,
  generateReleaseKeyPair,
  releaseKeyId,
  signReleaseDirectory,
  signReleaseManifest,
  verifyReleaseDirectory,
  verifyReleaseManifest,
} from "../../src/release/index.js";
import { buildReleaseManifest } from "../../src/release/manifest.js";
import { preAuthEncoding } from "../../src/release/dsse.js";
import { makeRelease, removeDir, tempDir } from "./helpers/release.js";

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map(removeDir));
});

describe("release keys", () => {
  it("makes an Ed25519 pair whose keyid is the SHA-256 of the raw public key", () => {
    const pair = generateReleaseKeyPair();
    expect(pair.publicKey).toHaveLength(32);
    expect(pair.keyid).toBe(createHash("sha256").update(pair.publicKey).digest("hex"));
    expect(pair.keyid).toMatch(/^[0-9a-f]{64}$/);
    expect(releaseKeyId(pair.publicKeyPem)).toBe(pair.keyid);
    expect(releaseKeyId(pair.privateKeyPem)).toBe(pair.keyid);
    expect(pair.privateKeyPem).toContain("BEGIN PRIVATE KEY");
  });
});

describe("DSSE", () => {
  it("PAE matches the DSSE specification's example", () => {
    expect(preAuthEncoding("http://example.com/HelloWorld", Buffer.from("hello world")).toString()).toBe(
      "DSSEv1 29 http://example.com/HelloWorld 11 hello world",
    );
  });

  it("counts lengths in bytes, not characters", () => {
    expect(preAuthEncoding("t", Buffer.from("é")).toString()).toBe("DSSEv1 1 t 2 é");
  });
});

describe("signReleaseDirectory / verifyReleaseDirectory", () => {
  it("signs every file but the manifest, with each key, and the result verifies", async () => {
    const fx = await makeRelease(
      { "os/blobs/sha256-aa": 1000, "sysext/kube.raw": 2000, "os/blobs/nested/x": 0 },
      { signers: 2 },
    );
    dirs.push(fx.dir);
    expect(fx.manifest.files.map((f) => f.path)).toEqual([
      "os/blobs/nested/x",
      "os/blobs/sha256-aa",
      "sysext/kube.raw",
    ]);
    expect(fx.manifest.files[1]!.sha256).toBe(
      createHash("sha256").update(fx.contents.get("os/blobs/sha256-aa")!).digest("hex"),
    );
    const bytes = await readFile(join(fx.dir, "payload/manifest.json"));
    const envelope = JSON.parse(bytes.toString());
    expect(envelope.payloadType).toBe(RELEASE_MANIFEST_PAYLOAD_TYPE);
    expect(envelope.signatures.map((s: { keyid: string }) => s.keyid)).toEqual(fx.keys.map((k) => k.keyid));
    // each signature is plain Ed25519 over the PAE
    const pae = preAuthEncoding(envelope.payloadType, Buffer.from(envelope.payload, "base64"));
    expect(
      cryptoVerify(
        null,
        pae,
        createPublicKey(fx.keys[1]!.publicKeyPem),
        Buffer.from(envelope.signatures[1].sig, "base64"),
      ),
    ).toBe(true);

    const trustedKeys = fx.keys.map((k) => k.publicKeyPem);
    const verified = await verifyReleaseDirectory(fx.dir, { trustedKeys, threshold: 2, expectRelease: "0.6.0" });
    expect(verified.manifest.files).toHaveLength(3);

    // re-signing replaces the manifest and never lists it in itself
    const again = await signReleaseDirectory(fx.dir, { release: "0.6.0", keys: [fx.keys[0]!.privateKeyPem] });
    expect(again.manifest.files.map((f) => f.path)).not.toContain("payload/manifest.json");
  });

  it("catches a file changed after signing, a missing file and an unlisted file", async () => {
    const fx = await makeRelease({ "os/blobs/a": 100, "sysext/b": 100 });
    dirs.push(fx.dir);
    const options = { trustedKeys: [fx.keys[0]!.publicKey], expectRelease: "0.6.0" };
    const flipped = Buffer.from(fx.contents.get("os/blobs/a")!);
    flipped[50] = flipped[50]! ^ 1;
    await writeFile(join(fx.dir, "os/blobs/a"), flipped);
    await expect(verifyReleaseDirectory(fx.dir, options)).rejects.toMatchObject({ rule: "hash", path: "os/blobs/a" });
    await writeFile(join(fx.dir, "os/blobs/a"), fx.contents.get("os/blobs/a")!);
    await writeFile(join(fx.dir, "sysext/extra"), "x");
    await expect(verifyReleaseDirectory(fx.dir, options)).rejects.toMatchObject({ rule: "path", path: "sysext/extra" });
    await expect(verifyReleaseDirectory(fx.dir, { ...options, allowExtraFiles: true })).resolves.toBeTruthy();
    await writeFile(join(fx.dir, "sysext/b"), "short");
    await expect(verifyReleaseDirectory(fx.dir, { ...options, allowExtraFiles: true })).rejects.toMatchObject({
      rule: "size",
      path: "sysext/b",
    });
  });

  it("refuses to sign a directory that would not verify", async () => {
    const key = generateReleaseKeyPair();
    const outside = await tempDir();
    dirs.push(outside);
    await mkdir(join(outside, "etc"), { recursive: true });
    await writeFile(join(outside, "etc/passwd"), "x");
    await expect(signReleaseDirectory(outside, { release: "1", keys: [key.privateKeyPem] })).rejects.toMatchObject({
      rule: "path",
    });

    const linked = await tempDir();
    dirs.push(linked);
    await mkdir(join(linked, "sysext"), { recursive: true });
    await symlink("/etc/passwd", join(linked, "sysext/passwd"));
    const symlinked = await buildReleaseManifest(linked, { release: "1" }).catch((e: unknown) => e);
    expect(symlinked).toBeInstanceOf(ReleaseVerificationError);
    expect(symlinked).toMatchObject({ rule: "path", path: "sysext/passwd", message: expect.stringMatching(/symlink/) });

    const partial = await tempDir();
    dirs.push(partial);
    await mkdir(join(partial, "sysext"), { recursive: true });
    await writeFile(join(partial, "sysext/a.partial"), "x");
    await expect(buildReleaseManifest(partial, { release: "1" })).rejects.toMatchObject({ rule: "path" });
  });

  it("refuses the same key twice (it would count once) and a manifest with bad paths", () => {
    const key = generateReleaseKeyPair();
    const manifest = { schema: 1 as const, release: "1", createdAt: new Date().toISOString(), files: [] };
    expect(() => signReleaseManifest(manifest, [key.privateKeyPem, key.privateKeyPem])).toThrow(
      expect.objectContaining({
        name: "ReleaseArgumentError",
        code: "INVALID_ARGUMENT",
        message: expect.stringMatching(/same release key/),
      }),
    );
    expect(() =>
      signReleaseManifest({ ...manifest, files: [{ path: "../x", size: 1, sha256: "0".repeat(64) }] }, [
        key.privateKeyPem,
      ]),
    ).toThrow(expect.objectContaining({ name: "ReleaseVerificationError", rule: "path", path: "../x" }));
    const envelope = signReleaseManifest(manifest, [key.privateKeyPem]);
    expect(
      verifyReleaseManifest(JSON.stringify(envelope), { trustedKeys: [key.publicKeyPem], expectRelease: "1" }).manifest
        .files,
    ).toEqual([]);
  });
});
