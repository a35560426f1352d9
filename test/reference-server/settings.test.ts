// The reference server's settings: every limit and duration by environment variable and by
// flag (the flag wins), bad values refused naming the setting, every setting in the reference
// server's README (its Configuration table) with its default, and — as the real command, `main.ts` in a process — a
// limit set by a variable taking effect, and an address in use reported as one line with a
// non-zero exit (no MaxListenersExceededWarning, no stack trace).
import { spawn } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_CLUSTER } from "../../examples/reference-server/config.js";
import type { ReferenceServer } from "../../examples/reference-server/server.js";
import { SETTINGS, flagOf, readSettings } from "../../examples/reference-server/settings.js";
import { TestJoiner, admin } from "./helpers.js";

const root = new URL("../../", import.meta.url).pathname;
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const dataDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "stratum-settings-"));
  dirs.push(dir);
  return dir;
};

/** A value each setting takes, and what it must become in the configuration. */
const SAMPLES: Record<string, [string, (config: any) => unknown, unknown]> = {
  STRATUM_DATA_DIR: ["/srv/stratum", (c) => c.dataDir, "/srv/stratum"],
  STRATUM_ADMIN_ADDR: ["0.0.0.0:8443", (c) => c.adminAddr, "0.0.0.0:8443"],
  STRATUM_JOIN_ADDR: ["[::1]:9444", (c) => c.joinAddr, "[::1]:9444"],
  STRATUM_JOIN_HOSTS: ["a.example, 192.0.2.9", (c) => c.joinHosts, ["a.example", "192.0.2.9"]],
  STRATUM_JOIN_ENDPOINT: ["[2001:db8::1]:9444", (c) => c.joinEndpoint, "[2001:db8::1]:9444"],
  STRATUM_OPENBAO_MODE: ["raft", (c) => c.openBaoMode, "raft"],
  STRATUM_CLUSTER_RELEASE: ["0.7.0", (c) => c.clusterRelease, "0.7.0"],
  STRATUM_RELEASE_DIR: ["/srv/releases", (c) => c.releaseDir, "/srv/releases"],
  STRATUM_RELEASE_MIRROR: ["https://m.example/r", (c) => c.releaseMirror, "https://m.example/r"],
  STRATUM_ADMIN_TOKEN: ["stratum_x", (c) => c.adminToken, "stratum_x"],
  STRATUM_CORS_ORIGINS: [
    "https://a.example,https://b.example",
    (c) => c.corsOrigins,
    ["https://a.example", "https://b.example"],
  ],
  STRATUM_MAX_WAITING: ["3", (c) => c.limits.maxWaiting, 3],
  STRATUM_RATE_CALLS: ["7", (c) => c.limits.perAddressCalls, 7],
  STRATUM_RATE_REGISTRATIONS: ["2", (c) => c.limits.perAddressRegistrations, 2],
  STRATUM_RATE_WINDOW_SECONDS: ["30", (c) => c.limits.perAddressWindowSeconds, 30],
  STRATUM_IPV6_PREFIX_LENGTH: ["56", (c) => c.limits.ipv6PrefixLength, 56],
  STRATUM_LIVE_KE2_BURST: ["3", (c) => c.limits.liveKe2Burst, 3],
  STRATUM_LIVE_KE2_PER_MINUTE: ["2", (c) => c.limits.liveKe2PerMinute, 2],
  STRATUM_RELEASE_FILES_AT_ONCE: ["5", (c) => c.limits.releaseFilesAtOnce, 5],
  STRATUM_BODY_BYTES: ["4096", (c) => c.limits.bodyBytes, 4096],
  STRATUM_PAKE_BODY_BYTES: ["2048", (c) => c.limits.pakeBodyBytes, 2048],
  STRATUM_CODE_CHECK_BODY_BYTES: ["4096", (c) => c.limits.codeCheckBodyBytes, 4096],
  STRATUM_REGISTRATION_BODY_BYTES: ["65536", (c) => c.limits.registrationBodyBytes, 65536],
  STRATUM_BODIES_IN_FLIGHT_BYTES: ["1048576", (c) => c.limits.bodiesInFlightBytes, 1048576],
  STRATUM_PROGRESS_BODY_BYTES: ["65536", (c) => c.limits.progressBodyBytes, 65536],
  STRATUM_LOG_LINES: ["100", (c) => c.limits.logLines, 100],
  STRATUM_PAKE_SESSION_SECONDS: ["20", (c) => c.timing.pakeSessionMs, 20_000],
  STRATUM_STALL_SECONDS: ["120", (c) => c.timing.stallAfterMs, 120_000],
  STRATUM_STALL_DEADLINE_SECONDS: ["300", (c) => c.timing.failStalledAfterMs, 300_000],
  STRATUM_PENDING_GRACE_SECONDS: ["3600", (c) => c.timing.pendingGraceMs, 3_600_000],
  STRATUM_CODE_TTL_SECONDS: ["600", (c) => c.timing.defaultCodeTtlSeconds, 600],
  STRATUM_MAX_CODE_TTL_SECONDS: ["86400", (c) => c.timing.maxCodeTtlSeconds, 86400],
  STRATUM_TICK_MS: ["250", (c) => c.timing.tickMs, 250],
  STRATUM_LISTENER_GRACE_MS: ["500", (c) => c.timing.listenerCloseGraceMs, 500],
  STRATUM_STORAGE_CIDR: [
    "10.80.0.0/24,fd00:80::/64",
    (c) => c.cluster.networks.storage,
    { ...DEFAULT_CLUSTER.networks.storage, cidr: "10.80.0.0/24", secondaryCidr: "fd00:80::/64" },
  ],
  STRATUM_OVERLAY_CIDR: [
    "fd00:81::/64",
    (c) => c.cluster.networks.overlay,
    { ...DEFAULT_CLUSTER.networks.overlay, cidr: "fd00:81::/64" },
  ],
  STRATUM_MGMT_CIDR: ["fd00:10::/64", (c) => c.cluster.mgmtCidr, "fd00:10::/64"],
};

