// The attacks of the joiner issue, each against the reference server over real TLS on
// loopback, each ending in a clear error with nothing registered that should not be.
import { X509Certificate } from "node:crypto";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBase64Url } from "../../src/core/bytes.js";
import { bindingTranscript, clientBinding, deriveBindingKeys } from "../../src/core/pairing.js";
import { parseJoinUrl, StratumApiError, type JoinCode } from "../../src/index.js";
import { JoinProtocolError } from "../../src/errors/join.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { checkJoinCode, registerMachine } from "../../src/node/join-calls.js";
import { finishLogin, startLogin } from "../../src/node/opaque.js";
import { openPinnedConnection, type PinnedConnection } from "../../src/node/pinned-connection.js";
import { caFingerprint } from "../../src/protocol/pki.js";
import { createClusterCa, issueListenerCertificate, issueNodeCertificate } from "../../src/server/ca.js";
import { eventually } from "../helpers/eventually.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { startTlsRelay, type Relay } from "./relay.js";

let h: TestServer;
let url: string;
let code: JoinCode;

beforeAll(async () => {
  // The founder-wide rate of live KE2s is raised: these attacks each spend a few, and one holds
  // a code's whole budget (the rate itself: test/reference-server/live-rate.test.ts).
  h = await startTestServer({ limits: { liveKe2Burst: 1_000 } });
  const minted = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
  url = minted.url;
  code = parseJoinUrl(url).code;
});
afterAll(async () => h?.dispose());

const joins = async () => (await h.admin.listNodeJoins()).items.length;

/** A newly minted code: its join URL and the code. */
async function freshCode(): Promise<{ url: string; code: JoinCode }> {
  const minted = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
  return { url: minted.url, code: parseJoinUrl(minted.url).code };
}

/** The relay's join URL for another code. */
const relayUrl = (relay: Relay, joinCode: JoinCode) => relay.url.replace(code.formatted, joinCode.formatted);

/** A relay of the tests' own between the joiner and the reference server (test/node/relay.ts). */
const startRelay = (
  leaf: { certPem: string; keyPem: string },
  rewritePake?: (body: Record<string, unknown>) => Record<string, unknown>,
): Promise<Relay> =>
  startTlsRelay({ host: h.server.joinHost, port: h.server.joinPort }, leaf, {
    code,
    ...(rewritePake ? { rewritePake } : {}),
  });

const kePaths = (relay: Relay) =>
  relay.forwarded.filter((r) => r.includes("/code-checks") || r.includes("/registrations"));

// ---------------------------------------------------------------- a raw exchange

/** Runs KE1/KE2/finishLogin on `connection` and returns what a KE3 call needs, without sending it. */
// Each exchange left unproven counts as an attempt on its code; tests that leave several use a
// code of their own (`freshCode`) so the shared one is not burned.
async function rawProof(connection: PinnedConnection, identity: MachineIdentity, joinCode: JoinCode = code) {
  const login = await startLogin(joinCode.code);
  const answer = await connection.request({
    method: "POST",
    path: "/v1/join/pake",
    json: { selector: joinCode.selector, ke1: login.ke1 },
  });
  expect(answer.status).toBe(200);
  const challenge = answer.json as { session: string; ke2: string; caCertificate: string; serverTime: string };
  const caDer = new Uint8Array(new X509Certificate(challenge.caCertificate).raw);
  const finished = await finishLogin({ state: login.state, ke2: challenge.ke2, code: joinCode.code, caDer });
  expect(finished).toBeDefined();
  const keys = await deriveBindingKeys(finished!.sessionKey);
  const transcript = await bindingTranscript({
    session: challenge.session,
    ke1: fromBase64Url(login.ke1),
    ke2: fromBase64Url(challenge.ke2),
    caFingerprint: caFingerprint(caDer),
    clientKeyFingerprint: identity.keyFingerprint,
    exporter: connection.exporter(),
    serverTime: challenge.serverTime,
  });
  return {
    body: { pake: { session: challenge.session, ke3: finished!.ke3 }, release: "0.6.0" },
    binding: await clientBinding(keys.kc, transcript),
  };
}

const connectAs = (identity: MachineIdentity) =>
  openPinnedConnection({ host: h.server.joinHost, port: h.server.joinPort, identity });

// ---------------------------------------------------------------- the attacks

