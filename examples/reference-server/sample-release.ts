/**
 * `--sample-release`: a small release of the cluster's version, built and signed on the
 * founder's first start, so that an installer on an older release has something to upgrade to
 * (the README's stage 1 runs against it as shown, from the installed package alone). The
 * release signing key is made for this one signature and never kept: only its public half is
 * written, for the installer to trust (`release-key.pem`, the path the start prints).
 * @module
 */

import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateReleaseKeyPair, signReleaseDirectory } from "@stratum/join/release";

/** Where the sample release lives: the release directory root to serve and the public key to trust. */
export interface SampleRelease {
  /** The directory of release directories (`<root>/<version>/…`), as `STRATUM_RELEASE_DIR` names one. */
  root: string;
  /** The release signing key's public half, PEM: what an installer ships and trusts. */
  keyFile: string;
  /** True when this start made it (false: an earlier start did, in the same data directory). */
  created: boolean;
}

/**
 * The sample release of `release` in `dataDir/sample-release/`, made on the first call: an OS
 * image and an extension of random bytes (about 1 MiB), signed by a fresh key whose private
 * half is dropped after signing. Later starts serve what the first made.
 */
export async function sampleRelease(dataDir: string, release: string): Promise<SampleRelease> {
  const base = join(dataDir, "sample-release");
  const root = join(base, "releases");
  const keyFile = join(base, "release-key.pem");
  const dir = join(root, release);
  if (existsSync(join(dir, "payload", "manifest.json")) && existsSync(keyFile))
    return { root, keyFile, created: false };
  mkdirSync(join(dir, "os", "blobs"), { recursive: true, mode: 0o700 });
  mkdirSync(join(dir, "sysext"), { recursive: true });
  writeFileSync(join(dir, "os", "blobs", "rootfs.img"), randomBytes(1 << 20));
  writeFileSync(join(dir, "sysext", "stratum-agent.raw"), randomBytes(64 << 10));
  const key = generateReleaseKeyPair();
  await signReleaseDirectory(dir, { release, keys: [key.privateKeyPem] });
  // Written last: a start that crashed before this makes the release again.
  writeFileSync(keyFile, key.publicKeyPem, { mode: 0o644 });
  return { root, keyFile, created: true };
}
