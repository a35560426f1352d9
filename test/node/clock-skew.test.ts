// A joiner whose clock is years off the founder's (docs/protocol.md#founder-time), against a
// listener of the tests' own over real TLS: the listener's certificates are made at the
// founder's time, three years after the joiner's clock, so by the joiner's own clock they are
// not valid yet. The joiner judges them by the `serverTime` of the PAKE answer, which the
// channel binding covers: a relay that alters it is caught. (test/cli/clock-skew.test.ts runs
// the real CLI under libfaketime against the reference server.)
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { JoinProtocolError } from "../../src/errors/join.js";
import { createMachineIdentity, loadMachineIdentity } from "../../src/node/identity.js";
import { parseJoinSession, serializeJoinSession } from "../../src/node/join-session.js";
import { checkJoinCode, registerMachine } from "../../src/node/join-calls.js";
import { getRegistration } from "../../src/node/registration.js";
import { createClusterCa, issueListenerCertificate } from "../../src/server/index.js";
import { startFakeListener, type FakeListener } from "./fake-listener.js";

const YEAR_MS = 365 * 86_400_000;
const AHEAD_MS = 3 * YEAR_MS;

/** A cluster CA and listener leaf made when the founder's clock said `at`. */
async function pkiMadeAt(at: number) {
  vi.useFakeTimers({ toFake: ["Date"], now: at });
  try {
    const ca = await createClusterCa();
    const leaf = await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] });
    return { ca, leaf };
  } finally {
    vi.useRealTimers();
  }
}

let future: FakeListener;
let honestClock: FakeListener;
beforeAll(async () => {
  const pki = await pkiMadeAt(Date.now() + AHEAD_MS);
  // The founder's clock is three years ahead of this machine's; its certificates agree with it.
  future = await startFakeListener({ pki, clock: () => Date.now() + AHEAD_MS });
  // The same certificates, but a founder that tells this machine's own time.
  honestClock = await startFakeListener({ pki });
});
afterEach(() => {
  future.resetBehaviour();
  honestClock.resetBehaviour();
});
afterAll(async () => {
  await future?.close();
  await honestClock?.close();
});

/** What registering a fresh machine with the listener at `url` throws. */
async function refusalOf(url: string): Promise<unknown> {
  const identity = await createMachineIdentity();
  return registerMachine({ url, identity, release: "0.6.0" }).catch((e: unknown) => e);
}

describe("a joiner whose clock is three years behind the founder's", () => {
  it("judges the listener's leaf by the founder's time, registers, and reports the offset", async () => {
    const identity = await createMachineIdentity();
    const result = await registerMachine({ url: future.url, identity, release: "0.6.0" });
    expect(result.created).toBe(true);
    // Measured, not assumed: three years, give or take the exchange's own time.
    expect(Math.abs(result.clockOffsetMs - AHEAD_MS)).toBeLessThan(60_000);
    expect(result.session.clockOffsetMs).toBe(result.clockOffsetMs);
    // The session keeps the offset across a reboot, and a later call pinned to the CA judges
    // the leaf by it (OpenSSL, which only knows the local clock, is overruled on the dates).
    const session = parseJoinSession(serializeJoinSession(result.session));
    expect(session.clockOffsetMs).toBe(result.clockOffsetMs);
    const view = await getRegistration(session, identity);
    expect(view.joinId).toBe(result.session.joinId);
    // Without the offset, the same call refuses the leaf: it is not valid by this machine's clock.
    const { clockOffsetMs: _dropped, ...withoutOffset } = session;
    await expect(getRegistration(withoutOffset, identity)).rejects.toMatchObject({
      code: "LISTENER_CERTIFICATE",
      check: "validity",
    });
  });

  it("a code check measures the same offset", async () => {
    const check = await checkJoinCode({ url: future.url, release: "0.6.0" });
    expect(Math.abs(check.clockOffsetMs - AHEAD_MS)).toBeLessThan(60_000);
  });

  it("the registration carries the offset in the inventory's clock, keeping what the machine said of NTP", async () => {
    const result = await registerMachine({
      url: future.url,
      identity: await createMachineIdentity(),
      release: "0.6.0",
      inventory: { uefi: true, clock: { ntpSynchronized: false } },
    });
    const reported = future.inventories.get(result.session.joinId);
    expect(reported?.uefi).toBe(true);
    expect(reported?.clock?.ntpSynchronized).toBe(false);
    expect(Math.abs(reported!.clock!.offsetSeconds! - AHEAD_MS / 1000)).toBeLessThan(60);
  });

  it("when the founder says this machine's own time, the same leaf is refused: the founder's time is what counts", async () => {
    const error = await refusalOf(honestClock.url);
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect(error).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "validity" });
    expect((error as Error).message).toMatch(/the leaf is not valid now/);
    expect(honestClock.calls.registration).toBe(0); // stopped before KE3
  });
});

