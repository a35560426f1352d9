/**
 * `npm run reference-server`: the reference server as a command. Configured by environment
 * variables, or the same names as flags (`--admin-addr 127.0.0.1:0`, `--data-dir ./x`):
 *
 * - `STRATUM_DATA_DIR` (default `.stratum-data/`)
 * - `STRATUM_ADMIN_ADDR` (default `127.0.0.1:8080`; plain HTTP on loopback, HTTPS with the
 *   cluster CA on any other address)
 * - `STRATUM_JOIN_ADDR` (default `127.0.0.1:9444`)
 * - `STRATUM_JOIN_HOSTS` (comma-separated extra names/IPs for the listener's certificate)
 * - `STRATUM_JOIN_ENDPOINT` (the endpoint a mint names by default)
 * - `STRATUM_CLUSTER_RELEASE` (default `0.6.0`)
 * - `STRATUM_RELEASE_DIR` (release directories by version, served to joiners that upgrade)
 * - `STRATUM_RELEASE_MIRROR` (a mirror base URL; joiners that upgrade are sent there instead)
 * - `STRATUM_ADMIN_TOKEN` (default: generated on first start, saved 0600 in the data
 *   directory, printed once)
 * - `STRATUM_CORS_ORIGINS` (comma-separated, or `*`; loopback origins are always allowed)
 * - `STRATUM_RATE_CALLS`, `STRATUM_RATE_REGISTRATIONS`, `STRATUM_RATE_WINDOW_SECONDS` (the
 *   per-address limits of the join listener)
 *
 * Prints where it listens; stops cleanly on SIGINT or SIGTERM.
 * @module
 */

import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { Limits } from "./config.js";
import { startReferenceServer } from "./server.js";

const FLAGS = {
  "data-dir": "STRATUM_DATA_DIR",
  "admin-addr": "STRATUM_ADMIN_ADDR",
  "join-addr": "STRATUM_JOIN_ADDR",
  "join-hosts": "STRATUM_JOIN_HOSTS",
  "join-endpoint": "STRATUM_JOIN_ENDPOINT",
  "cluster-release": "STRATUM_CLUSTER_RELEASE",
  "release-dir": "STRATUM_RELEASE_DIR",
  "release-mirror": "STRATUM_RELEASE_MIRROR",
  "admin-token": "STRATUM_ADMIN_TOKEN",
  "cors-origins": "STRATUM_CORS_ORIGINS",
  "rate-calls": "STRATUM_RATE_CALLS",
  "rate-registrations": "STRATUM_RATE_REGISTRATIONS",
  "rate-window-seconds": "STRATUM_RATE_WINDOW_SECONDS",
} as const;

function settings(): Record<(typeof FLAGS)[keyof typeof FLAGS], string | undefined> {
  const { values } = parseArgs({
    options: Object.fromEntries(Object.keys(FLAGS).map((flag) => [flag, { type: "string" as const }])),
    strict: true,
  });
  const out: Record<string, string | undefined> = {};
  for (const [flag, env] of Object.entries(FLAGS)) {
    const value = (values as Record<string, string | undefined>)[flag] ?? process.env[env];
    out[env] = value === "" ? undefined : value;
  }
  return out as Record<(typeof FLAGS)[keyof typeof FLAGS], string | undefined>;
}

function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new Error(`${name} must be a positive integer`);
  return Number(value);
}

async function main(): Promise<void> {
  const env = settings();
  const list = (v: string | undefined): string[] | undefined =>
    v
      ?.split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  const limits: Partial<Limits> = {};
  const calls = positiveInt("STRATUM_RATE_CALLS", env.STRATUM_RATE_CALLS);
  const registrations = positiveInt("STRATUM_RATE_REGISTRATIONS", env.STRATUM_RATE_REGISTRATIONS);
  const windowSeconds = positiveInt("STRATUM_RATE_WINDOW_SECONDS", env.STRATUM_RATE_WINDOW_SECONDS);
  if (calls !== undefined) limits.perAddressCalls = calls;
  if (registrations !== undefined) limits.perAddressRegistrations = registrations;
  if (windowSeconds !== undefined) limits.perAddressWindowSeconds = windowSeconds;
  const cors = env.STRATUM_CORS_ORIGINS === "*" ? "*" : list(env.STRATUM_CORS_ORIGINS);

  const server = await startReferenceServer({
    dataDir: resolve(env.STRATUM_DATA_DIR ?? ".stratum-data"),
    ...(env.STRATUM_ADMIN_ADDR ? { adminAddr: env.STRATUM_ADMIN_ADDR } : {}),
    ...(env.STRATUM_JOIN_ADDR ? { joinAddr: env.STRATUM_JOIN_ADDR } : {}),
    ...(env.STRATUM_JOIN_HOSTS ? { joinHosts: list(env.STRATUM_JOIN_HOSTS)! } : {}),
    ...(env.STRATUM_JOIN_ENDPOINT ? { joinEndpoint: env.STRATUM_JOIN_ENDPOINT } : {}),
    ...(env.STRATUM_CLUSTER_RELEASE ? { clusterRelease: env.STRATUM_CLUSTER_RELEASE } : {}),
    ...(env.STRATUM_RELEASE_DIR ? { releaseDir: resolve(env.STRATUM_RELEASE_DIR) } : {}),
    ...(env.STRATUM_RELEASE_MIRROR ? { releaseMirror: env.STRATUM_RELEASE_MIRROR } : {}),
    ...(env.STRATUM_ADMIN_TOKEN ? { adminToken: env.STRATUM_ADMIN_TOKEN } : {}),
    ...(cors ? { corsOrigins: cors } : {}),
    limits,
  });

  const out = (line: string): void => void process.stdout.write(`${line}\n`);
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
  process.stderr.write(`reference server: ${error.message}\n`);
  process.exit(1);
});
