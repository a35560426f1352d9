/**
 * Mirror downloads through a real HTTP proxy (Debian's tinyproxy, started by the test): the
 * CONNECT tunnel with TLS to the mirror inside it, the proxy chosen from the environment or
 * the `proxy` option, NO_PROXY, credentials, refusals as typed errors with no secret in them,
 * and a resume through the tunnel.
 */
import { readFile } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReleaseDownloadError } from "../../src/errors/release.js";
import { verifyReleaseDirectory } from "../../src/release/index.js";
import { RELEASE_TEST_HOOKS } from "../../src/transport/download/index.js";
import { startMirroredRelease, type MirroredRelease } from "./helpers/mirrored-release.js";
import { download, failure } from "./helpers/run.js";
import { freePort, startTinyproxy, type Tinyproxy } from "./helpers/tinyproxy.js";

const TARGET = "os/blobs/target";
const SIZE = 900_000;
const HALF = 450_000;
const USER = "joiner";
const PASSWORD = "s3cret-Pa55";

const PROXY_VARIABLES = ["https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"];

/** Runs `fn` with exactly these proxy variables set (every other one unset), restoring them after. */
async function withProxyEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(PROXY_VARIABLES.map((name) => [name, process.env[name]]));
  for (const name of PROXY_VARIABLES) delete process.env[name];
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const name of PROXY_VARIABLES) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  }
}

let env: MirroredRelease;
let open: Tinyproxy;
let guarded: Tinyproxy;

beforeAll(async () => {
  env = await startMirroredRelease({ [TARGET]: SIZE, "sysext/other.raw": 20_000 });
  open = await startTinyproxy({ connectPorts: [env.mirror.port] });
  guarded = await startTinyproxy({
    connectPorts: [env.mirror.port],
    basicAuth: { user: USER, password: PASSWORD },
  });
});

afterAll(async () => {
  await open?.close();
  await guarded?.close();
  await env?.close();
});

async function expectRelease(dir: string): Promise<void> {
  expect((await readFile(join(dir, TARGET))).equals(env.fx.contents.get(TARGET)!)).toBe(true);
  await verifyReleaseDirectory(dir, { trustedKeys: [env.fx.keys[0]!.publicKeyPem], expectRelease: env.fx.release });
}

/** Everything a caller could print of an error: no secret may be in any of it. */
function printed(error: unknown): string {
  return `${String(error)}\n${inspect(error, { depth: 5 })}\n${JSON.stringify(error)}`;
}

