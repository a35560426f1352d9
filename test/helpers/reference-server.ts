/**
 * A reference server for a test, the one way every area starts one: on loopback with ports 0,
 * a fresh temporary data directory, its log captured (`logs`, so a test can assert no secret
 * reaches it), the runner's timers shortened (`tickMs`, `listenerCloseGraceMs`: 50 ms, so a
 * test waits on a tick, not on a production interval), and an admin client on its bootstrap
 * token. `stop` keeps the data directory, for `restart` on it; `dispose` stops and deletes it
 * (unless the caller gave it as `overrides.dataDir`: a directory the test owns is its own).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ReferenceServerConfig } from "../../examples/reference-server/config.js";
import { startReferenceServer, type ReferenceServer } from "../../examples/reference-server/server.js";
import { createAdminClient, type AdminClient } from "../../src/index.js";

/** A started reference server and what a test needs of it. */
export interface TestServer {
  server: ReferenceServer;
  /** The SDK's admin client on the server, with its bootstrap token. */
  admin: AdminClient;
  /** Every line the server logged, across restarts. */
  logs: string[];
  dataDir: string;
  config: ReferenceServerConfig;
  /** Stops it (the data directory stays, for a restart). */
  stop(): Promise<void>;
  /** Starts it again on the same data directory (new ports), logging to the same `logs`. */
  restart(): Promise<TestServer>;
  /** Stops it and deletes its data directory (one the caller gave stays). */
  dispose(): Promise<void>;
}

/**
 * Starts a reference server with `overrides` over the test defaults. `dataDir` (internal, for
 * `restart`) reuses a directory this helper made.
 */
export async function startTestServer(
  overrides: Partial<ReferenceServerConfig> = {},
  dataDir?: string,
  logs: string[] = [],
): Promise<TestServer> {
  const owned = overrides.dataDir === undefined;
  const dir = overrides.dataDir ?? dataDir ?? mkdtempSync(join(tmpdir(), "stratum-ref-"));
  const config: ReferenceServerConfig = {
    adminAddr: "127.0.0.1:0",
    joinAddr: "127.0.0.1:0",
    log: (line) => logs.push(line),
    ...overrides,
    timing: { tickMs: 50, listenerCloseGraceMs: 50, ...(overrides.timing ?? {}) },
    dataDir: dir,
  };
  const server = await startReferenceServer(config);
  let stopped = false;
  const t: TestServer = {
    server,
    admin: createAdminClient({ baseUrl: server.adminUrl, token: server.adminToken }),
    logs,
    dataDir: dir,
    config,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await server.close();
    },
    restart: async () => {
      await t.stop();
      const { log: _log, ...rest } = overrides;
      return startTestServer(rest, owned ? dir : undefined, logs);
    },
    dispose: async () => {
      await t.stop();
      if (owned) rmSync(dir, { recursive: true, force: true });
    },
  };
  return t;
}
