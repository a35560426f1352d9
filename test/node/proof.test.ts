// Proving a code and the one call the proof authorises (src/node/proof.ts, pake-exchange.ts),
// each rule at its boundary against a fake listener of the test's own: how a target is read,
// what is waited out and tried again (and with which backoff), what ends the call, what the
// founder's time decides, and what every refusal and failure says.
import { createServer as createTcpServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateJoinCode, parseJoinCode } from "../../src/core/join-code.js";
import {
  JoinProtocolError,
  NetworkError,
  ResponseValidationError,
  StratumApiError,
  StratumError,
  TimeoutError,
} from "../../src/errors/index.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { checkJoinCode, registerMachine } from "../../src/node/join-calls.js";
import { proveAndCall, readTarget, type ProveOptions, type ProvenCall } from "../../src/node/proof.js";
import { createClusterCa } from "../../src/server/index.js";
import { eventually } from "../helpers/eventually.js";
import { leafIssuedAt } from "../helpers/pki.js";
import { bound, problem, reset, sequence, stall, startFakeListener, type FakeListener } from "./fake-listener.js";

const MINUTE = 60_000;
const DAY = 1_440 * MINUTE;

/** The retries a call was told of: the error's code and the wait. */
function retries() {
  const told: { error: unknown; code: string; delayMs: number }[] = [];
  return { told, onRetry: (error: StratumError, delayMs: number) => told.push({ error, code: error.code, delayMs }) };
}

const rejection = async (promise: Promise<unknown>): Promise<any> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (error === undefined) throw new Error("the call did not fail");
  return error;
};

describe("readTarget", () => {
  const code = generateJoinCode();

  it("reads a join URL", () => {
    expect(readTarget({ url: `stratum-join://192.0.2.7:9555/${code.formatted}` })).toEqual({
      host: "192.0.2.7",
      port: 9555,
      endpoint: "192.0.2.7:9555",
      code: parseJoinCode(code.code),
    });
  });

  it("reads an endpoint and a code, the default port written out", () => {
    expect(readTarget({ endpoint: "192.0.2.7", code: code.formatted.toLowerCase() })).toEqual({
      host: "192.0.2.7",
      port: 9444,
      endpoint: "192.0.2.7:9444",
      code: parseJoinCode(code.code),
    });
  });

  it("refuses a target with neither a URL nor both an endpoint and a code, naming what to give", () => {
    for (const target of [{ endpoint: "192.0.2.7" }, { code: code.code }, {}, { endpoint: 7, code: code.code }]) {
      const error = (() => {
        try {
          readTarget(target as never);
        } catch (e) {
          return e;
        }
      })() as StratumError;
      expect(error, JSON.stringify(target)).toBeInstanceOf(StratumError);
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toBe("give either url, or endpoint and code");
    }
  });
});

