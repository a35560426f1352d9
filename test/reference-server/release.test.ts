// The cluster's upgrade rules and the release the founder serves: needs-upgrade registrations,
// RELEASE_MISMATCH reasons, ranges, ETag/If-Range, 416, HEAD, RELEASE_BUSY, path traversal,
// and the SDK's downloader fetching the whole release from the reference server.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dispatcherSource } from "../../src/transport/sources.js";
import { downloadReleaseFrom } from "../../src/transport/download/index.js";
import { generateReleaseKeyPair, signReleaseDirectory } from "../../src/release/index.js";
import { connect as connectTls } from "node:tls";
import { TestJoiner, admin, mint } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let releaseRoot: string;
let keys: ReturnType<typeof generateReleaseKeyPair>;
const BIG = 64 * 1024 * 1024;

beforeAll(async () => {
  releaseRoot = mkdtempSync(join(tmpdir(), "stratum-releases-"));
  const dir = join(releaseRoot, "0.6.0");
  mkdirSync(join(dir, "os", "blobs"), { recursive: true });
  mkdirSync(join(dir, "sysext"), { recursive: true });
  writeFileSync(join(dir, "os", "blobs", "sha256-small"), Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251)));
  writeFileSync(join(dir, "sysext", "stratum.raw"), "sysext image\n");
  // Sparse: cheap to make, big enough that a reader who stops reading holds the answer open.
  writeFileSync(join(dir, "os", "blobs", "sha256-big"), "");
  truncateSync(join(dir, "os", "blobs", "sha256-big"), BIG);
  keys = generateReleaseKeyPair();
  await signReleaseDirectory(dir, { release: "0.6.0", keys: [keys.privateKeyPem] });
  // Not part of the release: outside the served roots, and a symlink pointing out of it.
  writeFileSync(join(releaseRoot, "secret.txt"), "not yours\n");
  writeFileSync(join(dir, "notes.txt"), "not served\n");
  symlinkSync(join(releaseRoot, "secret.txt"), join(dir, "os", "escape"));
});
afterAll(() => {
  rmSync(releaseRoot, { recursive: true, force: true });
});

