/**
 * `stratum-join release keygen|sign|verify|download`: the release tooling (keys, signed
 * manifests) and the joiner's verified download, from the command line.
 * @module
 */

import { join } from "node:path";
import { signReleaseDirectory } from "../../release/manifest.js";
import { generateReleaseKeyPair } from "../../release/keys.js";
import { verifyReleaseDirectory } from "../../release/verify.js";
import { CliError, listFlag, numberFlag, stringFlag, type CommandSpec } from "../args.js";
import { IDENTITY_FILES, openIdentityDir, readSession, readTextFile, writeFileAtomic } from "../files.js";
import { getRegistration } from "../../node/registration.js";
import { downloadUpgrade, SAFE_RELEASE, trustedKeysOf } from "../joiner.js";
import { formatBytes } from "../output.js";

/** `release keygen`. */
export const releaseKeygen: CommandSpec = {
  path: ["release", "keygen"],
  summary:
    "Make an Ed25519 release key pair: the private key (0600) signs manifests, the public key goes into joiners' trust stores.",
  details: "Neither file is overwritten. The private key is not encrypted: keep it offline. It is never printed.",
  flags: {
    key: {
      type: "string",
      value: "FILE",
      description: "where to write the private key, PKCS#8 PEM, mode 0600 (required)",
    },
    pub: {
      type: "string",
      value: "FILE",
      description: "where to write the public key, SPKI PEM, mode 0644 (default: FILE.pub)",
    },
  },
  examples: [
    {
      comment: "a key pair for signing releases: keep release.key offline",
      command: "stratum-join release keygen --key release.key",
    },
  ],
  async run(ctx, args) {
    const keyFile = stringFlag(args, "key", releaseKeygen, true);
    const pubFile = stringFlag(args, "pub", releaseKeygen) ?? `${keyFile}.pub`;
    const pair = generateReleaseKeyPair();
    await writeFileAtomic(keyFile, pair.privateKeyPem, 0o600, { exclusive: true });
    await writeFileAtomic(pubFile, pair.publicKeyPem, 0o644, { exclusive: true });
    ctx.out.result({ keyid: pair.keyid, privateKeyFile: keyFile, publicKeyFile: pubFile }, [
      `release key ${pair.keyid}`,
      `  private key  ${keyFile} (0600; keep it offline)`,
      `  public key   ${pubFile}`,
    ]);
  },
};

/** `release sign`. */
export const releaseSign: CommandSpec = {
  path: ["release", "sign"],
  summary: "Sign a release directory: hash every file under os/blobs/ and sysext/ and write payload/manifest.json.",
  details:
    "An existing manifest is replaced. The directory is refused if a joiner would refuse it (a symlink, a path outside os/blobs/ and sysext/).",
  positionals: [{ name: "DIR", description: "the release directory" }],
  flags: {
    release: { type: "string", value: "VERSION", description: "the release the directory is (required)" },
    key: {
      type: "string",
      multiple: true,
      value: "FILE",
      description: "a release private key (PEM) to sign with; give several for a threshold (required)",
    },
  },
  examples: [
    {
      comment: "sign the release directory built for 0.6.0",
      command: "stratum-join release sign ./0.6.0 --release 0.6.0 --key release.key",
    },
  ],
  async run(ctx, args) {
    const dir = args.positionals[0]!;
    const release = stringFlag(args, "release", releaseSign, true);
    const keyFiles = listFlag(args, "key");
    if (keyFiles.length === 0) throw new CliError("USAGE", "--key is required", { command: "release sign" });
    const keys = await Promise.all(keyFiles.map((file) => readTextFile(file, "release private key")));
    const signed = await signReleaseDirectory(dir, { release, keys, signal: ctx.signal });
    const total = signed.manifest.files.reduce((sum, f) => sum + f.size, 0);
    const signedBy = signed.envelope.signatures.map((s) => s.keyid);
    ctx.out.result(
      {
        release,
        manifestPath: signed.manifestPath,
        envelopeSha256: signed.envelopeSha256,
        files: signed.manifest.files.length,
        bytes: total,
        signedBy,
      },
      [
        `signed release ${release}: ${signed.manifest.files.length} files, ${formatBytes(total)}`,
        `  manifest     ${signed.manifestPath} (sha256 ${signed.envelopeSha256})`,
        `  signed by    ${signedBy.join(", ")}`,
      ],
    );
  },
};

/** `release verify`. */
export const releaseVerify: CommandSpec = {
  path: ["release", "verify"],
  summary:
    "Verify a release directory as a joiner would: the manifest's signatures, release and paths, then every file's size and SHA-256.",
  positionals: [{ name: "DIR", description: "the release directory" }],
  flags: {
    release: { type: "string", value: "VERSION", description: "the release the manifest must name (required)" },
    "trusted-key": {
      type: "string",
      multiple: true,
      value: "FILE",
      description: "a trusted release public key, PEM (required)",
    },
    threshold: { type: "string", value: "N", description: "distinct trusted keys that must have signed (default 1)" },
    "allow-extra-files": { type: "boolean", description: "accept files the manifest does not list" },
  },
  examples: [
    {
      comment: "check a release as a joiner would",
      command: "stratum-join release verify ./0.6.0 --release 0.6.0 --trusted-key release.key.pub",
    },
  ],
  async run(ctx, args) {
    const dir = args.positionals[0]!;
    const release = stringFlag(args, "release", releaseVerify, true);
    const trustedKeys = await trustedKeysOf(args);
    if (trustedKeys.length === 0)
      throw new CliError("USAGE", "--trusted-key is required", { command: "release verify" });
    const threshold = numberFlag(args, "threshold", releaseVerify);
    const verified = await verifyReleaseDirectory(dir, {
      expectRelease: release,
      trustedKeys,
      ...(threshold !== undefined ? { threshold } : {}),
      allowExtraFiles: args.values["allow-extra-files"] === true,
      signal: ctx.signal,
    });
    const total = verified.manifest.files.reduce((sum, f) => sum + f.size, 0);
    ctx.out.result(
      {
        release,
        files: verified.manifest.files.length,
        bytes: total,
        signedBy: verified.signedBy,
        createdAt: verified.manifest.createdAt,
      },
      [
        `${ctx.out.style.green("ok:")} release ${release} verified: ${verified.manifest.files.length} files, ${formatBytes(total)}`,
        `  signed by    ${verified.signedBy.join(", ")}`,
      ],
    );
  },
};

