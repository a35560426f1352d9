// The founder's time is used only once it is authenticated, and a pinned call never accepts
// less than the PAKE proved (docs/protocol.md#authenticated-time, #listener-pin). A relay that
// holds a leaked, expired listener leaf of the cluster's own CA and forges `serverTime` into its
// validity learns a KE3 and the release, never the machine's host name, serial, inventory or
// clock; and on later calls such an older leaf is refused whatever either clock says, so no
// delivery comes from it.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createMachineIdentity } from "../../src/node/identity.js";
import { parseJoinSession, serializeJoinSession } from "../../src/node/join-session.js";
import { registerMachine } from "../../src/node/join-calls.js";
import { getRegistration } from "../../src/node/registration.js";
import { createClusterCa, issueListenerCertificate, type ClusterCa } from "../../src/server/index.js";
import { leafIssuedAt } from "../helpers/pki.js";
import { startFakeListener, type FakeListener } from "./fake-listener.js";
import { startTlsRelay } from "./relay.js";

const MINUTE = 60_000;
const DAY = 1_440 * MINUTE;

describe("at the PAKE: a relay with an expired leaf of the cluster's CA and a forged serverTime", () => {
  let founder: FakeListener;
  let ca: ClusterCa;
  beforeAll(async () => {
    // A cluster a year old, its listener on a current leaf.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() - 365 * DAY });
    try {
      ca = await createClusterCa();
    } finally {
      vi.useRealTimers();
    }
    founder = await startFakeListener({
      pki: { ca, leaf: await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] }) },
    });
  });
  afterAll(async () => founder?.close());

  it("gets a code check with the release only: no registration, no host name, serial or clock", async () => {
    // Leaked from the listener 100 days ago, expired 10 days ago.
    const leaked = await leafIssuedAt(ca, Date.now() - 100 * DAY, 90);
    const relay = await startTlsRelay({ host: founder.host, port: founder.port }, leaked, {
      code: founder.code,
      // The founder's time, as the relay would have it: when the leaked leaf was valid.
      rewritePake: (body) => ({ ...body, serverTime: new Date(Date.now() - 95 * DAY).toISOString() }),
    });
    try {
      const error = await registerMachine({
        url: relay.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
        hostname: "vault-host-17",
        systemSerial: "SER-4711",
        inventory: { uefi: true, disks: [], nics: [] },
      }).catch((e: unknown) => e);
      // The founder refuses the relayed binding (serverTime is in the transcript); nothing of the
      // machine went to the relay before that.
      expect(error).toMatchObject({ code: "CONNECTION_INTERCEPTED" });
      expect(relay.forwarded).toEqual(["POST /v1/join/pake", "POST /v1/join/code-checks"]);
      const sent = relay.bodies.join("\n");
      for (const word of ["vault-host-17", "SER-4711", "inventory", "offsetSeconds", "hostname"])
        expect(sent).not.toContain(word);
      expect(JSON.parse(relay.bodies[1]!)).toEqual({ pake: expect.any(Object), release: "0.6.0" });
      expect(founder.registrationCount()).toBe(0);
    } finally {
      await relay.close();
    }
  });

  it("the honest founder with a clock 95 days off still takes the machine: first the code check, then the registration", async () => {
    // The same founder, its time and leaf 95 days behind this machine's clock.
    const behind = await startFakeListener({
      pki: { ca, leaf: await leafIssuedAt(ca, Date.now() - 95 * DAY, 90) },
      clock: () => Date.now() - 95 * DAY,
    });
    try {
      const result = await registerMachine({
        url: behind.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
        hostname: "vault-host-18",
      });
      expect(result.created).toBe(true);
      expect(Math.round(result.clockOffsetMs / DAY)).toBe(-95);
      expect(behind.calls["code-check"]).toBe(1);
      expect(behind.calls.registration).toBe(1);
    } finally {
      await behind.close();
    }
  });
});

