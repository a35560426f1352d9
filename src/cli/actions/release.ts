/**
 * `stratum-join release keygen|sign|verify|download`: the release tooling (keys, signed
 * manifests) and the joiner's verified download, from the command line.
 *
 * The command's declaration (words, flags, help) is `src/cli/commands/release.ts`; this module is
 * loaded only when the command runs.
 * @module
 */

import { join } from "node:path";
import { signReleaseDirectory } from "../../release/manifest.js";
import { generateReleaseKeyPair } from "../../release/keys.js";
import { verifyReleaseDirectory } from "../../release/verify.js";
import { CliError } from "../../errors/cli.js";
import { numberFlag, requiredFlag, requiredList, stringFlag, type CommandAction } from "../args.js";
import { MACHINE_DIR_FILES, openMachineDir, readSession, readTextFile, writeFileAtomic } from "../files.js";
import { getRegistration } from "../../node/registration.js";
import { downloadUpgrade, SAFE_RELEASE, trustedKeysOf } from "../joiner-steps.js";
import { formatBytes } from "../output.js";
import type { releaseKeygen, releaseSign, releaseVerify, releaseDownload } from "../commands/release.js";

/** Runs `release keygen`. */
export const runReleaseKeygen: CommandAction<typeof releaseKeygen.flags> = async (ctx, args) => {
  const keyFile = requiredFlag(args, "key");
  const pubFile = stringFlag(args, "pub") ?? `${keyFile}.pub`;
  const pair = generateReleaseKeyPair();
  await writeFileAtomic(keyFile, pair.privateKeyPem, 0o600, { exclusive: true });
  await writeFileAtomic(pubFile, pair.publicKeyPem, 0o644, { exclusive: true });
  ctx.out.result({ keyid: pair.keyid, privateKeyFile: keyFile, publicKeyFile: pubFile }, [
    `release key ${pair.keyid}`,
    `  private key  ${keyFile} (0600; keep it offline)`,
    `  public key   ${pubFile}`,
  ]);
};

/** Runs `release sign`. */
export const runReleaseSign: CommandAction<typeof releaseSign.flags> = async (ctx, args) => {
  const dir = args.positionals[0]!;
  const release = requiredFlag(args, "release");
  const keyFiles = requiredList(args, "key");
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
};

/** Runs `release verify`. */
export const runReleaseVerify: CommandAction<typeof releaseVerify.flags> = async (ctx, args) => {
  const dir = args.positionals[0]!;
  const release = requiredFlag(args, "release");
  requiredList(args, "trusted-key");
  const trustedKeys = await trustedKeysOf(args);
  const threshold = numberFlag(args, "threshold");
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
};

/** Runs `release download`. */
export const runReleaseDownload: CommandAction<typeof releaseDownload.flags> = async (ctx, args) => {
  const usage = (message: string) => new CliError("USAGE", message, { command: "release download" });
  const dir = stringFlag(args, "identity");
  const source = stringFlag(args, "source");
  if ((dir === undefined) === (source === undefined)) throw usage("give --identity DIR or --source URL (one of them)");
  requiredList(args, "trusted-key");
  const trustedKeys = await trustedKeysOf(args);
  const threshold = numberFlag(args, "threshold");
  const mirrorCaFile = stringFlag(args, "mirror-ca");
  const mirrorCa = mirrorCaFile === undefined ? undefined : await readTextFile(mirrorCaFile, "mirror CA");
  const proxy = stringFlag(args, "proxy");
  const common = {
    trustedKeys,
    ...(threshold !== undefined ? { threshold } : {}),
    ...(mirrorCa !== undefined ? { mirrorCa } : {}),
    ...(proxy !== undefined ? { proxy } : {}),
  };

  let downloaded;
  let destDir: string;
  if (dir !== undefined) {
    const session = await readSession(dir);
    const { identity } = await openMachineDir(dir, { create: false, warn: (text) => ctx.out.warn(text) });
    const registration = await getRegistration(session, identity, { signal: ctx.signal });
    const upgrade = registration.upgrade;
    if (!upgrade)
      throw new CliError(
        "NO_UPGRADE",
        `the registration ${session.joinId} is ${registration.state} and names no upgrade to download`,
      );
    if (!SAFE_RELEASE.test(upgrade.to))
      throw new CliError("NO_UPGRADE", "the cluster names a release that is not a safe directory name");
    destDir = stringFlag(args, "dest") ?? join(dir, MACHINE_DIR_FILES.release, upgrade.to);
    downloaded = await downloadUpgrade(ctx, { ...common, upgrade, destDir, session, identity });
  } else {
    const release = stringFlag(args, "release");
    if (release === undefined) throw usage("--release is required with --source");
    destDir = stringFlag(args, "dest") ?? "";
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
};
