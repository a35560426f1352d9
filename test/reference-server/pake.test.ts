// The PAKE as the listener runs it: fake KE2s, single-use sessions bound to the connection and
// the key, the Join-Binding check, expired/revoked/stale codes, TLS. Attempts and the burn:
// attempts.test.ts.
import * as tls from "node:tls";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { generateJoinCode, parseJoinCode } from "../../src/core/join-code.js";
import { finishLogin } from "../../src/node/opaque.js";
import { TestJoiner, admin, keepListenerOpen, mint } from "./helpers.js";
import { eventually } from "../helpers/eventually.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer;
beforeEach(async () => {
  t = await startTestServer({ timing: { pakeSessionMs: 60_000 } });
});
afterEach(async () => {
  await t.dispose();
});

const codeInfo = async (id: string): Promise<any> =>
  (await admin(t.server, "GET", "/v1/admin/cluster/join-codes")).body.items.find((c: any) => c.id === id);

describe("POST /v1/join/pake", () => {
  it("answers an unknown selector with a fake KE2 of the same length and the real CA", async () => {
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const real = await joiner.pake(minted.code);
    let unknown: string;
    do unknown = generateJoinCode().formatted;
    while (unknown.slice(0, 2) === minted.code.slice(0, 2));
    const fake = await joiner.pake(unknown);
    expect(fake.response.status).toBe(200);
    const a = real.response.json as any;
    const b = fake.response.json as any;
    expect(b.ke2.length).toBe(a.ke2.length);
    expect(b.caCertificate).toBe(a.caCertificate);
    expect(b.session).toMatch(/^pk-[0-9A-HJKMNP-TV-Z]{16}$/);
    const caDer = new Uint8Array(Buffer.from(b.caCertificate.replace(/-----[^-]+-----|\s/g, ""), "base64"));
    expect(
      await finishLogin({ state: fake.state, ke2: b.ke2, code: parseJoinCode(unknown).code, caDer }),
    ).toBeUndefined();
    // Sending garbage as KE3 for the fake exchange: 401, as for a wrong code.
    const answer = await joiner.call("checkJoinCode", "POST", "/v1/join/code-checks", {
      json: { pake: { session: b.session, ke3: "AAAA" }, release: "0.6.0" },
      headers: { "join-binding": "AAAA" },
    });
    expect(answer.json).toMatchObject({ code: "JOIN_CODE_INVALID" });
  });

  it("refuses a malformed start with field errors and counts nothing", async () => {
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const bad = await joiner.call("startJoinPake", "POST", "/v1/join/pake", {
      json: { selector: "4f", ke1: "!!", extra: 1 },
    });
    expect(bad.status).toBe(400);
    const fields = (bad.json as any).errors.map((e: any) => e.field).sort();
    expect(fields).toEqual(expect.arrayContaining(["selector", "ke1"]));
    const garbage = await joiner.call("startJoinPake", "POST", "/v1/join/pake", {
      json: { selector: minted.joinCode.selector, ke1: "AAAA" },
    });
    expect(garbage.json).toMatchObject({
      code: "INVALID_INPUT",
      errors: [{ field: "ke1", message: "is not an OPAQUE KE1 message" }],
    });
    expect((await codeInfo(minted.joinCode.id)).attempts).toBe(0);
  });
});

