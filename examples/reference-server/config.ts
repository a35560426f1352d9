/**
 * The reference server's configuration: what `main.ts` reads from the environment, and what a
 * test passes to `startReferenceServer`. Every duration and limit the protocol fixes has its
 * protocol value as the default and can be shrunk, so a test need not wait ten minutes.
 * @module
 */

import type { ClusterNetworks } from "@stratum/join";
import type { OpenBaoMode } from "./delivery.js";
import type { Logger } from "./http.js";

/** Per-address and cluster-wide limits of the join listener. */
export interface Limits {
  /** Registrations waiting for approval (`pending`, `needs-upgrade`) before new ones get 429. Default 16. */
  maxWaiting: number;
  /** The window of the per-address limits, in seconds. Default 60. */
  perAddressWindowSeconds: number;
  /** Calls to `pake`, `code-checks` and `registrations` from one address per window. Default 120. */
  perAddressCalls: number;
  /** New registrations from one address per window. Default 20. */
  perAddressRegistrations: number;
  /** PAKE exchanges of a code that may end unproven before it is burned, and so the most that may be outstanding at once. Default 10. */
  maxAttempts: number;
  /**
   * The founder-wide budget of KE2s answered for live codes (docs/protocol.md#live-rate): at
   * most this many at once that have not been proven yet. Default 5.
   */
  liveKe2Burst: number;
  /** How fast that budget refills, KE2s per minute (a proven exchange gives its own back at once). Default 10. */
  liveKe2PerMinute: number;
  /** IPv6 sources are counted per prefix of this length (a /64 is one site's). Default 64. */
  ipv6PrefixLength: number;
  /** Served release files streaming at once per registration. Default 3. */
  releaseFilesAtOnce: number;
  /** The largest JSON body of the admin API, in bytes. Default 1 MiB. */
  bodyBytes: number;
  /** The largest KE1 request (`POST /v1/join/pake`), in bytes: a KE1 is about 200. Default 4 KiB. */
  pakeBodyBytes: number;
  /** The largest code check (`POST /v1/join/code-checks`): KE3 and a release. Default 8 KiB. */
  codeCheckBodyBytes: number;
  /** The largest registration (`POST /v1/join/registrations`): its inventory is most of it. Default 256 KiB. */
  registrationBodyBytes: number;
  /** Request bodies the join listener holds at once, all requests together, in bytes. Default 32 MiB. */
  bodiesInFlightBytes: number;
  /** The largest progress report, in bytes (2,000 lines of 4 KiB fit). Default 9 MiB. */
  progressBodyBytes: number;
  /** Install-log lines kept per join. Default 2,000. */
  logLines: number;
}

/** Durations, in milliseconds unless named otherwise. */
export interface Timing {
  /** A running join silent this long is `stalled`. Default 10 minutes. */
  stallAfterMs: number;
  /**
   * The stall deadline: a running join silent this long is failed by the founder (`failedStep`
   * `stalled`), which frees the one-at-a-time queue for the next join. Default 30 minutes.
   */
  failStalledAfterMs: number;
  /** A pending join expires this long after its code's expiry. Default 24 hours. */
  pendingGraceMs: number;
  /** How often the join runner and the housekeeping look. Default 1 s. */
  tickMs: number;
  /** How long a PAKE session waits for its KE3. Default 60 s. */
  pakeSessionMs: number;
  /** How long the listener stays open after its last reason to be open went away. Default 2 s. */
  listenerCloseGraceMs: number;
  /** A join code's lifetime when the mint names none, in seconds. Default 4 hours. */
  defaultCodeTtlSeconds: number;
  /** The longest lifetime a mint may ask for, in seconds. Default 7 days. */
  maxCodeTtlSeconds: number;
  /**
   * The `Retry-After` of a registration refused because the waiting slots are full, in
   * seconds: approvals go at a person's pace, so a minute. Default 60.
   */
  waitingFullRetrySeconds: number;
}

/** The default limits (the protocol's numbers). */
export const DEFAULT_LIMITS: Limits = {
  maxWaiting: 16,
  perAddressWindowSeconds: 60,
  perAddressCalls: 120,
  perAddressRegistrations: 20,
  maxAttempts: 10,
  liveKe2Burst: 5,
  liveKe2PerMinute: 10,
  ipv6PrefixLength: 64,
  releaseFilesAtOnce: 3,
  bodyBytes: 1024 * 1024,
  pakeBodyBytes: 4 * 1024,
  codeCheckBodyBytes: 8 * 1024,
  registrationBodyBytes: 256 * 1024,
  bodiesInFlightBytes: 32 * 1024 * 1024,
  progressBodyBytes: 9 * 1024 * 1024,
  logLines: 2000,
};

/** The default durations (the protocol's numbers). */
export const DEFAULT_TIMING: Timing = {
  stallAfterMs: 10 * 60_000,
  // Three times the flag: the operator sees `stalled` for 20 minutes first and may fail it
  // sooner (failNodeJoin); a machine in a long step that does report again is never cut off.
  failStalledAfterMs: 30 * 60_000,
  pendingGraceMs: 24 * 3600_000,
  tickMs: 1000,
  pakeSessionMs: 60_000,
  listenerCloseGraceMs: 2000,
  defaultCodeTtlSeconds: 4 * 3600,
  maxCodeTtlSeconds: 7 * 24 * 3600,
  waitingFullRetrySeconds: 60,
};

/** The founder as the cluster's first member, and what `copyFrom` copies from it. */
export interface FounderSettings {
  name: string;
  mgmtIp: string;
  mgmtInterface: string;
  rack?: string;
  az?: string;
  /** The founder's storage/overlay link. */
  dataInterface: string;
  storageIp: string;
  overlayIp: string;
  /** The founder's data disk: kernel name and key (WWN or by-id path). */
  disk: { name: string; key: string; role: "compute" | "ceph-osd" };
}

