#!/usr/bin/env node
/**
 * `npm run reference-server`: the reference server as a command. Every setting is an
 * environment variable (`STRATUM_…`) or the same name as a flag (`--admin-addr 127.0.0.1:0`,
 * `--data-dir ./x`); settings.ts lists them all with their defaults, and `--help` prints them.
 *
 * `--sample-release` makes (on the first start) and serves a signed release of the cluster's
 * version when no release directory is set (sample-release.ts). The package's
 * `stratum-join-reference-server` is this command.
 *
 * Prints where it listens; stops cleanly on SIGINT or SIGTERM, and says so ("stopped"). A start
 * that cannot work (a setting that cannot be used, an address in use) prints one line saying
 * what to change and exits 1.
 * @module
 */

import { parseArgs } from "node:util";
import { sampleRelease } from "./sample-release.js";
import { DEFAULT_CLUSTER_RELEASE, startReferenceServer, type ReferenceServer } from "./server.js";
import { SETTINGS, flagOf, readSettings, settingsHelp } from "./settings.js";

/** The command line's flags (every setting's, `--sample-release` and `--help`). */
function flags(): { values: Record<string, string | undefined>; help: boolean; sample: boolean } {
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(SETTINGS.map((s) => [flagOf(s).slice(2), { type: "string" as const }])),
      "sample-release": { type: "boolean" as const },
      help: { type: "boolean" as const, short: "h" },
    },
    strict: true,
  });
  const { help, "sample-release": sample, ...rest } = values as Record<string, string | boolean | undefined>;
  return { values: rest as Record<string, string | undefined>, help: help === true, sample: sample === true };
}

const SAMPLE_HELP = `  --sample-release
      make (on the first start) and serve a small signed release of the cluster's version, for
      installers on an older release to upgrade to; prints the path of its public key (when no
      STRATUM_RELEASE_DIR is set)`;

/** What the start prints: where it listens and, once, the admin token. */
function banner(server: ReferenceServer, out: (line: string) => void): void {
  out(
    `stratum reference server: cluster ${server.cluster.clusterId}, release ${server.cluster.options.clusterRelease}`,
  );
  out(`  data directory  ${server.dataDir}`);
  out(`  admin API       ${server.adminUrl}`);
  out(
    `  join listener   ${server.joinEndpoint} (${server.joinListenerOpen ? "open" : "closed until a join code is minted"})`,
  );
  out(`  cluster CA      ${server.caFingerprint}`);
  if (server.adminTokenCreated) {
    // Printed once, on the start that made it; it is also in the 0600 file for later.
    out(`  admin token     ${server.adminToken}`);
    out(`                  (shown once; kept mode 0600 in ${server.adminTokenFile})`);
  } else if (server.adminTokenFile) {
    out(`  admin token     in ${server.adminTokenFile}`);
  } else {
    out("  admin token     from STRATUM_ADMIN_TOKEN");
  }
}

async function main(): Promise<void> {
  const out = (line: string): void => void process.stdout.write(`${line}\n`);
  const { values, help, sample } = flags();
  if (help) {
    out(settingsHelp());
    out(SAMPLE_HELP);
    return;
  }
  const config = readSettings(values, process.env);
  const release =
    sample && !config.releaseDir ? await sampleRelease(config.dataDir, clusterReleaseOf(config)) : undefined;
  const server = await startReferenceServer(release ? { ...config, releaseDir: release.root } : config);
  banner(server, out);
  if (release) {
    out(
      `  sample release  ${server.cluster.options.clusterRelease}, served to joiners that upgrade (${release.created ? "made now" : "made on an earlier start"})`,
    );
    out(`  release key     ${release.keyFile} (the public key an installer trusts)`);
  }
  // The networks are the cluster's, decided on its first start: say so when they were asked
  // for and this data directory's cluster has others.
  const asked = config.cluster?.networks;
  const has = server.cluster.settings.networks;
  if (
    (asked && (asked.storage.cidr !== has.storage.cidr || asked.overlay.cidr !== has.overlay.cidr)) ||
    (config.cluster?.mgmtCidr !== undefined && config.cluster.mgmtCidr !== server.cluster.settings.mgmtCidr)
  ) {
    out(
      "  note            the cluster networks are those of this data directory's first start; the ones asked for apply to a fresh data directory",
    );
  }

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    out(`${signal}: stopping`);
    server.close().then(
      () => {
        out("stopped");
        process.exit(0);
      },
      (error: Error) => {
        process.stderr.write(`stopping failed: ${error.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  // `npm run` and `npx` exit on a SIGTERM without passing it on to the command they started,
  // which would go on holding its ports: started by npm, the server stops once npm is gone.
  if (process.env.npm_lifecycle_event !== undefined) {
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) stop("npm exited");
    }, 250).unref();
  }
}

/** The cluster release the config names (the server's default when it names none). */
function clusterReleaseOf(config: ReturnType<typeof readSettings>): string {
  return config.clusterRelease ?? DEFAULT_CLUSTER_RELEASE;
}

main().catch((error: Error) => {
  // A start that cannot work is one line: what is wrong and which setting to change
  // (ListenError, SettingError and an unknown flag say so in their messages).
  process.stderr.write(`reference server: ${error.message}\n`);
  process.exit(1);
});