describe("a joiner on an older release", () => {
  let t: TestServer;
  let code: string;
  let joiner: TestJoiner;
  let joinId: string;
  const base = (): string => `/v1/join/registrations/${joinId}/release`;
  beforeAll(async () => {
    t = await startTestServer({ releaseDir: releaseRoot });
    code = (await mint(t.server)).code;
    joiner = await TestJoiner.create(t.server);
    const checked = await joiner.prove(code, "code-checks", { release: "0.5.0", selfUpgrade: true });
    expect(checked.response.json).toMatchObject({
      clusterRelease: "0.6.0",
      upgrade: { from: "0.5.0", to: "0.6.0", served: true },
    });
    const registered = await joiner.register(code, { release: "0.5.0", selfUpgrade: true });
    expect(registered.response.status).toBe(201);
    expect(registered.response.json).toMatchObject({
      state: "needs-upgrade",
      upgrade: { from: "0.5.0", to: "0.6.0", served: true },
    });
    joinId = (registered.response.json as any).joinId;
  });
  afterAll(async () => {
    await joiner.close();
    await t.dispose();
  });

  it("serves a whole file with its ETag, and HEAD without the body", async () => {
    const whole = await joiner.call("getServedReleaseFile", "GET", `${base()}/os/blobs/sha256-small`);
    expect(whole.status).toBe(200);
    expect(whole.headers["accept-ranges"]).toBe("bytes");
    expect(whole.headers["content-length"]).toBe("1000");
    expect(whole.headers["content-type"]).toBe("application/octet-stream");
    expect(whole.headers["content-encoding"]).toBeUndefined();
    expect(whole.headers.etag).toMatch(/^"[0-9a-f]+"$/);
    expect(Buffer.from(whole.body)).toEqual(readFileSync(join(releaseRoot, "0.6.0", "os", "blobs", "sha256-small")));
    const head = await joiner.call("headServedReleaseFile", "HEAD", `${base()}/os/blobs/sha256-small`);
    expect(head.status).toBe(200);
    expect(head.headers.etag).toBe(whole.headers.etag);
    expect(head.headers["content-length"]).toBe("1000");
    expect(head.body.length).toBe(0);
  });

  it("serves single ranges, honours If-Range, and answers 416 past the end", async () => {
    const file = readFileSync(join(releaseRoot, "0.6.0", "os", "blobs", "sha256-small"));
    const path = `${base()}/os/blobs/sha256-small`;
    const etag = (await joiner.call("headServedReleaseFile", "HEAD", path)).headers.etag as string;
    const part = await joiner.call("getServedReleaseFile", "GET", path, { headers: { range: "bytes=10-19" } });
    expect(part.status).toBe(206);
    expect(part.headers["content-range"]).toBe("bytes 10-19/1000");
    expect(Buffer.from(part.body)).toEqual(file.subarray(10, 20));
    const open = await joiner.call("getServedReleaseFile", "GET", path, { headers: { range: "bytes=990-" } });
    expect(open.headers["content-range"]).toBe("bytes 990-999/1000");
    const suffix = await joiner.call("getServedReleaseFile", "GET", path, { headers: { range: "bytes=-5" } });
    expect(Buffer.from(suffix.body)).toEqual(file.subarray(995));
    const same = await joiner.call("getServedReleaseFile", "GET", path, {
      headers: { range: "bytes=100-", "if-range": etag },
    });
    expect(same.status).toBe(206);
    const changed = await joiner.call("getServedReleaseFile", "GET", path, {
      headers: { range: "bytes=100-", "if-range": '"stale"' },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.length).toBe(1000);
    const past = await joiner.call("getServedReleaseFile", "GET", path, { headers: { range: "bytes=1000-" } });
    expect(past.status).toBe(416);
    expect(past.headers["content-range"]).toBe("bytes */1000");
    expect(past.json).toMatchObject({ code: "RANGE_NOT_SATISFIABLE" });
    const several = await joiner.call("getServedReleaseFile", "GET", path, { headers: { range: "bytes=0-1,5-6" } });
    expect(several.status).toBe(200);
  });

  it("refuses paths out of the release", async () => {
    for (const path of [
      "os/..%2F..%2Fsecret.txt",
      "os/%2e%2e/%2e%2e/secret.txt",
      "notes.txt",
      "os/escape",
      "os/blobs",
      "os//blobs/sha256-small",
      "os/blobs/nope",
    ]) {
      const answer = await joiner.call("getServedReleaseFile", "GET", `${base()}/${path}`);
      expect(answer.status, path).toBe(404);
    }
  });

  it("serves a few files at once per registration, then 503 RELEASE_BUSY", async () => {
    const extra = await Promise.all(
      [1, 2, 3, 4].map(async () => {
        const j = TestJoiner.with(t.server, joiner.identity);
        j.caDer = joiner.caDer;
        await j.connect();
        return j;
      }),
    );
    // Three answers left unread hold their slots.
    const clients = await Promise.all(extra.slice(0, 3).map((j) => j.undiciClient()));
    const held = await Promise.all(
      clients.map((c) => c.request({ method: "GET", path: `${base()}/os/blobs/sha256-big` })),
    );
    expect(held.map((h) => h.statusCode)).toEqual([200, 200, 200]);
    const busy = await extra[3]!.call("getServedReleaseFile", "GET", `${base()}/sysext/stratum.raw`);
    expect(busy.status).toBe(503);
    expect(busy.headers["retry-after"]).toBe("1");
    expect(busy.json).toMatchObject({ code: "RELEASE_BUSY" });
    for (const h of held) h.body.destroy();
    await Promise.all(clients.map((c) => c.destroy()));
    await Promise.all(extra.slice(0, 3).map((j) => j.close()));
    // The founder frees the slots when it sees the connections close, which a loaded machine
    // can take a while to get to.
    await eventually(
      async () => (await extra[3]!.call("getServedReleaseFile", "GET", `${base()}/sysext/stratum.raw`)).status === 200,
      10_000,
      "a slot freed",
    );
    await extra[3]!.close();
  });

  it("serves nothing to another key, nor during an upgrade", async () => {
    const stranger = await TestJoiner.create(t.server);
    stranger.caDer = joiner.caDer;
    expect((await stranger.call("getServedReleaseFile", "GET", `${base()}/sysext/stratum.raw`)).status).toBe(404);
    await stranger.close();
    t.server.setUpgrade(true, 3);
    const answer = await joiner.call("getServedReleaseFile", "GET", `${base()}/sysext/stratum.raw`);
    expect(answer.status).toBe(503);
    expect(answer.json).toMatchObject({ code: "UPGRADE_IN_PROGRESS" });
    t.server.setUpgrade(false);
  });

  it("lets the SDK's downloader fetch and verify the whole release", async () => {
    const dest = mkdtempSync(join(tmpdir(), "stratum-dl-"));
    try {
      const result = await downloadReleaseFrom({
        upgrade: { from: "0.5.0", to: "0.6.0", served: true },
        source: dispatcherSource(await joiner.undiciClient(), base()),
        destDir: dest,
        trustedKeys: [keys.publicKeyPem],
      });
      expect(result.files.map((f) => f.path).sort()).toEqual([
        "os/blobs/sha256-big",
        "os/blobs/sha256-small",
        "sysext/stratum.raw",
      ]);
    } finally {
      rmSync(dest, { recursive: true, force: true });
    }
  });

  it("logs the peer's address of every served file, also of a download cut off part way", async () => {
    const logged = t.logs.length;
    // Each request on a connection of its own, cut (reset) as soon as the answer starts: the
    // answer's log line is written after the socket is gone.
    for (let i = 0; i < 8; i++) {
      await new Promise<void>((resolve, reject) => {
        const socket = connectTls({
          host: "127.0.0.1",
          port: t.server.joinPort,
          cert: joiner.identity.certPem,
          key: joiner.identity.keyPem,
          rejectUnauthorized: false,
          minVersion: "TLSv1.3",
        });
        socket.once("secureConnect", () =>
          socket.write(`GET ${base()}/os/blobs/sha256-big HTTP/1.1\r\nHost: founder\r\nConnection: close\r\n\r\n`),
        );
        socket.once("data", () => {
          socket.destroy();
          resolve();
        });
        socket.once("error", reject);
      });
    }
    await eventually(() => t.logs.slice(logged).filter((l) => l.includes("/release/")).length >= 8 || undefined);
    const lines = t.logs.slice(logged).filter((l) => l.includes("/release/"));
    for (const line of lines) expect(line).toMatch(/ join 127\.0\.0\.1 GET /);
  });

  it("records upgrade failures without leaving needs-upgrade, and becomes pending on the cluster's release", async () => {
    const failed = await joiner.progress(joinId, {
      steps: [
        {
          name: "upgrade/download",
          title: "Downloading the cluster's release",
          status: "failed",
          message: "disk full",
        },
      ],
      log: ["download failed"],
    });
    expect(failed.json).toMatchObject({
      state: "needs-upgrade",
      failedStep: "upgrade/download",
      failedError: "disk full",
    });
    const view = await admin(t.server, "GET", `/v1/admin/cluster/joins/${joinId}`, { operationId: "getNodeJoin" });
    expect(view.body).toMatchObject({
      state: "needs-upgrade",
      failedStepTitle: "Downloading the cluster's release",
      upgrade: { to: "0.6.0" },
    });
    const upgraded = await TestJoiner.with(t.server, joiner.identity).register(code, { release: "0.6.0" });
    expect(upgraded.response.status).toBe(200);
    expect(upgraded.response.json).toMatchObject({ joinId, state: "pending" });
    expect((upgraded.response.json as any).upgrade).toBeUndefined();
    expect((await joiner.call("getServedReleaseFile", "GET", `${base()}/sysext/stratum.raw`)).status).toBe(409);
  });
});

describe("RELEASE_MISMATCH", () => {
  it("names the rule that failed, the cluster's release and its ISO path", async () => {
    const t = await startTestServer();
    try {
      const { code } = await mint(t.server);
      const joiner = await TestJoiner.create(t.server);
      const cases: [string, boolean, string][] = [
        ["0.6", true, "malformed"],
        ["0.7.0", true, "newer"],
        ["0.3.0", true, "too-old"],
        ["1.6.0", true, "newer"],
        ["0.5.0", false, "no-self-upgrade"],
        ["0.5.0", true, "not-available"],
      ];
      for (const [release, selfUpgrade, reason] of cases) {
        const answer = await joiner.prove(code, "code-checks", { release, selfUpgrade });
        expect(answer.response.status, release).toBe(409);
        expect(answer.response.json).toMatchObject({
          code: "RELEASE_MISMATCH",
          details: { clusterRelease: "0.6.0", isoPath: "/releases/stratum-0.6.0.iso", reason },
        });
      }
      const registered = await joiner.register(code, { release: "0.4.0", selfUpgrade: true });
      expect(registered.response.json).toMatchObject({
        code: "RELEASE_MISMATCH",
        details: { reason: "not-available" },
      });
      expect((await admin(t.server, "GET", "/v1/admin/cluster/joins")).body.items).toEqual([]);
      await joiner.close();
    } finally {
      await t.dispose();
    }
  });

  it("sends a joiner to the mirror when one is named", async () => {
    const t = await startTestServer({
      releaseMirror: "https://mirror.example/releases/stratum/",
      releaseDir: releaseRoot,
    });
    try {
      const { code } = await mint(t.server);
      const joiner = await TestJoiner.create(t.server);
      const answer = await joiner.register(code, { release: "0.4.0", selfUpgrade: true });
      expect(answer.response.json).toMatchObject({
        state: "needs-upgrade",
        upgrade: { from: "0.4.0", to: "0.6.0", source: "https://mirror.example/releases/stratum/0.6.0/" },
      });
      expect((answer.response.json as any).upgrade.served).toBeUndefined();
      await joiner.close();
    } finally {
      await t.dispose();
    }
  });
});
