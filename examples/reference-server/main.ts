/**
 * `npm run reference-server`: the reference server as a command. Every setting is an
 * environment variable (`STRATUM_…`) or the same name as a flag (`--admin-addr 127.0.0.1:0`,
 * `--data-dir ./x`); settings.ts lists them all with their defaults, and `--help` prints them.
 *
 * Prints where it listens; stops cleanly on SIGINT or SIGTERM. A start that cannot work (a
 * setting that cannot be used, an address in use) prints one line saying what to change and
 * exits 1.
 * @module
 */

import { parseArgs } from "node:util";
import { startReferenceServer, type ReferenceServer } from "./server.js";
import { SETTINGS, flagOf, readSettings, settingsHelp } from "./settings.js";

/** The command line's flags (every setting's, and `--help`). */
function flags(): { values: Record<string, string | undefined>; help: boolean } {
  const { values } = parseArgs({
    options: {
      ...Object.fromEntries(SETTINGS.map((s) => [flagOf(s).slice(2), { type: "string" as const }])),
      help: { type: "boolean" as const, short: "h" },
    },
    strict: true,
  });
  const { help, ...rest } = values as Record<string, string | boolean | undefined>;
  return { values: rest as Record<string, string | undefined>, help: help === true };
}

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
  const { values, help } = flags();
  if (help) {
    out(settingsHelp());
    return;
  }
  const config = readSettings(values, process.env);
  const server = await startReferenceServer(config);
  banner(server, out);
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
      () => process.exit(0),
      (error: Error) => {
        process.stderr.write(`stopping failed: ${error.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

main().catch((error: Error) => {
  // A start that cannot work is one line: what is wrong and which setting to change
  // (ListenError, SettingError and an unknown flag say so in their messages).
  process.stderr.write(`reference server: ${error.message}\n`);
  process.exit(1);
});
