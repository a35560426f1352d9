/**
 * The reference server's settings as a command takes them: each one an environment variable
 * (`STRATUM_…`) and the same name as a flag (`STRATUM_MAX_WAITING` is `--max-waiting`), with
 * its default and meaning in one table. `main.ts` reads them, `--help` prints them, and a test
 * holds the Configuration table of this directory's README.md to this one, so no setting exists
 * that the README does not list. A value that cannot be used stops the start with a message
 * naming the setting.
 * @module
 */

import { resolve } from "node:path";
import { parseCidr } from "./addresses.js";
import { DEFAULT_CLUSTER, DEFAULT_LIMITS, DEFAULT_TIMING, type ReferenceServerConfig } from "./config.js";

/** One setting: its variable, its default as a person reads it, what it means, and how it is applied. */
export interface Setting {
  /** The environment variable; the flag is its name without `STRATUM_`, lower case, `-` for `_`. */
  env: `STRATUM_${string}`;
  /** The default, as the README and `--help` show it (empty: none). */
  default: string;
  /** What it sets. */
  meaning: string;
  /** Parses `value` into `config`; throws a {@link SettingError} when it cannot be used. */
  apply(config: ReferenceServerConfig, value: string): void;
}

/** A setting's value cannot be used. The message names the variable and the flag, never the value. */
export class SettingError extends Error {
  constructor(setting: Setting, problem: string) {
    super(`${setting.env} (${flagOf(setting)}) ${problem}`);
    this.name = "SettingError";
  }
}

/** `STRATUM_MAX_WAITING` → `--max-waiting`. */
export function flagOf(setting: Pick<Setting, "env">): string {
  return `--${setting.env.slice("STRATUM_".length).toLowerCase().replace(/_/g, "-")}`;
}

const list = (value: string): string[] =>
  value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

/** A setting that is a positive integer, with an optional ceiling, stored by `set`. */
function count(
  env: Setting["env"],
  defaultValue: number,
  meaning: string,
  set: (config: ReferenceServerConfig, n: number) => void,
  max = Number.MAX_SAFE_INTEGER,
): Setting {
  const setting: Setting = {
    env,
    default: String(defaultValue),
    meaning,
    apply(config, value) {
      if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
        throw new SettingError(
          setting,
          max === Number.MAX_SAFE_INTEGER ? "must be a positive integer" : `must be an integer from 1 to ${max}`,
        );
      set(config, Number(value));
    },
  };
  return setting;
}

const limits = (config: ReferenceServerConfig): NonNullable<ReferenceServerConfig["limits"]> => (config.limits ??= {});
const timing = (config: ReferenceServerConfig): NonNullable<ReferenceServerConfig["timing"]> => (config.timing ??= {});

/** A cluster network's CIDRs: one, or two of different families (dual stack). */
function network(env: Setting["env"], purpose: "storage" | "overlay"): Setting {
  const defaults = DEFAULT_CLUSTER.networks[purpose];
  const setting: Setting = {
    env,
    default: defaults.cidr,
    meaning: `the ${purpose} network links take addresses from: a CIDR, or an IPv4 and an IPv6 one (comma-separated) for dual stack; fresh data directory only`,
    apply(config, value) {
      const cidrs = list(value);
      const parsed = cidrs.map(parseCidr);
      if (cidrs.length === 0 || cidrs.length > 2 || parsed.some((c) => c === undefined))
        throw new SettingError(setting, "must be one CIDR, or two of different IP families, comma-separated");
      if (parsed.length === 2 && parsed[0]!.family === parsed[1]!.family)
        throw new SettingError(setting, "takes two CIDRs only for dual stack: one IPv4, one IPv6");
      const cluster = (config.cluster ??= {});
      const networks = (cluster.networks ??= { ...DEFAULT_CLUSTER.networks });
      const { secondaryCidr: _none, ...rest } = defaults;
      networks[purpose] = { ...rest, cidr: cidrs[0]!, ...(cidrs[1] ? { secondaryCidr: cidrs[1] } : {}) };
    },
  };
  return setting;
}