describe("the founder's time is bound to the exchange", () => {
  it("a serverTime altered on the way (a clock pushed back to make a leaf look valid) fails the binding: nothing is registered", async () => {
    const before = future.registrationCount();
    // A relay on the connection rewrites the PAKE answer's time; it cannot re-key the binding.
    future.behave.pake = async (call) => {
      const answer = await call.honest();
      const body = answer.body as Record<string, unknown>;
      const altered = new Date(Date.parse(body.serverTime as string) + 1000).toISOString();
      return { ...answer, body: { ...body, serverTime: altered } };
    };
    const error = await refusalOf(future.url);
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect((error as JoinProtocolError).code).toBe("CONNECTION_INTERCEPTED");
    expect(future.registrationCount()).toBe(before);
  });

  it("an answer bound to another founder's time than the joiner was told: BINDING_MISMATCH, the answer unused", async () => {
    future.answerServerTime = new Date(Date.now() + AHEAD_MS + 3_600_000).toISOString();
    const error = await refusalOf(future.url);
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect((error as JoinProtocolError).code).toBe("BINDING_MISMATCH");
  });

  it("a serverTime that is not an RFC 3339 date-time is refused before anything is sent", async () => {
    for (const serverTime of ["yesterday", "2026-11-30", 1_764_540_000_000, ""]) {
      future.resetBehaviour();
      future.behave.pake = async (call) => {
        const answer = await call.honest();
        return { ...answer, body: { ...(answer.body as object), serverTime } };
      };
      const error = await checkJoinCode({ url: future.url, release: "0.6.0" }).catch((e: unknown) => e);
      expect(error, String(serverTime)).toMatchObject({ code: "RESPONSE_INVALID" });
      expect(future.calls["code-check"]).toBe(0);
    }
  });
});

describe("certificate dates the other way round", () => {
  it("a later connection whose recorded offset went stale (the clock fixed since, by NTP) judges by its own clock", async () => {
    // A listener with the true time and fresh certificates; a session that recorded a clock
    // three years behind. The founder's time from that offset would be three years on.
    const listener = await startFakeListener();
    try {
      const identity = await createMachineIdentity();
      const session = { ...listener.sessionFor(identity), clockOffsetMs: AHEAD_MS };
      expect((await getRegistration(session, identity)).joinId).toBe(session.joinId);
    } finally {
      await listener.close();
    }
  });

  it("the founder pins a machine's key, never its certificate's dates: long expired or not yet valid, it registers", async () => {
    const { startTestServer } = await import("../helpers/reference-server.js");
    const h = await startTestServer();
    try {
      const { url } = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
      for (const [notBefore, notAfter] of [
        [new Date("1999-01-01T00:00:00Z"), new Date("2000-01-01T00:00:00Z")],
        [new Date(Date.now() + 10 * YEAR_MS), new Date(Date.now() + 11 * YEAR_MS)],
      ] as const) {
        const identity = await identityValid(notBefore, notAfter);
        const result = await registerMachine({ url, identity, release: "0.6.0" });
        expect(result.created).toBe(true);
        // And every later call, pinned to that key, is answered.
        expect((await getRegistration(result.session, identity)).joinId).toBe(result.session.joinId);
        expect((await h.admin.getNodeJoin(result.session.joinId)).keyFingerprint).toBe(identity.keyFingerprint);
      }
    } finally {
      await h.dispose();
    }
  });
});

/** A machine identity whose self-signed certificate is valid only from `notBefore` to `notAfter`. */
async function identityValid(notBefore: Date, notAfter: Date) {
  const x509 = await import("@peculiar/x509");
  const keys = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=machine with a wrong clock",
    keys,
    signingAlgorithm: { name: "Ed25519" },
    notBefore,
    notAfter,
    extensions: [new x509.ExtendedKeyUsageExtension(["1.3.6.1.5.5.7.3.2"], false)],
  });
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey("pkcs8", keys.privateKey)).toString("base64");
  return loadMachineIdentity({
    certPem: cert.toString("pem"),
    keyPem: `-----BEGIN PRIVATE KEY-----\n${pkcs8.replace(/.{64}(?!$)/g, "$&\n")}\n-----END PRIVATE KEY-----\n`,
  });
}