describe("the KE3 call", () => {
  it("uses a session once: a replay is 409 JOIN_PAKE_RESTART", async () => {
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    await joiner.connect();
    const exchange = await joiner.exchange(minted.code);
    expect((await joiner.sendProof("code-checks", { release: "0.6.0" }, exchange)).response.status).toBe(200);
    const replay = await joiner.sendProof("code-checks", { release: "0.6.0" }, exchange);
    expect(replay.response.status).toBe(409);
    expect(replay.response.json).toMatchObject({
      code: "JOIN_PAKE_RESTART",
      detail: "No waiting PAKE exchange of this key on this connection; start again with POST /v1/join/pake.",
    });
  });

  it("refuses a session from another connection or key, without spending it", async () => {
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    await joiner.connect();
    const exchange = await joiner.exchange(minted.code);
    // The same key on a second connection.
    const second = TestJoiner.with(t.server, joiner.identity);
    await second.connect();
    expect((await second.sendProof("code-checks", { release: "0.6.0" }, exchange)).response.json).toMatchObject({
      code: "JOIN_PAKE_RESTART",
    });
    // Another key.
    const other = await TestJoiner.create(t.server);
    await other.connect();
    expect((await other.sendProof("code-checks", { release: "0.6.0" }, exchange)).response.json).toMatchObject({
      code: "JOIN_PAKE_RESTART",
    });
    await second.close();
    await other.close();
    // The owner's exchange still works.
    const owner = await joiner.sendProof("registrations", { release: "0.6.0" }, exchange);
    expect(owner.response.status).toBe(201);
  });

  it("refuses a wrong KE3 with 401 JOIN_CODE_INVALID (counted), and a verified KE3 with a wrong binding with 401 JOIN_BINDING_FAILED (proven: not counted)", async () => {
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    const badKe3 = await joiner.prove(minted.code, "code-checks", { release: "0.6.0" }, { ke3: "AAAA" });
    expect(badKe3.response.status).toBe(401);
    expect(badKe3.response.json).toMatchObject({
      code: "JOIN_CODE_INVALID",
      detail: "The join code was not proven: mistyped, or not this cluster's.",
    });
    expect(badKe3.response.headers["join-binding"]).toBeUndefined();
    expect((await codeInfo(minted.joinCode.id)).attempts).toBe(1);
    const badBinding = await joiner.prove(
      minted.code,
      "code-checks",
      { release: "0.6.0" },
      { binding: Buffer.alloc(32).toString("base64") },
    );
    // KE3 verified, so the code was proven: the binding failing means a relayed connection.
    expect(badBinding.response.status).toBe(401);
    expect(badBinding.response.json).toMatchObject({
      code: "JOIN_BINDING_FAILED",
      detail:
        "The join code was proven, but not over this TLS connection: something between the machine and the listener relays it.",
    });
    expect(badBinding.response.headers["join-binding"]).toBeUndefined();
    const noBinding = await joiner.prove(minted.code, "code-checks", { release: "0.6.0" }, { binding: null });
    expect(noBinding.response.json).toMatchObject({ code: "JOIN_BINDING_FAILED" });
    expect((await codeInfo(minted.joinCode.id)).attempts).toBe(1);
    // A wrong KE3 with a wrong binding is JOIN_CODE_INVALID: KE3 is checked first, so the
    // binding's verdict is told only to someone who knows the code.
    const both = await joiner.prove(
      minted.code,
      "code-checks",
      { release: "0.6.0" },
      { ke3: "AAAA", binding: Buffer.alloc(32).toString("base64") },
    );
    expect(both.response.json).toMatchObject({ code: "JOIN_CODE_INVALID" });
    expect((await codeInfo(minted.joinCode.id)).attempts).toBe(2);
    // A proven exchange counts nothing.
    const good = await joiner.prove(minted.code, "code-checks", { release: "0.6.0" });
    expect(good.response.status).toBe(200);
    expect(good.serverBindingOk).toBe(true);
    await joiner.close();
    expect((await codeInfo(minted.joinCode.id)).attempts).toBe(2);
  });

  it("tells the holder of an expired code why, after the proof", async () => {
    const minted = await mint(t.server, { ttlSeconds: 1 });
    await keepListenerOpen(t.server, minted.code);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await codeInfo(minted.joinCode.id)).state).toBe("expired");
    const joiner = await TestJoiner.create(t.server);
    const answer = await joiner.register(minted.code);
    expect(answer.response.status).toBe(401);
    expect(answer.response.json).toMatchObject({
      code: "JOIN_CODE_EXPIRED",
      detail: "The join code has expired; mint a new one.",
    });
    expect(answer.serverBindingOk).toBe(true);
  });

  it("tells the holder of a revoked code who revoked it", async () => {
    const minted = await mint(t.server);
    const revoked = await admin(t.server, "DELETE", `/v1/admin/cluster/join-codes/${minted.joinCode.id}`, {
      operationId: "revokeJoinCode",
    });
    expect(revoked.body).toMatchObject({ state: "revoked", revokedBy: "bootstrap-admin" });
    // Revoking again answers it as it is.
    const again = await admin(t.server, "DELETE", `/v1/admin/cluster/join-codes/${minted.joinCode.id}`, {
      operationId: "revokeJoinCode",
    });
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
    const joiner = await TestJoiner.create(t.server);
    // No code live, no registration: the listener closes. Another code opens it again.
    await eventually(() => !t.server.joinListenerOpen);
    await keepListenerOpen(t.server, minted.code);
    expect(t.server.joinListenerOpen).toBe(true);
    const answer = await joiner.register(minted.code);
    expect(answer.response.json).toMatchObject({
      code: "JOIN_CODE_REVOKED",
      detail: "The join code was revoked.",
      details: { revokedBy: "bootstrap-admin" },
    });
  });

  it("answers 503 UPGRADE_IN_PROGRESS with Retry-After, and counts no attempt", async () => {
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    await joiner.connect();
    const exchange = await joiner.exchange(minted.code);
    const set = await admin(t.server, "PUT", "/v1/admin/cluster/upgrade", {
      body: { inProgress: true, retryAfterSeconds: 7 },
      operationId: "setClusterUpgrade",
    });
    expect(set.body).toEqual({ inProgress: true, retryAfterSeconds: 7 });
    const answer = await joiner.sendProof("registrations", { release: "0.6.0" }, exchange);
    expect(answer.response.status).toBe(503);
    expect(answer.response.headers["retry-after"]).toBe("7");
    expect(answer.response.json).toMatchObject({ code: "UPGRADE_IN_PROGRESS" });
    expect((await codeInfo(minted.joinCode.id)).attempts).toBe(0);
    const pake = await joiner.pake(minted.code);
    expect(pake.response.status).toBe(503);
    await admin(t.server, "PUT", "/v1/admin/cluster/upgrade", {
      body: { inProgress: false },
      operationId: "setClusterUpgrade",
    });
    expect((await joiner.register(minted.code)).response.status).toBe(201);
  });

  it("expires a session after its lifetime", async () => {
    await t.dispose();
    t = await startTestServer({ timing: { pakeSessionMs: 200 } });
    const minted = await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    await joiner.connect();
    const exchange = await joiner.exchange(minted.code);
    await new Promise((r) => setTimeout(r, 300));
    expect((await joiner.sendProof("code-checks", { release: "0.6.0" }, exchange)).response.json).toMatchObject({
      code: "JOIN_PAKE_RESTART",
    });
  });
});