describe("every setting, by variable and by flag", () => {
  it("has a sample here (a new setting needs one)", () => {
    expect(SETTINGS.map((s) => s.env).sort()).toEqual(Object.keys(SAMPLES).sort());
  });

  for (const setting of SETTINGS) {
    it(`${setting.env} and ${flagOf(setting)}`, () => {
      const [value, read, expected] = SAMPLES[setting.env]!;
      expect(read(readSettings({}, { [setting.env]: value }))).toEqual(expected);
      expect(read(readSettings({ [flagOf(setting).slice(2)]: value }, {}))).toEqual(expected);
    });
  }

  it("a flag wins over its variable; an empty value is unset", () => {
    expect(readSettings({ "max-waiting": "4" }, { STRATUM_MAX_WAITING: "9" }).limits?.maxWaiting).toBe(4);
    expect(readSettings({}, { STRATUM_MAX_WAITING: "" }).limits?.maxWaiting).toBeUndefined();
  });

  it("refuses a value it cannot use, naming the variable and the flag, not the value", () => {
    for (const [env, value] of [
      ["STRATUM_MAX_WAITING", "0"],
      ["STRATUM_RATE_CALLS", "lots"],
      ["STRATUM_STALL_DEADLINE_SECONDS", "-5"],
      ["STRATUM_CODE_TTL_SECONDS", "999999999"],
      ["STRATUM_STORAGE_CIDR", "10.80.0.0/24,10.81.0.0/24"],
      ["STRATUM_OVERLAY_CIDR", "not-a-network"],
      ["STRATUM_MGMT_CIDR", "fd00::/200"],
      ["STRATUM_OPENBAO_MODE", "ha"],
    ] as const) {
      const flag = `--${env.slice(8).toLowerCase().replace(/_/g, "-")}`;
      expect(() => readSettings({}, { [env]: value }), env).toThrow(`${env} (${flag})`);
      try {
        readSettings({}, { [env]: value });
      } catch (error) {
        expect((error as Error).message).not.toContain(value);
      }
    }
  });
});

describe("the reference server's README lists every setting with its default", () => {
  const table = (file: string, heading: string): string => {
    const text = readFileSync(join(root, file), "utf8");
    const start = text.indexOf(heading);
    expect(start, `${file} has ${heading}`).toBeGreaterThan(0);
    return text.slice(start, text.indexOf("\n#", start + heading.length));
  };
  for (const [file, heading] of [["examples/reference-server/README.md", "## Configuration"]] as const) {
    it(file, () => {
      const rows = table(file, heading);
      for (const setting of SETTINGS) {
        const row = rows.split("\n").find((line) => line.startsWith(`| \`${setting.env}\` |`));
        expect(row, `${file}: ${setting.env}`).toBeDefined();
        if (setting.default) expect(row, `${file}: ${setting.env}'s default`).toContain(setting.default);
      }
    });
  }
});