const seconds = (ms: number): number => ms / 1000;

/** Every setting, in the order the README lists them. */
export const SETTINGS: readonly Setting[] = [
  {
    env: "STRATUM_DATA_DIR",
    default: ".stratum-data/",
    meaning: "database, CA key, OPAQUE setup, admin token (dir 0700, secrets 0600)",
    apply: (config, value) => void (config.dataDir = resolve(value)),
  },
  {
    env: "STRATUM_ADMIN_ADDR",
    default: "127.0.0.1:8080",
    meaning:
      "plain HTTP on loopback; HTTPS (TLS 1.3 only, no session tickets) with a cluster-CA leaf on any other address",
    apply: (config, value) => void (config.adminAddr = value),
  },
  {
    env: "STRATUM_JOIN_ADDR",
    default: "127.0.0.1:9444",
    meaning: "the join listener (IPv6 in brackets, `[::1]:9444`); port 0 picks one, kept across closing and reopening",
    apply: (config, value) => void (config.joinAddr = value),
  },
  {
    env: "STRATUM_JOIN_HOSTS",
    default: "",
    meaning: "extra names/IPs for the listener's certificate (comma-separated)",
    apply: (config, value) => void (config.joinHosts = list(value)),
  },
  {
    env: "STRATUM_JOIN_ENDPOINT",
    default: "the API VIP, else the listener's address",
    meaning:
      "the endpoint a mint names when the request names none: by default the API VIP when the listener answers on it (this machine holds it), else the listener's own address",
    apply: (config, value) => void (config.joinEndpoint = value),
  },
  {
    env: "STRATUM_OPENBAO_MODE",
    default: "single-instance",
    meaning:
      "how the cluster's OpenBao runs: `single-instance` (no bundle carries the unseal key) or `raft` (every control-plane joiner gets it); read on every start",
    apply(config, value) {
      if (value !== "single-instance" && value !== "raft")
        throw new SettingError(this, "must be single-instance or raft");
      config.openBaoMode = value;
    },
  },
  {
    env: "STRATUM_CLUSTER_RELEASE",
    default: "0.6.0",
    meaning: "the release the cluster runs",
    apply: (config, value) => void (config.clusterRelease = value),
  },
  {
    env: "STRATUM_RELEASE_DIR",
    default: "",
    meaning: "`<dir>/<version>/{payload/manifest.json,os/…,sysext/…}`, served to joiners that upgrade",
    apply: (config, value) => void (config.releaseDir = resolve(value)),
  },
  {
    env: "STRATUM_RELEASE_MIRROR",
    default: "",
    meaning: "a mirror base URL; joiners that upgrade get `source: <mirror>/<version>/` instead",
    apply: (config, value) => void (config.releaseMirror = value),
  },
  {
    env: "STRATUM_ADMIN_TOKEN",
    default: "generated",
    meaning: "the bootstrap admin token (every permission)",
    apply: (config, value) => void (config.adminToken = value),
  },
  {
    env: "STRATUM_CORS_ORIGINS",
    default: "",
    meaning: "more browser origins (comma-separated, or `*`); loopback origins on any port always pass",
    apply: (config, value) => void (config.corsOrigins = value === "*" ? "*" : list(value)),
  },
  count(
    "STRATUM_MAX_WAITING",
    DEFAULT_LIMITS.maxWaiting,
    "registrations waiting for a decision (pending, needs-upgrade) before new ones get 429",
    (c, n) => void (limits(c).maxWaiting = n),
  ),
  count(
    "STRATUM_RATE_CALLS",
    DEFAULT_LIMITS.perAddressCalls,
    "join-listener calls (pake, code checks, registrations) per address (IPv6: per prefix) per window",
    (c, n) => void (limits(c).perAddressCalls = n),
  ),
  count(
    "STRATUM_RATE_REGISTRATIONS",
    DEFAULT_LIMITS.perAddressRegistrations,
    "new registrations per address (IPv6: per prefix) per window",
    (c, n) => void (limits(c).perAddressRegistrations = n),
  ),
  count(
    "STRATUM_RATE_WINDOW_SECONDS",
    DEFAULT_LIMITS.perAddressWindowSeconds,
    "the window of both per-address limits",
    (c, n) => void (limits(c).perAddressWindowSeconds = n),
  ),
  count(
    "STRATUM_IPV6_PREFIX_LENGTH",
    DEFAULT_LIMITS.ipv6PrefixLength,
    "IPv6 sources count per prefix of this length in the per-address limits and a code's attempt sources (128: per address)",
    (c, n) => void (limits(c).ipv6PrefixLength = n),
    128,
  ),
  count(
    "STRATUM_LIVE_KE2_BURST",
    DEFAULT_LIMITS.liveKe2Burst,
    "KE2s answered for live codes at once, founder-wide, before any is proven (then every KE1 gets 503 `JOIN_CODE_BUSY`)",
    (c, n) => void (limits(c).liveKe2Burst = n),
  ),
  count(
    "STRATUM_LIVE_KE2_PER_MINUTE",
    DEFAULT_LIMITS.liveKe2PerMinute,
    "how fast that budget refills; a proven exchange gives its KE2 back at once",
    (c, n) => void (limits(c).liveKe2PerMinute = n),
  ),
  count(
    "STRATUM_RELEASE_FILES_AT_ONCE",
    DEFAULT_LIMITS.releaseFilesAtOnce,
    "served release files streaming at once per registration (then 503 `RELEASE_BUSY`)",
    (c, n) => void (limits(c).releaseFilesAtOnce = n),
  ),
  count(
    "STRATUM_BODY_BYTES",
    DEFAULT_LIMITS.bodyBytes,
    "the largest JSON request body of the admin API",
    (c, n) => void (limits(c).bodyBytes = n),
  ),
  count(
    "STRATUM_PAKE_BODY_BYTES",
    DEFAULT_LIMITS.pakeBodyBytes,
    "the largest KE1 request (`POST /v1/join/pake`; a KE1 is about 200 bytes)",
    (c, n) => void (limits(c).pakeBodyBytes = n),
  ),
  count(
    "STRATUM_CODE_CHECK_BODY_BYTES",
    DEFAULT_LIMITS.codeCheckBodyBytes,
    "the largest code check (`POST /v1/join/code-checks`)",
    (c, n) => void (limits(c).codeCheckBodyBytes = n),
  ),
  count(
    "STRATUM_REGISTRATION_BODY_BYTES",
    DEFAULT_LIMITS.registrationBodyBytes,
    "the largest registration (`POST /v1/join/registrations`, its inventory included)",
    (c, n) => void (limits(c).registrationBodyBytes = n),
  ),
  count(
    "STRATUM_BODIES_IN_FLIGHT_BYTES",
    DEFAULT_LIMITS.bodiesInFlightBytes,
    "request bodies the join listener holds at once, all requests together (then 429 `RATE_LIMITED`)",
    (c, n) => void (limits(c).bodiesInFlightBytes = n),
  ),
  count(
    "STRATUM_PROGRESS_BODY_BYTES",
    DEFAULT_LIMITS.progressBodyBytes,
    "the largest progress report",
    (c, n) => void (limits(c).progressBodyBytes = n),
  ),
  count(
    "STRATUM_LOG_LINES",
    DEFAULT_LIMITS.logLines,
    "install-log lines kept per join",
    (c, n) => void (limits(c).logLines = n),
  ),
  count(
    "STRATUM_PAKE_SESSION_SECONDS",
    seconds(DEFAULT_TIMING.pakeSessionMs),
    "how long a PAKE exchange waits for its KE3",
    (c, n) => void (timing(c).pakeSessionMs = n * 1000),
  ),
  count(
    "STRATUM_STALL_SECONDS",
    seconds(DEFAULT_TIMING.stallAfterMs),
    "a running join silent this long is flagged `stalled`",
    (c, n) => void (timing(c).stallAfterMs = n * 1000),
  ),
  count(
    "STRATUM_STALL_DEADLINE_SECONDS",
    seconds(DEFAULT_TIMING.failStalledAfterMs),
    "the stall deadline: a running join silent this long is failed (`failedStep` `stalled`), freeing the queue",
    (c, n) => void (timing(c).failStalledAfterMs = n * 1000),
  ),
  count(
    "STRATUM_PENDING_GRACE_SECONDS",
    seconds(DEFAULT_TIMING.pendingGraceMs),
    "a waiting join expires this long after its code's expiry",
    (c, n) => void (timing(c).pendingGraceMs = n * 1000),
  ),
  count(
    "STRATUM_CODE_TTL_SECONDS",
    DEFAULT_TIMING.defaultCodeTtlSeconds,
    "a join code's lifetime when the mint names none",
    (c, n) => void (timing(c).defaultCodeTtlSeconds = n),
    DEFAULT_TIMING.maxCodeTtlSeconds,
  ),
  count(
    "STRATUM_MAX_CODE_TTL_SECONDS",
    DEFAULT_TIMING.maxCodeTtlSeconds,
    "the longest lifetime a mint may ask for (at most 7 days)",
    (c, n) => void (timing(c).maxCodeTtlSeconds = n),
    DEFAULT_TIMING.maxCodeTtlSeconds,
  ),
  count(
    "STRATUM_TICK_MS",
    DEFAULT_TIMING.tickMs,
    "how often the join runner looks (expiry, stall deadline, the next delivery) when nothing wakes it",
    (c, n) => void (timing(c).tickMs = n),
  ),
  count(
    "STRATUM_LISTENER_GRACE_MS",
    DEFAULT_TIMING.listenerCloseGraceMs,
    "how long the join listener stays open after its last reason to be open went away",
    (c, n) => void (timing(c).listenerCloseGraceMs = n),
  ),
  network("STRATUM_STORAGE_CIDR", "storage"),
  network("STRATUM_OVERLAY_CIDR", "overlay"),
  {
    env: "STRATUM_MGMT_CIDR",
    default: "",
    meaning:
      "the management network (IPv4 or IPv6): a joiner's default mgmt address is its NIC address in it, and an approval's must lie in it; fresh data directory only",
    apply(config, value) {
      if (!parseCidr(value)) throw new SettingError(this, "must be a CIDR (a.b.c.d/nn or x:…:y/nnn)");
      (config.cluster ??= {}).mgmtCidr = value.trim();
    },
  },
];

/**
 * The configuration `argv` (flags) and `env` (variables) give; a flag wins over its variable,
 * an empty value counts as unset. Throws a {@link SettingError}, or node:util's error for an
 * unknown flag.
 */
export function readSettings(flags: Record<string, string | undefined>, env: NodeJS.ProcessEnv): ReferenceServerConfig {
  const config: ReferenceServerConfig = { dataDir: resolve(".stratum-data") };
  for (const setting of SETTINGS) {
    const value = flags[flagOf(setting).slice(2)] ?? env[setting.env];
    if (value === undefined || value === "") continue;
    setting.apply(config, value);
  }
  return config;
}

/** `--help`: every setting with its flag, default and meaning. */
export function settingsHelp(): string {
  const lines = [
    "usage: npm run reference-server -- [--flag value …]   (or the STRATUM_… variables)",
    "",
    ...SETTINGS.map(
      (s) =>
        `  ${flagOf(s).padEnd(32)} ${s.env}${s.default ? ` (default ${s.default})` : ""}\n      ${s.meaning.replace(/`/g, "")}`,
    ),
  ];
  return lines.join("\n");
}