describe("a CA rotation", () => {
  it("ends every live code: JOIN_CODE_STALE at once", async () => {
    const minted = await mint(t.server);
    const before = t.server.caFingerprint;
    const rotated = await admin(t.server, "POST", "/v1/admin/cluster/ca-rotations", { operationId: "rotateClusterCa" });
    expect(rotated.status).toBe(200);
    expect(rotated.body.revokedCodes).toBe(1);
    expect(rotated.body.caFingerprint).not.toBe(before);
    expect(rotated.body.caFingerprint).toBe(t.server.caFingerprint);
    expect(await codeInfo(minted.joinCode.id)).toMatchObject({ state: "revoked", revokedBy: "system:ca-rotation" });
    const fresh = await mint(t.server); // keeps the listener open, under the new CA
    expect(fresh.joinCode.caFingerprint).toBe(t.server.caFingerprint);
    const joiner = await TestJoiner.create(t.server);
    const stale = await joiner.pake(minted.code);
    expect(stale.response.status).toBe(401);
    expect(stale.response.json).toMatchObject({
      code: "JOIN_CODE_STALE",
      detail: "The join code was minted under a cluster CA that has since rotated; mint a new one.",
    });
    // The new code works, and the listener's leaf chains to the new CA (checked by the helper).
    const ok = await joiner.register(fresh.code);
    expect(ok.response.status).toBe(201);
    expect(t.server.store.auditEntries().some((e) => e.action === "cluster.ca.rotated")).toBe(true);
  });
});

describe("TLS of the join listener", () => {
  const connectRaw = (options: tls.ConnectionOptions): Promise<tls.TLSSocket> =>
    new Promise((resolve, reject) => {
      const socket = tls.connect({ host: "127.0.0.1", port: t.server.joinPort, rejectUnauthorized: false, ...options });
      socket.once("secureConnect", () => resolve(socket));
      socket.once("error", reject);
    });

  it("refuses TLS 1.2", async () => {
    await mint(t.server);
    // The listener's alert, not any failure: protocol_version (RFC 8446 section 6.2).
    await expect(connectRaw({ maxVersion: "TLSv1.2" })).rejects.toMatchObject({
      code: "ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION",
    });
  });

  it("answers a client without a certificate 401 on every call", async () => {
    await mint(t.server);
    const socket = await connectRaw({});
    expect(socket.getProtocol()).toBe("TLSv1.3");
    const answer = await new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (d) => {
        text += d.toString();
        if (text.includes("}")) resolve(text);
      });
      socket.write(
        "POST /v1/join/pake HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
      );
    });
    socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 401/);
    expect(answer).toContain('"code":"UNAUTHORIZED"');
  });

  it("issues no session tickets", async () => {
    await mint(t.server);
    const joiner = await TestJoiner.create(t.server);
    let tickets = 0;
    const socket = await connectRaw({ cert: joiner.identity.certPem, key: joiner.identity.keyPem });
    socket.on("session", () => tickets++);
    socket.write("GET /v1/join/registrations/nj-x HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((r) => socket.once("data", r));
    socket.destroy();
    expect(tickets).toBe(0);
  });

  it("asks for a client certificate and names its addresses and the listener role", async () => {
    await mint(t.server);
    const socket = await connectRaw({});
    const leaf = socket.getPeerX509Certificate()!;
    socket.destroy();
    expect(leaf.subjectAltName).toContain("IP Address:127.0.0.1");
    // And the API VIP (spec: mintJoinCode, "a cluster-CA certificate for its addresses and the API VIP").
    expect(leaf.subjectAltName).toContain(`IP Address:${t.server.cluster.settings.vips.api}`);
    expect(leaf.subjectAltName).toContain("URI:urn:stratum:join-listener");
    expect(leaf.checkIssued(new (await import("node:crypto")).X509Certificate(t.server.caPem))).toBe(true);
  });
});