describe("proving a code against a fake listener", () => {
  let listener: FakeListener;
  let identity: MachineIdentity;
  beforeAll(async () => {
    listener = await startFakeListener();
    identity = await createMachineIdentity();
  });
  afterEach(() => {
    listener.resetBehaviour();
    vi.restoreAllMocks();
  });
  afterAll(async () => listener?.close());

  const check = (options: ProveOptions = {}) =>
    checkJoinCode({ url: listener.url, identity, release: "0.6.0", ...options });

  it("names the option that is not a positive number of milliseconds", async () => {
    for (const name of ["timeoutMs", "connectTimeoutMs"] as const) {
      const error = await rejection(check({ [name]: -1 }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toBe(`${name} must be a positive number of milliseconds (or Infinity)`);
    }
    expect(listener.calls.pake).toBe(0);
  });

  it("ends at its deadline in a TimeoutError naming the call and the listener", async () => {
    listener.behave.pake = stall;
    const error = await rejection(check({ timeoutMs: 600 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.message).toBe(
      `POST /v1/join/code-checks with the join listener at ${listener.endpoint} did not finish within 600 ms`,
    );
  });

  it("closes its connection once the call is answered", async () => {
    await check();
    await eventually(async () => (await listener.openConnections()) === 0, 10_000, "the connection closed");
  });

  it("starts a fresh exchange when the listener closes the connection before KE3, told as CONNECTION_CHANGED", async () => {
    listener.behave.pake = sequence(async (call) => {
      const honest = await call.honest();
      return { ...honest, headers: { ...honest.headers, connection: "close" } };
    });
    const { told, onRetry } = retries();
    await check({ onRetry });
    expect(told.map((t) => t.code)).toEqual(["CONNECTION_CHANGED"]);
    expect(told[0]!.error).toBeInstanceOf(JoinProtocolError);
    expect((told[0]!.error as Error).message).toBe(
      "the join listener closed the connection before KE3; the proof is bound to it",
    );
    expect(listener.calls).toMatchObject({ pake: 2, "code-check": 1 });
  });

  it("starts once more, untold, when the listener has lost the exchange (409 JOIN_PAKE_RESTART); a second time it is the answer", async () => {
    listener.behave["code-check"] = sequence(() => problem(409, "JOIN_PAKE_RESTART"));
    const once = retries();
    await check({ onRetry: once.onRetry });
    expect(once.told).toEqual([]);
    expect(listener.calls).toMatchObject({ pake: 2, "code-check": 2 });

    listener.resetBehaviour();
    listener.behave["code-check"] = sequence(
      () => problem(409, "JOIN_PAKE_RESTART"),
      () => problem(409, "JOIN_PAKE_RESTART"),
    );
    const error = await rejection(check());
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error.code).toBe("JOIN_PAKE_RESTART");
    expect(error.message).toMatch(`answered POST /v1/join/code-checks with 409 JOIN_PAKE_RESTART`);
    expect(listener.calls).toMatchObject({ pake: 2, "code-check": 2 });
  });

  it("waits out a busy KE1 with the busy backoff: 1 s doubling, full jitter", async () => {
    // The jitter's draw fixed at 0.1 of the ceiling: the waits are 0.1 × 1, 2, 4 s.
    vi.spyOn(Math, "random").mockReturnValue(0.1);
    const busy = () => problem(503, "JOIN_CODE_BUSY");
    listener.behave.pake = sequence(busy, busy, busy);
    const { told, onRetry } = retries();
    await check({ onRetry });
    expect(told.map((t) => [t.code, t.delayMs])).toEqual([
      ["JOIN_CODE_BUSY", 100],
      ["JOIN_CODE_BUSY", 200],
      ["JOIN_CODE_BUSY", 400],
    ]);
  });

  it("waits out a reset with the transport backoff: 0.5 s doubling up to 8 s, full jitter", async () => {
    // 0.01 of the ceiling: 0.5, 1, 2, 4, 8 and again 8 s (the cap), so 5, 10, 20, 40, 80, 80 ms.
    vi.spyOn(Math, "random").mockReturnValue(0.01);
    listener.behave.pake = sequence(reset, reset, reset, reset, reset, reset);
    const { told, onRetry } = retries();
    await check({ onRetry });
    expect(told.map((t) => [t.code, t.delayMs])).toEqual([
      ["NETWORK", 5],
      ["NETWORK", 10],
      ["NETWORK", 20],
      ["NETWORK", 40],
      ["NETWORK", 80],
      ["NETWORK", 80],
    ]);
  });

  it("keeps the pairing key of an exchange whose KE3 call went out and whose answer was lost", async () => {
    listener.behave.registration = sequence(reset);
    const call: ProvenCall = {
      path: "/v1/join/registrations",
      body: (pake) => ({ pake, release: "0.6.0", inventory: { uefi: true, disks: [], nics: [] } }),
      release: "0.6.0",
    };
    const fresh = await createMachineIdentity();
    const answer = await proveAndCall(readTarget({ url: listener.url }), fresh, call, {});
    expect(answer.response.status).toBe(201);
    expect(answer.lostPairingKeys).toHaveLength(1);
    expect(Buffer.from(answer.lostPairingKeys[0]!).equals(Buffer.from(answer.proof.pairingKey))).toBe(false);
    // A KE1 that was reset carried nothing: no pairing key is kept for it.
    listener.resetBehaviour();
    listener.behave.pake = sequence(reset);
    const again = await proveAndCall(readTarget({ url: listener.url }), fresh, call, {});
    expect(again.lostPairingKeys).toEqual([]);
  });

  it("ends with the network failure when nothing listens, within its deadline", async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await rejection(
      checkJoinCode({ endpoint: `127.0.0.1:${port}`, code: listener.code.code, release: "0.6.0", timeoutMs: 1_500 }),
    );
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.code).toBe("NETWORK");
  });

  it("gives each connection attempt its own timeout, not the call's: a connection that stalls is tried again", async () => {
    // The first connection is taken and left without a TLS answer; the next ones reach the listener.
    let connections = 0;
    const held: Socket[] = [];
    const front: Server = createTcpServer((socket) => {
      connections += 1;
      if (connections === 1) {
        held.push(socket);
        return;
      }
      const upstream = connect(listener.port, "127.0.0.1");
      socket.pipe(upstream).pipe(socket);
      const end = () => {
        socket.destroy();
        upstream.destroy();
      };
      socket.on("error", end).on("close", end);
      upstream.on("error", end).on("close", end);
    });
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
    const { port } = front.address() as AddressInfo;
    try {
      const { told, onRetry } = retries();
      await checkJoinCode({
        endpoint: `127.0.0.1:${port}`,
        code: listener.code.code,
        release: "0.6.0",
        identity,
        connectTimeoutMs: 300,
        timeoutMs: 20_000,
        onRetry,
      });
      expect(told.map((t) => t.code)).toEqual(["TIMEOUT"]);
      expect(connections).toBe(2);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => front.close(() => resolve()));
    }
  });

  it("re-throws the caller's abort as is, whatever its reason, and tells onRetry nothing", async () => {
    listener.behave.pake = stall;
    const controller = new AbortController();
    const reason = new NetworkError("the installer was told to stop");
    const { told, onRetry } = retries();
    const call = check({ signal: controller.signal, onRetry });
    await eventually(() => listener.calls.pake === 1, 10_000, "the KE1");
    controller.abort(reason);
    expect(await rejection(call)).toBe(reason);
    expect(told).toEqual([]);
  });

  it("refuses a KE2 whose cluster CA is no certificate, before KE3", async () => {
    listener.behave.pake = async (call) => {
      const honest = await call.honest();
      const body = honest.body as Record<string, unknown>;
      return {
        ...honest,
        body: { ...body, caCertificate: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" },
      };
    };
    const error = await rejection(check());
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect(error).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "missing" });
    expect(error.message).toBe("the listener's answer carries no readable cluster CA certificate");
    expect(listener.calls["code-check"]).toBe(0);
  });

  it("names POST /v1/join/pake in a KE1 refusal and in a KE2 that is not the API's", async () => {
    listener.behave.pake = () => problem(503, "JOIN_CODE_BUSY", 60);
    const refused = await rejection(check({ timeoutMs: 5_000 }));
    expect(refused.code).toBe("JOIN_CODE_BUSY");
    expect(refused.message).toBe(
      `JOIN_CODE_BUSY: the join listener at ${listener.endpoint} answered POST /v1/join/pake with 503 JOIN_CODE_BUSY before it proved it holds the join code; nothing else of its answer is used`,
    );
    listener.behave.pake = () => ({ status: 200, body: { session: 7 } });
    const malformed = await rejection(check());
    expect(malformed).toBeInstanceOf(ResponseValidationError);
    expect(malformed.message).toMatch(/^the answer of POST \/v1\/join\/pake does not match the API's schema/);
  });

  it("says a listener that does not prove the code is not the cluster's, and sends nothing more", async () => {
    const other = generateJoinCode();
    const error = await rejection(
      checkJoinCode({ endpoint: listener.endpoint, code: other.code, identity, release: "0.6.0" }),
    );
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect(error.code).toBe("LISTENER_NOT_PROVEN");
    expect(error.message).toBe(
      `the join listener at ${listener.endpoint} did not prove the join code: the code is mistyped, or this is not the cluster's join listener. Nothing more was sent.`,
    );
    expect(listener.calls["code-check"]).toBe(0);
  });

  it("throws a bound 400 as the founder's refusal, naming the call when it has no problem document", async () => {
    listener.behave["code-check"] = bound({ status: 400, headers: { "content-type": "text/plain" }, raw: "no" });
    const error = await rejection(check());
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error.status).toBe(400);
    expect(error.message).toMatch("POST /v1/join/code-checks answered HTTP 400 without a problem document");
  });

  it("says an unbound JOIN_BINDING_FAILED is an intercepted connection, and an unbound answer is not used", async () => {
    listener.behave["code-check"] = () => problem(401, "JOIN_BINDING_FAILED");
    const intercepted = await rejection(check());
    expect(intercepted).toBeInstanceOf(JoinProtocolError);
    expect(intercepted.code).toBe("CONNECTION_INTERCEPTED");
    expect(intercepted.message).toBe(
      "the connection to the join listener is intercepted: the listener verified the join code but not the TLS channel it came over, so something between this machine and the listener terminates TLS and relays the exchange. Nothing was recorded; do not retry on this network path.",
    );
    expect(intercepted.cause.message).toMatch("answered POST /v1/join/code-checks with 401 JOIN_BINDING_FAILED");

    listener.behave["code-check"] = async (call) => {
      const honest = await call.honest();
      const { "join-binding": _binding, ...headers } = honest.headers ?? {};
      return { ...honest, headers };
    };
    const unbound = await rejection(check());
    expect(unbound).toBeInstanceOf(JoinProtocolError);
    expect(unbound.code).toBe("BINDING_MISMATCH");
    expect(unbound.message).toBe(
      "the join listener's answer does not carry the channel binding of this exchange: the connection is relayed or tampered with; its answer was not used",
    );
  });
});