describe("attacks on the join exchange", () => {
  it("a relay that swaps the CA in the answer: the joiner stops before KE3", async () => {
    const other = await createClusterCa();
    const leaf = await issueListenerCertificate(other, { hosts: ["127.0.0.1"] });
    const relay = await startRelay(leaf, (body) => ({ ...body, caCertificate: other.certPem }));
    try {
      const before = await joins();
      const error = await registerMachine({
        url: relay.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JoinProtocolError);
      expect((error as JoinProtocolError).code).toBe("LISTENER_NOT_PROVEN");
      expect(kePaths(relay)).toEqual([]);
      expect(await joins()).toBe(before);
    } finally {
      await relay.close();
    }
  });

  it("a relay with a leaf from another CA: the chain check stops it before KE3", async () => {
    const other = await createClusterCa();
    const relay = await startRelay(await issueListenerCertificate(other, { hosts: ["127.0.0.1"] }));
    try {
      const before = await joins();
      const error = await registerMachine({
        url: relay.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "chain" });
      expect(kePaths(relay)).toEqual([]);
      expect(await joins()).toBe(before);
    } finally {
      await relay.close();
    }
  });

  it("a relay with a node transport leaf of the cluster's own CA: the role check stops it", async () => {
    const nodeLeaf = await issueNodeCertificate(h.server.cluster.ca, { nodeId: "n-stolen01", hosts: ["127.0.0.1"] });
    const relay = await startRelay(nodeLeaf);
    try {
      const before = await joins();
      const error = await registerMachine({
        url: relay.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "role" });
      expect(kePaths(relay)).toEqual([]);
      expect(await joins()).toBe(before);
    } finally {
      await relay.close();
    }
  });

  it("a relay with a listener leaf of the cluster's CA that terminates TLS: reported as an intercepted connection", async () => {
    const stolen = await issueListenerCertificate(h.server.cluster.ca, { hosts: ["127.0.0.1"] });
    const relay = await startRelay(stolen);
    const own = await freshCode();
    try {
      const before = await joins();
      const registering = await registerMachine({
        url: relayUrl(relay, own.code),
        identity: await createMachineIdentity(),
        release: "0.6.0",
      }).catch((e: unknown) => e);
      expect(registering).toBeInstanceOf(JoinProtocolError);
      expect((registering as JoinProtocolError).code).toBe("CONNECTION_INTERCEPTED");
      // The listener's own refusal is kept as the cause: 401 JOIN_BINDING_FAILED.
      expect((registering as JoinProtocolError).cause).toMatchObject({ status: 401, code: "JOIN_BINDING_FAILED" });
      expect((registering as Error).message).not.toContain(own.code.formatted);
      expect((registering as Error).message).not.toContain(own.code.code);
      const checking = await checkJoinCode({ url: relayUrl(relay, own.code), release: "0.6.0" }).catch(
        (e: unknown) => e,
      );
      expect(checking).toBeInstanceOf(JoinProtocolError);
      expect((checking as JoinProtocolError).code).toBe("CONNECTION_INTERCEPTED");
      expect(kePaths(relay)).toEqual(["POST /v1/join/registrations", "POST /v1/join/code-checks"]);
      expect(await joins()).toBe(before);
    } finally {
      await relay.close();
    }
  });

  it("through the same relay, a KE3 that does not verify is still JOIN_CODE_INVALID: a guesser learns nothing new", async () => {
    const stolen = await issueListenerCertificate(h.server.cluster.ca, { hosts: ["127.0.0.1"] });
    const relay = await startRelay(stolen);
    const own = await freshCode();
    const identity = await createMachineIdentity();
    const port = Number(new URL(relay.url.replace("stratum-join:", "https:")).port);
    const viaRelay = await openPinnedConnection({ host: "127.0.0.1", port, identity });
    const direct = await connectAs(identity);
    try {
      // A well-formed KE3 from another exchange (a guesser cannot make one for this exchange
      // without the code), and garbage: neither verifies, and the binding fails too.
      const other = await rawProof(direct, identity, own.code);
      for (const ke3 of [other.body.pake.ke3, "AAAA"]) {
        const proof = await rawProof(viaRelay, identity, own.code);
        const answer = await viaRelay.request({
          method: "POST",
          path: "/v1/join/code-checks",
          headers: { "join-binding": proof.binding },
          json: { ...proof.body, pake: { ...proof.body.pake, ke3 } },
        });
        expect(answer.status).toBe(401);
        expect(answer.json).toMatchObject({ code: "JOIN_CODE_INVALID" });
      }
    } finally {
      await viaRelay.close();
      await direct.close();
      await relay.close();
    }
  });

  it("KE3 on another connection is refused (409 JOIN_PAKE_RESTART), and nothing is registered", async () => {
    const identity = await createMachineIdentity();
    const first = await connectAs(identity);
    const second = await connectAs(identity);
    try {
      const before = await joins();
      const proof = await rawProof(first, identity);
      const answer = await second.request({
        method: "POST",
        path: "/v1/join/registrations",
        headers: { "join-binding": proof.binding },
        json: proof.body,
      });
      expect(answer.status).toBe(409);
      expect(answer.json).toMatchObject({ code: "JOIN_PAKE_RESTART" });
      expect(await joins()).toBe(before);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("a replayed KE3 finds nothing (409 JOIN_PAKE_RESTART)", async () => {
    const identity = await createMachineIdentity();
    const connection = await connectAs(identity);
    try {
      const proof = await rawProof(connection, identity);
      const ok = await connection.request({
        method: "POST",
        path: "/v1/join/code-checks",
        headers: { "join-binding": proof.binding },
        json: proof.body,
      });
      expect(ok.status).toBe(200);
      const replay = await connection.request({
        method: "POST",
        path: "/v1/join/registrations",
        headers: { "join-binding": proof.binding },
        json: proof.body,
      });
      expect(replay.status).toBe(409);
      expect(replay.json).toMatchObject({ code: "JOIN_PAKE_RESTART" });
    } finally {
      await connection.close();
    }
  });

  it("a session past its expiry is refused (409 JOIN_PAKE_RESTART)", async () => {
    // A founder of its own whose exchanges live 300 ms: the proof outlives its session on any
    // machine, fast or loaded, and the others' sessions keep their usual lifetime.
    const short = await startTestServer({ timing: { pakeSessionMs: 300 } });
    const identity = await createMachineIdentity();
    try {
      const minted = await short.admin.mintJoinCode({ endpoint: short.server.joinEndpoint });
      const connection = await openPinnedConnection({
        host: short.server.joinHost,
        port: short.server.joinPort,
        identity,
      });
      try {
        const proof = await rawProof(connection, identity, parseJoinUrl(minted.url).code);
        await new Promise((r) => setTimeout(r, 400));
        const answer = await connection.request({
          method: "POST",
          path: "/v1/join/registrations",
          headers: { "join-binding": proof.binding },
          json: proof.body,
        });
        expect(answer.status).toBe(409);
        expect(answer.json).toMatchObject({ code: "JOIN_PAKE_RESTART" });
        expect((await short.admin.listNodeJoins()).items).toEqual([]);
      } finally {
        await connection.close();
      }
    } finally {
      await short.dispose();
    }
  });

  it("an unknown selector gets a KE2 of the same length and the real CA", async () => {
    const identity = await createMachineIdentity();
    const connection = await connectAs(identity);
    try {
      const login = await startLogin(code.code);
      const real = await connection.request({
        method: "POST",
        path: "/v1/join/pake",
        json: { selector: code.selector, ke1: login.ke1 },
      });
      const unknownSelector = code.selector === "ZZ" ? "ZY" : "ZZ";
      const fake = await connection.request({
        method: "POST",
        path: "/v1/join/pake",
        json: { selector: unknownSelector, ke1: login.ke1 },
      });
      expect(fake.status).toBe(200);
      const a = real.json as { ke2: string; caCertificate: string };
      const b = fake.json as { ke2: string; caCertificate: string };
      expect(b.ke2.length).toBe(a.ke2.length);
      expect(b.caCertificate).toBe(a.caCertificate);
    } finally {
      await connection.close();
    }
  });

  it("TLS 1.2 is refused by the listener", async () => {
    const identity = await createMachineIdentity();
    const outcome = await new Promise<string>((resolve) => {
      const socket = tlsConnect({
        host: h.server.joinHost,
        port: h.server.joinPort,
        cert: identity.certPem,
        key: identity.keyPem,
        maxVersion: "TLSv1.2",
        rejectUnauthorized: false,
      });
      socket.once("secureConnect", () => {
        resolve(`connected with ${socket.getProtocol()}`);
        socket.destroy();
      });
      socket.once("error", (error) => resolve(`refused: ${error.message}`));
    });
    expect(outcome).toMatch(/^refused/);
  });

  it("a guesser gets 10 KE2s of a code however parallel; when they end unproven the code burns, and the right code then fails with the reason", async () => {
    const minted = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    const target = parseJoinUrl(minted.url).code;
    const identity = await createMachineIdentity();
    const connections = await Promise.all(Array.from({ length: 11 }, () => connectAs(identity)));
    try {
      // Eleven KE1s at once: ten exchanges fill the code's budget, the eleventh must wait.
      const answers = await Promise.all(
        connections.map(async (c) =>
          c.request({
            method: "POST",
            path: "/v1/join/pake",
            json: { selector: target.selector, ke1: (await startLogin(target.code)).ke1 },
          }),
        ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([...Array(10).fill(200), 503]);
      expect(answers.find((a) => a.status === 503)!.json).toMatchObject({ code: "JOIN_CODE_BUSY" });
    } finally {
      // No KE3: each of the ten ends unproven as its connection closes.
      await Promise.all(connections.map((c) => c.close()));
    }
    await eventually(
      async () =>
        (await h.admin.listJoinCodes()).items.find((c) => c.id === minted.joinCode.id)!.state === "revoked" ||
        undefined,
      5_000,
      "the code burned",
    );
    const listed = (await h.admin.listJoinCodes()).items.find((c) => c.id === minted.joinCode.id)!;
    expect(listed.state).toBe("revoked");
    expect(listed.revokedBy).toBe("system:too-many-attempts");
    const error = await checkJoinCode({ url: minted.url, release: "0.6.0" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StratumApiError);
    expect((error as StratumApiError).code).toBe("JOIN_CODE_REVOKED");
    expect((error as StratumApiError).details).toMatchObject({ revokedBy: "system:too-many-attempts" });
  });
});