/** What the cluster decided at install, as a joiner adopts it. Fixed at first start. */
export interface ClusterSettings {
  region: string;
  parentDomain: string;
  dnsUpstreamServers: string[];
  adminEmail: string;
  ntpServers: string[];
  vips: {
    api?: string;
    postgres?: string;
    openbao?: string;
    ovnNb?: string;
    ovnSb?: string;
    vmselect?: string;
    providerGw?: string;
  };
  networks: ClusterNetworks;
  /**
   * The management network (IPv4 or IPv6 CIDR). When set, a joiner's default mgmt address is its
   * NIC address in it, and an approval's mgmt address must lie in it. Unset: any address.
   */
  mgmtCidr?: string;
  founder: FounderSettings;
}

/** A lab cluster on documentation addresses: what a fresh data directory starts with. */
export const DEFAULT_CLUSTER: ClusterSettings = {
  region: "lab-1",
  parentDomain: "stratum.example.com",
  dnsUpstreamServers: ["192.0.2.53"],
  adminEmail: "admin@stratum.local",
  ntpServers: ["192.0.2.123"],
  vips: { api: "192.0.2.240", postgres: "192.0.2.241", openbao: "192.0.2.242" },
  networks: {
    storage: { cidr: "10.90.0.0/24", mtu: 9000, vlan: 90 },
    overlay: { cidr: "10.91.0.0/24", mtu: 9000 },
    providerTopology: "bridged",
    providerVlan: 100,
    providerUpstreamInterface: "enp87s0",
    providerUpstreamPurpose: "mgmt",
  },
  founder: {
    name: "node-1",
    mgmtIp: "192.0.2.11",
    mgmtInterface: "enp87s0",
    rack: "r1",
    dataInterface: "enp2s0f0",
    storageIp: "10.90.0.11",
    overlayIp: "10.91.0.11",
    disk: { name: "nvme1n1", key: "eui.002538b221b0a1c1", role: "ceph-osd" },
  },
};

/** How to start a reference server. Only `dataDir` is required. */
export interface ReferenceServerConfig {
  /** Where the database, the CA key, the OPAQUE setup and the admin token live. Created 0700. */
  dataDir: string;
  /** The admin API's `host:port` (port 0: any free port). Plain HTTP on loopback, HTTPS elsewhere. Default `127.0.0.1:8080`. */
  adminAddr?: string;
  /** The join listener's `host:port` (port 0: any free port, kept across reopenings). Default `127.0.0.1:9444`. */
  joinAddr?: string;
  /** Extra DNS names or IPs for the listener's leaf (besides its bind address, `localhost` on loopback and the API VIP). */
  joinHosts?: string[];
  /**
   * The endpoint a mint names when the request names none. Default: the API VIP (as the spec
   * says) when the join listener answers on it (its bind address, or an address of this machine
   * when it binds the wildcard); else the listener's own address.
   */
  joinEndpoint?: string;
  /**
   * How the cluster's OpenBao runs, and so which joiners get the unseal key: `single-instance`
   * (increment 1: one OpenBao behind its VIP; no bundle carries the unseal key) or `raft` (a
   * 3-node integrated-storage raft; every control-plane joiner gets the founder's unseal key to
   * unseal its local voter). Read on every start: a cluster that moved to raft says so here.
   * Default `single-instance`.
   */
  openBaoMode?: OpenBaoMode;
  /** The release the cluster runs. Default `0.6.0`. */
  clusterRelease?: string;
  /** Release directories by version (`<dir>/<version>/payload/manifest.json`, …), served to joiners that upgrade. */
  releaseDir?: string;
  /** A release mirror's base URL; a needs-upgrade joiner is sent to `<mirror>/<version>/` instead of being served. */
  releaseMirror?: string;
  /** Where the cluster's ISO is, named in RELEASE_MISMATCH; `{release}` is replaced. Default `/releases/stratum-{release}.iso`. */
  isoPath?: string;
  /** The bootstrap admin token. Default: generated on first start and kept mode 0600 in the data directory. */
  adminToken?: string;
  /** Origins allowed to call the admin API from a browser, or `*`. Loopback origins (any port) are always allowed. */
  corsOrigins?: string[] | "*";
  /** Where log lines go. Default: stdout. */
  log?: Logger;
  /** Limits; unset fields keep {@link DEFAULT_LIMITS}. */
  limits?: Partial<Limits>;
  /** Durations; unset fields keep {@link DEFAULT_TIMING}. */
  timing?: Partial<Timing>;
  /** The cluster a fresh data directory starts with; ignored once the data directory holds one. */
  cluster?: Partial<ClusterSettings>;
  /**
   * Test hook: called at named points inside transactions (e.g. `delivery`); a throw there
   * simulates a crash in the middle of a change.
   */
  faultHook?: (point: string) => void;
}

/** Splits `host:port` (IPv6 in brackets). */
export function splitAddr(addr: string, fallbackPort: number): { host: string; port: number } {
  const text = addr.trim();
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (v6) return { host: v6[1]!, port: v6[2] === undefined ? fallbackPort : Number(v6[2]) };
  const at = text.lastIndexOf(":");
  if (at < 0) return { host: text, port: fallbackPort };
  if (text.indexOf(":") !== at) return { host: text, port: fallbackPort }; // a bare IPv6 address
  const port = Number(text.slice(at + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`not a port in ${JSON.stringify(addr)}`);
  return { host: text.slice(0, at), port };
}

/** True for an address only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h) || h === "::ffff:127.0.0.1";
}