// ------------------------------------------------------------------ the command

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `main.ts` until it prints its banner (then stops it) or exits by itself. */
function runMain(
  args: string[],
  env: Record<string, string>,
  whileUp?: (stdout: string) => Promise<void>,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/reference-server/main.ts", ...args], {
      cwd: root,
      env: { ...process.env, STRATUM_ADMIN_ADDR: "127.0.0.1:0", STRATUM_JOIN_ADDR: "127.0.0.1:0", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let up = false;
    const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.stdout.on("data", (d) => {
      stdout += d;
      if (!up && /admin token .*\n/.test(stdout)) {
        up = true;
        (whileUp ?? (async () => {}))(stdout).then(
          () => child.kill("SIGTERM"),
          (error: unknown) => {
            child.kill("SIGTERM");
            reject(error);
          },
        );
      }
    });
    child.stderr.on("data", (d) => (stderr += d));
    child.on("exit", (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

function occupy(host: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, host, () => resolve({ server, port: (server.address() as { port: number }).port }));
  });
}

describe("npm run reference-server (main.ts as a process)", () => {
  it("takes a limit from the environment: STRATUM_MAX_WAITING=1 refuses the second waiting registration", async () => {
    const run = await runMain([], { STRATUM_DATA_DIR: dataDir(), STRATUM_MAX_WAITING: "1" }, async (stdout) => {
      const adminUrl = /admin API\s+(\S+)/.exec(stdout)![1]!;
      const joinPort = Number(/join listener\s+\S+:(\d+)/.exec(stdout)![1]);
      const adminToken = /admin token\s+(stratum_\S+)/.exec(stdout)![1]!;
      const server = { adminUrl, joinPort, adminToken } as unknown as ReferenceServer;
      const { code } = (await admin(server, "POST", "/v1/admin/cluster/join-codes", { body: {} })).body;
      const first = await (await TestJoiner.create(server)).register(code);
      expect(first.response.status).toBe(201);
      const second = await (await TestJoiner.create(server)).register(code);
      expect(second.response.status).toBe(429);
      expect(second.response.json).toMatchObject({ code: "RATE_LIMITED" });
    });
    expect(run.code).toBe(0);
  }, 90_000);

  for (const [name, setting] of [
    ["join", "STRATUM_JOIN_ADDR"],
    ["admin", "STRATUM_ADMIN_ADDR"],
  ] as const) {
    it(`the ${name} address in use: one line naming it and ${setting}, exit 1`, async () => {
      const { server, port } = await occupy("127.0.0.1");
      try {
        const flag = `--${setting.slice(8).toLowerCase().replace(/_/g, "-")}`;
        for (const how of ["env", "flag"] as const) {
          const run = await runMain(how === "flag" ? [flag, `127.0.0.1:${port}`] : [], {
            STRATUM_DATA_DIR: dataDir(),
            ...(how === "env" ? { [setting]: `127.0.0.1:${port}` } : {}),
          });
          expect(run.code, run.stderr).toBe(1);
          const lines = run.stderr.trim().split("\n");
          expect(lines, run.stderr).toHaveLength(1);
          expect(lines[0]).toContain(`127.0.0.1:${port}`);
          expect(lines[0]).toContain("in use");
          expect(lines[0]).toContain(setting);
          expect(lines[0]).toContain(flag);
          expect(run.stderr).not.toContain("MaxListenersExceededWarning");
          expect(run.stderr).not.toMatch(/\n\s+at /);
        }
      } finally {
        server.close();
      }
    }, 90_000);
  }

  it("an unusable value: one line naming the setting, exit 1", async () => {
    const run = await runMain([], { STRATUM_DATA_DIR: dataDir(), STRATUM_RATE_WINDOW_SECONDS: "a minute" });
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      "reference server: STRATUM_RATE_WINDOW_SECONDS (--rate-window-seconds) must be a positive integer",
    );
  }, 60_000);
});