describe("the founder's time, decided by the proof", () => {
  // This machine's clock two days behind the founder's; the listener's leaf issued by the
  // founder's clock, so not yet valid by this machine's.
  let listener: FakeListener;
  let identity: MachineIdentity;
  beforeAll(async () => {
    const ca = await createClusterCa();
    const leaf = await leafIssuedAt(ca, Date.now() + 2 * DAY, 30);
    listener = await startFakeListener({ pki: { ca, leaf }, clock: () => Date.now() + 2 * DAY });
    identity = await createMachineIdentity();
  });
  afterEach(() => listener.resetBehaviour());
  afterAll(async () => listener?.close());

  it("a code check is the call that authenticates it: one exchange, and its offset returned", async () => {
    const result = await checkJoinCode({ url: listener.url, identity, release: "0.6.0" });
    expect(listener.calls).toMatchObject({ pake: 1, "code-check": 1 });
    expect(Math.abs(result.clockOffsetMs - 2 * DAY)).toBeLessThan(MINUTE);
  });

  it("a registration goes in a fresh exchange after a code check carrying the release and selfUpgrade only", async () => {
    const bodies: unknown[] = [];
    listener.behave["code-check"] = (call) => {
      bodies.push(call.body);
      return call.honest();
    };
    for (const selfUpgrade of [true, undefined]) {
      bodies.length = 0;
      await registerMachine({
        url: listener.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
        hostname: "m-1",
        ...(selfUpgrade !== undefined ? { selfUpgrade } : {}),
      });
      expect(bodies).toEqual([
        { pake: expect.any(Object), release: "0.6.0", ...(selfUpgrade !== undefined ? { selfUpgrade } : {}) },
      ]);
    }
    expect(listener.calls).toMatchObject({ pake: 4, "code-check": 2, registration: 2 });
  });
});
