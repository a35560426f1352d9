/**
 * `stratum-join release keygen|sign|verify|download`: the release tooling (keys, signed
 * manifests) and the joiner's verified download, from the command line.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/release.ts`, loaded only when it runs.
 * @module
 */

import { defineFlags, type CommandSpec } from "../args.js";

const releaseKeygenFlags = defineFlags({
  key: {
    type: "string",
    value: "FILE",
    description: "where to write the private key, PKCS#8 PEM, mode 0600",
    required: true,
  },
  pub: {
    type: "string",
    value: "FILE",
    description: "where to write the public key, SPKI PEM, mode 0644 (default: FILE.pub)",
  },
});

/** `release keygen`. */
export const releaseKeygen: CommandSpec<typeof releaseKeygenFlags> = {
  path: ["release", "keygen"],
  summary:
    "Make an Ed25519 release key pair: the private key (0600) signs manifests, the public key goes into joiners' trust stores.",
  details: "Neither file is overwritten. The private key is not encrypted: keep it offline. It is never printed.",
  flags: releaseKeygenFlags,
  examples: [
    {
      comment: "a key pair for signing releases: keep release.key offline",
      command: "stratum-join release keygen --key release.key",
    },
  ],
  result: "{keyid, privateKeyFile, publicKeyFile}",
  load: async () => (await import("../actions/release.js")).runReleaseKeygen,
};

const releaseSignFlags = defineFlags({
  release: { type: "string", value: "VERSION", description: "the release the directory is", required: true },
  key: {
    type: "string",
    multiple: true,
    value: "FILE",
    description: "a release private key (PEM) to sign with; give several for a threshold",
    required: true,
  },
});

/** `release sign`. */
export const releaseSign: CommandSpec<typeof releaseSignFlags> = {
  path: ["release", "sign"],
  summary: "Sign a release directory: hash every file under os/blobs/ and sysext/ and write payload/manifest.json.",
  details:
    "An existing manifest is replaced. The directory is refused if a joiner would refuse it (a symlink, a path outside os/blobs/ and sysext/).",
  positionals: [{ name: "DIR", description: "the release directory" }],
  flags: releaseSignFlags,
  examples: [
    {
      comment: "sign the release directory built for 0.6.0",
      command: "stratum-join release sign ./0.6.0 --release 0.6.0 --key release.key",
    },
  ],
  result: "{release, manifestPath, envelopeSha256, files, bytes, signedBy}",
  load: async () => (await import("../actions/release.js")).runReleaseSign,
};

const releaseVerifyFlags = defineFlags({
  release: { type: "string", value: "VERSION", description: "the release the manifest must name", required: true },
  "trusted-key": {
    type: "string",
    multiple: true,
    value: "FILE",
    description: "a trusted release public key, PEM",
    required: true,
  },
  threshold: { type: "string", value: "N", description: "distinct trusted keys that must have signed (default 1)" },
  "allow-extra-files": { type: "boolean", description: "accept files the manifest does not list" },
});

/** `release verify`. */
export const releaseVerify: CommandSpec<typeof releaseVerifyFlags> = {
  path: ["release", "verify"],
  summary:
    "Verify a release directory as a joiner would: the manifest's signatures, release and paths, then every file's size and SHA-256.",
  positionals: [{ name: "DIR", description: "the release directory" }],
  flags: releaseVerifyFlags,
  examples: [
    {
      comment: "check a release as a joiner would",
      command: "stratum-join release verify ./0.6.0 --release 0.6.0 --trusted-key release.key.pub",
    },
  ],
  result: "{release, files, bytes, signedBy, createdAt}",
  load: async () => (await import("../actions/release.js")).runReleaseVerify,
};

const releaseDownloadFlags = defineFlags({
  identity: {
    type: "string",
    value: "DIR",
    description: "the machine directory: download its registration's upgrade",
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
    description: "a trusted release public key, PEM",
    required: true,
  },
  threshold: { type: "string", value: "N", description: "distinct trusted keys that must have signed (default 1)" },
  "mirror-ca": { type: "string", value: "FILE", description: "CA certificate (PEM) of a mirror with a private CA" },
  proxy: {
    type: "string",
    value: "URL",
    description:
      "the HTTP proxy to reach a release mirror through, http://[user:password@]host[:port] (default: HTTPS_PROXY and NO_PROXY; never used for the founder)",
  },
});

/** `release download`. */
export const releaseDownload: CommandSpec<typeof releaseDownloadFlags> = {
  path: ["release", "download"],
  summary: "Download and verify a release: the upgrade of this machine's registration, or a release from a mirror.",
  details: [
    "With --identity DIR: the release the registration's upgrade names (state needs-upgrade),",
    "from its mirror or served by the founder over the pinned session; default destination",
    "DIR/release/<version>. With --source URL and --release: from an HTTPS mirror.",
    "Resumable: after Ctrl-C (exit 130) or a failed download (exit 16) the .partial files stay",
    "and the next run continues where it stopped.",
  ].join("\n"),
  flags: releaseDownloadFlags,
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
  result: "{release, dir, manifestPath, files, bytesFetched, signedBy, source}",
  load: async () => (await import("../actions/release.js")).runReleaseDownload,
};