/** `release download`. */
export const releaseDownload: CommandSpec = {
  path: ["release", "download"],
  summary: "Download and verify a release: the upgrade of this machine's registration, or a release from a mirror.",
  details: [
    "With --identity DIR: the release the registration's upgrade names (state needs-upgrade),",
    "from its mirror or served by the founder over the pinned session; default destination",
    "DIR/release/<version>. With --source URL and --release: from an HTTPS mirror.",
    "Resumable: after Ctrl-C (exit 130) or a failed download (exit 16) the .partial files stay",
    "and the next run continues where it stopped.",
  ].join("\n"),
  flags: {
    identity: {
      type: "string",
      value: "DIR",
      description: "the machine's directory: download its registration's upgrade",
    },
    source: {
      type: "string",
      value: "URL",
      description: "an HTTPS mirror's URL of the release directory, instead of --identity",
    },
    release: {
      type: "string",
      value: "VERSION",
      description: "the release to download (with --source; required there)",
    },
    dest: {
      type: "string",
      value: "DIR",
      description: "where to build the release (default with --identity: DIR/release/<version>)",
    },
    "trusted-key": {
      type: "string",
      multiple: true,
      value: "FILE",
      description: "a trusted release public key, PEM (required)",
    },
    threshold: { type: "string", value: "N", description: "distinct trusted keys that must have signed (default 1)" },
    "mirror-ca": { type: "string", value: "FILE", description: "CA certificate (PEM) of a mirror with a private CA" },
    proxy: {
      type: "string",
      value: "URL",
      description:
        "the HTTP proxy to reach a release mirror through, http://[user:password@]host[:port] (default: HTTPS_PROXY and NO_PROXY; never used for the founder)",
    },
  },
  examples: [
    {
      comment: "the upgrade this machine's registration names",
      command: "stratum-join release download --identity /var/lib/stratum-join --trusted-key release.pub",
    },
    {
      comment: "a release from a mirror",
      command:
        "stratum-join release download --source https://mirror.example/0.6.0/ --release 0.6.0 --dest ./0.6.0 --trusted-key release.pub",
    },
  ],
  async run(ctx, args) {
    const command = releaseDownload;
    const usage = (message: string) => new CliError("USAGE", message, { command: "release download" });
    const dir = stringFlag(args, "identity", command);
    const source = stringFlag(args, "source", command);
    if ((dir === undefined) === (source === undefined))
      throw usage("give --identity DIR or --source URL (one of them)");
    const trustedKeys = await trustedKeysOf(args);
    if (trustedKeys.length === 0) throw usage("--trusted-key is required");
    const threshold = numberFlag(args, "threshold", command);
    const mirrorCaFile = stringFlag(args, "mirror-ca", command);
    const mirrorCa = mirrorCaFile === undefined ? undefined : await readTextFile(mirrorCaFile, "mirror CA");
    const proxy = stringFlag(args, "proxy", command);
    const common = {
      trustedKeys,
      ...(proxy !== undefined ? { proxy } : {}),
      ...(threshold !== undefined ? { threshold } : {}),
      ...(mirrorCa !== undefined ? { mirrorCa } : {}),
    };

    let downloaded;
    let destDir: string;
    if (dir !== undefined) {
      const session = await readSession(dir);
      const { identity } = await openIdentityDir(dir, { create: false, warn: (text) => ctx.out.warn(text) });
      const registration = await getRegistration(session, identity, { signal: ctx.signal });
      const upgrade = registration.upgrade;
      if (!upgrade)
        throw new CliError(
          "NO_UPGRADE",
          `the registration ${session.joinId} is ${registration.state} and names no upgrade to download`,
        );
      if (!SAFE_RELEASE.test(upgrade.to))
        throw new CliError("NO_UPGRADE", "the cluster names a release that is not a safe directory name");
      destDir = stringFlag(args, "dest", command) ?? join(dir, IDENTITY_FILES.release, upgrade.to);
      downloaded = await downloadUpgrade(ctx, { ...common, upgrade, destDir, session, identity });
    } else {
      const release = stringFlag(args, "release", command);
      if (release === undefined) throw usage("--release is required with --source");
      destDir = stringFlag(args, "dest", command) ?? "";
      if (destDir === "") throw usage("--dest is required with --source");
      downloaded = await downloadUpgrade(ctx, { ...common, upgrade: { to: release, source: source! }, destDir });
    }
    ctx.out.result(
      {
        release: downloaded.release,
        dir: destDir,
        manifestPath: downloaded.manifestPath,
        files: downloaded.files.length,
        bytesFetched: downloaded.bytesFetched,
        signedBy: downloaded.signedBy,
        source: downloaded.source,
      },
      `${ctx.out.style.green("done:")} release ${downloaded.release} in ${destDir}`,
    );
  },
};