describe("which clock judges the leaf at the PAKE", () => {
  let ca: ClusterCa;
  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() - 365 * DAY });
    try {
      ca = await createClusterCa();
    } finally {
      vi.useRealTimers();
    }
  });

  it("within the tolerance, this machine's: a leaf expired by it is refused before any KE3, the founder's time unused", async () => {
    // Expired a day ago; the founder's clock 2 minutes ahead, within the 5-minute tolerance.
    const listener = await startFakeListener({
      pki: { ca, leaf: await leafIssuedAt(ca, Date.now() - 2 * DAY, 1) },
      clock: () => Date.now() + 2 * MINUTE,
    });
    try {
      const error = await registerMachine({
        url: listener.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
        hostname: "vault-host-19",
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "validity" });
      expect(listener.calls.pake).toBe(1);
      expect(listener.calls["code-check"]).toBe(0);
      expect(listener.calls.registration).toBe(0);
    } finally {
      await listener.close();
    }
  });

  it("a leaf valid by this machine's clock needs no code check first: one exchange, the registration", async () => {
    const listener = await startFakeListener({
      pki: { ca, leaf: await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] }) },
      clock: () => Date.now() + 2 * MINUTE,
    });
    try {
      const result = await registerMachine({
        url: listener.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
        hostname: "vault-host-21",
      });
      expect(result.created).toBe(true);
      expect(listener.calls.pake).toBe(1);
      expect(listener.calls["code-check"]).toBe(0);
      expect(listener.calls.registration).toBe(1);
    } finally {
      await listener.close();
    }
  });

  it("past the tolerance, the founder's once authenticated: a leaf valid only by this machine's clock is refused", async () => {
    // Valid 30 days from now by this clock; the founder's clock is 95 days ahead, past its end.
    const listener = await startFakeListener({
      pki: { ca, leaf: await leafIssuedAt(ca, Date.now(), 30) },
      clock: () => Date.now() + 95 * DAY,
    });
    try {
      const error = await registerMachine({
        url: listener.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
        hostname: "vault-host-20",
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "validity" });
      expect((error as Error).message).toContain("the leaf is not valid now");
    } finally {
      await listener.close();
    }
  });
});

describe("on later calls: a leaf older than the one the PAKE proved", () => {
  let ca: ClusterCa;
  let honest: FakeListener;
  let relay: FakeListener | undefined;
  beforeAll(async () => {
    ca = await createClusterCa();
    // The listener's leaf as the PAKE sees it: issued a few minutes ago.
    honest = await startFakeListener({
      pki: { ca, leaf: await issueListenerCertificate(ca, { hosts: ["127.0.0.1"] }) },
    });
  });
  afterAll(async () => {
    await honest?.close();
    await relay?.close();
  });

  it("is refused (check `pinned`) even when it is valid at the founder's time the session recorded", async () => {
    const identity = await createMachineIdentity();
    const { session } = await registerMachine({ url: honest.url, identity, release: "0.6.0" });
    expect(session.listenerKeyFingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(Date.parse(session.listenerNotBefore!)).toBeGreaterThan(Date.now() - 10 * MINUTE);
    // An old leaf of the same CA: it expired 20 minutes ago by this machine's clock, and is
    // valid at the founder's time of a session whose machine clock was 40 minutes fast.
    const old = await leafIssuedAt(ca, Date.now() - DAY - 20 * MINUTE, 1);
    relay = await startFakeListener({ pki: { ca, leaf: old } });
    const relayed = parseJoinSession(
      serializeJoinSession({ ...session, endpoint: relay.endpoint, clockOffsetMs: -40 * MINUTE }),
    );
    relay.behave.view = () => ({
      status: 200,
      body: { joinId: session.joinId, state: "delivering", pairingCode: session.pairingCode },
    });
    const error = await getRegistration(relayed, identity, { timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "pinned" });
    expect(relay.calls.view).toBe(0); // refused before a byte was sent
  });

  it("takes a leaf the CA issued since, with another key: a reissue or a rotation of the listener's key", async () => {
    const identity = await createMachineIdentity();
    const { session } = await registerMachine({ url: honest.url, identity, release: "0.6.0" });
    const reissued = await leafIssuedAt(ca, Date.now() + MINUTE, 90);
    const next = await startFakeListener({ pki: { ca, leaf: reissued } });
    try {
      next.behave.view = () => ({
        status: 200,
        body: { joinId: session.joinId, state: "pending", pairingCode: session.pairingCode },
      });
      const view = await getRegistration({ ...session, endpoint: next.endpoint }, identity);
      expect(view.state).toBe("pending");
      expect(next.calls.view).toBe(1);
    } finally {
      await next.close();
    }
  });
});