describe("downloads through an HTTP proxy (tinyproxy)", () => {
  it("HTTPS_PROXY: the release downloads and verifies through a CONNECT tunnel the proxy cannot read", async () => {
    const before = (await open.connects()).length;
    const dir = await env.dest();
    const result = await withProxyEnv({ HTTPS_PROXY: open.url }, () => download(env.fx, env.mirror, dir));
    await expectRelease(dir);
    const connects = (await open.connects()).slice(before);
    // the manifest and both files, each over a tunnel to the mirror
    expect(connects).toEqual(Array(3).fill(`127.0.0.1:${env.mirror.port}`));
    expect(result.source).toContain(`through the proxy ${open.url}`);
    // TLS runs end to end: the proxy never saw a request line of the mirror's
    expect(await open.log()).not.toContain("/release/");
  });

  it("reads https_proxy before HTTPS_PROXY, and falls back to http_proxy", async () => {
    const before = (await open.connects()).length;
    await withProxyEnv({ https_proxy: open.url, HTTPS_PROXY: "http://127.0.0.1:9" }, async () =>
      download(env.fx, env.mirror, await env.dest()),
    );
    await withProxyEnv({ http_proxy: open.url }, async () => download(env.fx, env.mirror, await env.dest()));
    expect((await open.connects()).length - before).toBe(6);
  });

  it("a file on several connections goes through the proxy too, a tunnel per range", async () => {
    const before = (await open.connects()).length;
    const dir = await env.dest();
    env.mirror.log.length = 0;
    await withProxyEnv({ HTTPS_PROXY: open.url }, () =>
      download(env.fx, env.mirror, dir, {
        connections: 3,
        [RELEASE_TEST_HOOKS]: { segmentBytes: 128 * 1024 },
      } as never),
    );
    await expectRelease(dir);
    const ranged = env.mirror.log.filter((e) => e.path === TARGET && /^bytes=\d+-\d+$/.test(e.range ?? ""));
    expect(ranged.length).toBeGreaterThan(3);
    // every request, each range included, came through a tunnel
    expect((await open.connects()).length - before).toBe(env.mirror.log.length);
  });

  it("NO_PROXY bypasses the proxy for a matching mirror: the proxy's log shows nothing", async () => {
    for (const noProxy of ["127.0.0.1", "127.0.0.0/8", "*", `localhost, 127.0.0.1:${env.mirror.port}`]) {
      const before = await open.log();
      const dir = await env.dest();
      const result = await withProxyEnv({ HTTPS_PROXY: open.url, NO_PROXY: noProxy }, () =>
        download(env.fx, env.mirror, dir),
      );
      await expectRelease(dir);
      expect(result.source).not.toContain("proxy");
      expect(await open.log(), noProxy).toBe(before);
    }
    // a NO_PROXY for another port does not exempt this one
    const before = (await open.connects()).length;
    await withProxyEnv({ HTTPS_PROXY: open.url, no_proxy: "127.0.0.1:1" }, async () =>
      download(env.fx, env.mirror, await env.dest()),
    );
    expect((await open.connects()).length - before).toBe(3);
  });

  it("the proxy option: a URL used whatever the environment says, or false to ignore the environment", async () => {
    const before = (await open.connects()).length;
    await withProxyEnv({ HTTPS_PROXY: "http://127.0.0.1:9", NO_PROXY: "*" }, async () =>
      download(env.fx, env.mirror, await env.dest(), { mirror: { ca: env.mirror.caPem, proxy: open.url } }),
    );
    expect((await open.connects()).length - before).toBe(3);
    const dir = await env.dest();
    await withProxyEnv({ HTTPS_PROXY: "http://127.0.0.1:9" }, () =>
      download(env.fx, env.mirror, dir, { mirror: { ca: env.mirror.caPem, proxy: false } }),
    );
    await expectRelease(dir);
    expect((await open.connects()).length - before).toBe(3);
  });

  it("proxy credentials from the URL's userinfo (percent-encoded) open the tunnel", async () => {
    const dir = await env.dest();
    const before = (await guarded.connects()).length;
    const proxy = `http://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${guarded.port}`;
    const result = await withProxyEnv({ HTTPS_PROXY: proxy }, () => download(env.fx, env.mirror, dir));
    await expectRelease(dir);
    expect((await guarded.connects()).length - before).toBe(3);
    expect(result.source).not.toContain(PASSWORD);
    expect(result.source).not.toContain(USER);
  });

  it("407 without credentials, a refusal of wrong ones: ReleaseDownloadError `proxy` with the status, at once, no secret in it", async () => {
    // tinyproxy answers wrong credentials 401 (most proxies say 407 again)
    for (const [proxy, statuses, hint] of [
      [guarded.url, [407], /wants credentials/],
      [`http://${USER}:wrong-${PASSWORD}@127.0.0.1:${guarded.port}`, [401, 407], /refused the credentials/],
    ] as const) {
      const dir = await env.dest();
      const before = (await guarded.connects()).length;
      const error = await failure(withProxyEnv({ HTTPS_PROXY: proxy }, () => download(env.fx, env.mirror, dir)));
      expect(error).toBeInstanceOf(ReleaseDownloadError);
      expect(error).toMatchObject({ reason: "proxy", code: "RELEASE_DOWNLOAD_FAILED" });
      const status = (error as ReleaseDownloadError).status!;
      expect(statuses).toContain(status);
      expect((error as Error).message).toContain(guarded.url);
      expect((error as Error).message).toContain(`HTTP ${status}`);
      expect((error as Error).message).toMatch(hint);
      // not retried: credentials do not get better by asking again
      expect((await guarded.connects()).length - before).toBe(1);
      expect(printed(error)).not.toContain(PASSWORD);
      expect(printed(error)).not.toContain(`${USER}:`);
      expect(printed(error)).not.toContain(Buffer.from(`${USER}:wrong-${PASSWORD}`).toString("base64"));
    }
  });

  it("403 (CONNECT to a port the proxy does not allow) is a `proxy` error with the status", async () => {
    const elsewhere = await freePort();
    const error = await failure(
      withProxyEnv({ HTTPS_PROXY: open.url }, async () =>
        download(
          env.fx,
          { ...env.mirror, url: env.mirror.url.replace(`:${env.mirror.port}`, `:${elsewhere}`) },
          await env.dest(),
        ),
      ),
    );
    expect(error).toMatchObject({ reason: "proxy", status: 403 });
  });

  it("a proxy that cannot reach the mirror (5xx) is retried, then a `proxy` error with its status", async () => {
    const closed = await freePort();
    const proxy = await startTinyproxy({ connectPorts: [closed] });
    try {
      const error = await failure(
        withProxyEnv({ HTTPS_PROXY: proxy.url }, async () =>
          download(
            env.fx,
            { ...env.mirror, url: env.mirror.url.replace(`:${env.mirror.port}`, `:${closed}`) },
            await env.dest(),
            {
              retry: { attempts: 2 },
            },
          ),
        ),
      );
      expect(error).toBeInstanceOf(ReleaseDownloadError);
      expect(error).toMatchObject({ reason: "proxy", attempts: 3 });
      expect((error as ReleaseDownloadError).status).toBeGreaterThanOrEqual(500);
      expect(await proxy.connects()).toHaveLength(3);
    } finally {
      await proxy.close();
    }
  });

  it("a proxy that resets the connection, or is not there: retried, then `proxy`", async () => {
    const sockets = new Set<Socket>();
    const resetting: Server = createServer((socket) => {
      sockets.add(socket);
      socket.resetAndDestroy();
    });
    await new Promise<void>((r) => resetting.listen(0, "127.0.0.1", r));
    const port = (resetting.address() as { port: number }).port;
    try {
      for (const proxy of [`http://127.0.0.1:${port}`, `http://127.0.0.1:${await freePort()}`]) {
        const error = await failure(
          withProxyEnv({ HTTPS_PROXY: proxy }, async () =>
            download(env.fx, env.mirror, await env.dest(), { retry: { attempts: 1 } }),
          ),
        );
        expect(error).toMatchObject({ reason: "proxy", attempts: 2, status: undefined });
        expect((error as Error).message).toContain(proxy);
      }
      expect(sockets.size).toBe(2);
    } finally {
      await new Promise((r) => resetting.close(r));
    }
  });

  it("resumes an interrupted download through the proxy: the second tunnel asks only for the missing bytes", async () => {
    const dir = await env.dest();
    const before = (await open.connects()).length;
    env.mirror.setFaults((r) => (r.path === TARGET && r.nth === 0 ? { kind: "reset", after: HALF } : undefined));
    env.mirror.log.length = 0;
    try {
      await withProxyEnv({ HTTPS_PROXY: open.url }, () => download(env.fx, env.mirror, dir));
    } finally {
      env.mirror.setFaults(undefined);
    }
    await expectRelease(dir);
    const ranges = env.mirror.log.filter((e) => e.path === TARGET).map((e) => e.range);
    expect(ranges).toHaveLength(2);
    expect(ranges[0]).toBeUndefined();
    expect(Number(/^bytes=(\d+)-$/.exec(ranges[1]!)![1])).toBeGreaterThanOrEqual(HALF - 64 * 1024);
    // the manifest, the other file, and the target twice: every request through the proxy
    expect((await open.connects()).length - before).toBe(4);
  });
});
