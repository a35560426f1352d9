// Every joiner call ends at its deadline, in a TimeoutError, whatever the listener does after
// TLS (drip a body, never send headers); a reset is a NetworkError; a KE1, a KE3 call or a
// pinned call refused as busy is waited out; the watchers retry what is transient and stop on what is final. Against a fake
// listener over real TLS 1.3 on loopback.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  NetworkError,
  RegistrationEndedError,
  ResponseValidationError,
  StratumApiError,
  type StratumError,
  TimeoutError,
} from "../../src/errors/index.js";
import { JoinProtocolError } from "../../src/errors/join.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { checkJoinCode, registerMachine } from "../../src/node/join-calls.js";
import {
  getRegistration,
  reportProgress,
  waitForRegistration,
  watchRegistration,
} from "../../src/node/registration.js";
import {
  badJson,
  bound,
  drip,
  problem,
  reset,
  sequence,
  stall,
  startFakeListener,
  wrongSchema,
  type Behaviour,
  type FakeListener,
  type Route,
} from "./fake-listener.js";

let listener: FakeListener;
let identity: MachineIdentity;

beforeAll(async () => {
  listener = await startFakeListener();
  identity = await createMachineIdentity();
});
afterEach(() => listener.resetBehaviour());
afterAll(async () => listener?.close());

// Generous: the deadlines below are 1.5 s; a call that ignored them would run for minutes.
const BOUND_MS = 15_000;
const DEADLINE_MS = 1_500;
// The longest deadline a try below doubles up to: 24 s holds many Argon2ids however loaded.
const LONGEST_DEADLINE_MS = 16 * DEADLINE_MS;

/** Runs `call`, returns what it threw and how long it took. */
async function outcome(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, ms: Date.now() - started };
}

/**
 * Runs `run` under a deadline that ends in a TimeoutError while the listener holds `route`:
 * from {@link DEADLINE_MS}, doubled while the deadline ran out before the call reached
 * `route`. A KE3 call comes after the joiner's Argon2id, which a loaded machine can stretch past
 * any fixed deadline; the try that reached the route measures the deadline on it, not the
 * Argon2id before it. Every try must end in a TimeoutError, within its deadline and a bound.
 */
async function untilHeldAt(
  route: Route,
  run: (o: { timeoutMs: number }) => Promise<unknown>,
): Promise<{ error: unknown; ms: number }> {
  for (let timeoutMs = DEADLINE_MS; ; timeoutMs *= 2) {
    listener.calls[route] = 0;
    const { error, ms } = await outcome(() => run({ timeoutMs }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(ms).toBeLessThan(timeoutMs + BOUND_MS);
    if (listener.calls[route] > 0 || timeoutMs >= LONGEST_DEADLINE_MS) return { error, ms };
  }
}

function joinerCalls() {
  const session = () => listener.sessionFor(identity);
  return [
    {
      name: "checkJoinCode (KE1)",
      route: "pake" as Route,
      proves: true,
      run: (o: { timeoutMs: number; signal?: AbortSignal }) =>
        checkJoinCode({ url: listener.url, release: "0.6.0", ...o }),
    },
    {
      name: "checkJoinCode (KE3)",
      route: "code-check" as Route,
      proves: true,
      run: (o: { timeoutMs: number; signal?: AbortSignal }) =>
        checkJoinCode({ url: listener.url, release: "0.6.0", ...o }),
    },
    {
      name: "registerMachine (KE1)",
      route: "pake" as Route,
      proves: true,
      run: (o: { timeoutMs: number; signal?: AbortSignal }) =>
        registerMachine({ url: listener.url, identity, release: "0.6.0", ...o }),
    },
    {
      name: "registerMachine (KE3)",
      route: "registration" as Route,
      proves: true,
      run: (o: { timeoutMs: number; signal?: AbortSignal }) =>
        registerMachine({ url: listener.url, identity, release: "0.6.0", ...o }),
    },
    {
      name: "getRegistration",
      route: "view" as Route,
      proves: false,
      run: (o: { timeoutMs: number; signal?: AbortSignal }) => getRegistration(session(), identity, o),
    },
    {
      name: "reportProgress",
      route: "progress" as Route,
      proves: false,
      run: (o: { timeoutMs: number; signal?: AbortSignal }) =>
        reportProgress(session(), identity, { steps: [], log: ["a line"], ...o }),
    },
  ];
}

describe("every joiner call has a deadline", () => {
  for (const call of joinerCalls()) {
    for (const [what, behaviour] of [
      ["drips its body one byte at a time", drip(200)],
      ["never sends headers", stall],
    ] as [string, Behaviour][]) {
      it(`${call.name}: a listener that ${what} ends in TimeoutError at the deadline`, async () => {
        listener.behave[call.route] = behaviour;
        const { error } = await untilHeldAt(call.route, call.run);
        expect((error as TimeoutError).code).toBe("TIMEOUT");
        expect(listener.calls[call.route]).toBe(1);
      });
    }

    if (call.proves) {
      // A registration is idempotent by its key, a code check records nothing: a reset is the
      // listener going away (a restart), waited out with backoff within the deadline.
      it(`${call.name}: a reset is tried again in a fresh exchange, and answered`, async () => {
        listener.behave[call.route] = sequence(reset, reset);
        const { error } = await outcome(() => call.run({ timeoutMs: 20_000 }));
        expect(error).toBeUndefined();
        expect(listener.calls[call.route]).toBe(3);
        expect(listener.calls.pake).toBeGreaterThanOrEqual(3);
      });

      it(`${call.name}: a listener that keeps resetting ends the call within its deadline, as a network failure`, async () => {
        listener.behave[call.route] = reset;
        const { error, ms } = await outcome(() => call.run({ timeoutMs: 4_000 }));
        expect([NetworkError, TimeoutError].some((type) => error instanceof type)).toBe(true);
        // How many tries fit in 4 s depends on the machine's speed (each is an Argon2); that a
        // reset is tried again is the test above's.
        expect(listener.calls[call.route]).toBeGreaterThanOrEqual(1);
        expect(ms).toBeLessThan(4_000 + BOUND_MS);
      });
    } else {
      it(`${call.name}: a reset is a NetworkError`, async () => {
        listener.behave[call.route] = reset;
        const { error } = await outcome(() => call.run({ timeoutMs: 20_000 }));
        expect(error).toBeInstanceOf(NetworkError);
      });
    }

    it(`${call.name}: the caller's abort is re-thrown as is`, async () => {
      listener.behave[call.route] = stall;
      const controller = new AbortController();
      const reason = new Error("operator gave up");
      const pending = outcome(() => call.run({ timeoutMs: 60_000, signal: controller.signal }));
      while (listener.calls[call.route] === 0) await new Promise((r) => setTimeout(r, 20));
      controller.abort(reason);
      const { error, ms } = await pending;
      expect(error).toBe(reason);
      expect(ms).toBeLessThan(BOUND_MS);
    });
  }

  it("refuses a timeoutMs that is not a positive number, before any network call", async () => {
    for (const timeoutMs of [0, -1, Number.NaN]) {
      const error = await checkJoinCode({ url: listener.url, release: "0.6.0", timeoutMs }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    expect(listener.calls.pake).toBe(0);
  });
});

/** Registers a fresh machine with the fake listener, recording each wait the joiner is told of. */
async function registerRecordingWaits() {
  const waits: [string, number][] = [];
  const result = await registerMachine({
    url: listener.url,
    identity: await createMachineIdentity(),
    release: "0.6.0",
    timeoutMs: 30_000,
    onRetry: (error, delayMs) => waits.push([error.code, delayMs]),
  });
  return { result, waits };
}

describe("a busy join code (KE1 answered 503 JOIN_CODE_BUSY or 429)", () => {
  it("is waited out, Retry-After honoured, backoff with jitter without it, within the deadline", async () => {
    listener.behave.pake = sequence(
      () => problem(503, "JOIN_CODE_BUSY", 1),
      () => problem(503, "JOIN_CODE_BUSY"),
      () => problem(429, "RATE_LIMITED", 1),
    );
    const { result, waits } = await registerRecordingWaits();
    expect(result.created).toBe(true);
    expect(listener.calls.pake).toBe(4);
    expect(waits.map(([code]) => code)).toEqual(["JOIN_CODE_BUSY", "JOIN_CODE_BUSY", "RATE_LIMITED"]);
    expect(waits[0]![1]).toBe(1_000);
    expect(waits[1]![1]).toBeGreaterThanOrEqual(0);
    expect(waits[1]![1]).toBeLessThanOrEqual(2_000); // full jitter under the second step's ceiling
    expect(waits[2]![1]).toBe(1_000);
  });

  it("ends with the refusal when the deadline leaves no room for the next wait", async () => {
    listener.behave.pake = () => problem(503, "JOIN_CODE_BUSY", 1);
    // Room for one wait of 1 s even when the first KE1 is slow on a loaded machine.
    const { error, ms } = await outcome(() => checkJoinCode({ url: listener.url, release: "0.6.0", timeoutMs: 4_000 }));
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error).toMatchObject({ code: "JOIN_CODE_BUSY", status: 503, retryAfter: 1 });
    expect(listener.calls.pake).toBeGreaterThanOrEqual(2);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it("does not wait at all for a Retry-After past the deadline", async () => {
    listener.behave.pake = () => problem(503, "JOIN_CODE_BUSY", 600);
    const { error } = await outcome(() => checkJoinCode({ url: listener.url, release: "0.6.0", timeoutMs: 10_000 }));
    expect(error).toMatchObject({ code: "JOIN_CODE_BUSY", retryAfter: 600 });
    expect(listener.calls.pake).toBe(1);
  });

  it("a KE3 call refused as busy (a full disk, an upgrade) is waited out, then a fresh exchange", async () => {
    listener.behave.registration = sequence(
      () => problem(503, "STORAGE_UNAVAILABLE", 1),
      () => problem(503, "UPGRADE_IN_PROGRESS", 1),
    );
    const { result, waits } = await registerRecordingWaits();
    expect(result.created).toBe(true);
    expect(waits).toEqual([
      ["STORAGE_UNAVAILABLE", 1_000],
      ["UPGRADE_IN_PROGRESS", 1_000],
    ]);
    // each attempt a whole exchange: KE1 and KE3 again
    expect(listener.calls.pake).toBe(3);
    expect(listener.calls.registration).toBe(3);
  });

  it("any other refusal of KE3 is not retried (the code was proven; the refusal is the answer)", async () => {
    listener.behave["code-check"] = bound(problem(409, "RELEASE_MISMATCH"));
    const { error } = await outcome(() => checkJoinCode({ url: listener.url, release: "0.6.0", timeoutMs: 10_000 }));
    expect(error).toMatchObject({ code: "RELEASE_MISMATCH" });
    expect(listener.calls.pake).toBe(1);
    expect(listener.calls["code-check"]).toBe(1);
  });

  it("a KE3 call refused as busy past the deadline's room ends with the refusal, at once", async () => {
    listener.behave["code-check"] = () => problem(503, "STORAGE_UNAVAILABLE", 30);
    const { error, ms } = await outcome(() =>
      checkJoinCode({ url: listener.url, release: "0.6.0", timeoutMs: 10_000 }),
    );
    expect(error).toMatchObject({ code: "STORAGE_UNAVAILABLE", retryAfter: 30 });
    expect(listener.calls["code-check"]).toBe(1);
    expect(ms).toBeLessThan(BOUND_MS);
  });
});

describe("a pinned call refused as busy", () => {
  it("reportProgress and getRegistration wait out a 503 or 429 with nothing done, and ask again", async () => {
    const session = listener.sessionFor(identity);
    listener.behave.progress = sequence(
      () => problem(503, "STORAGE_UNAVAILABLE", 1),
      () => problem(429, "RATE_LIMITED", 1),
    );
    const report = await reportProgress(session, identity, {
      steps: [{ name: "storage", title: "Preparing storage", status: "running", at: new Date().toISOString() }],
      timeoutMs: 10_000,
    });
    expect(report.joinId).toBe(session.joinId);
    expect(listener.calls.progress).toBe(3);

    listener.behave.view = sequence(() => problem(503, "STORAGE_UNAVAILABLE", 1));
    expect((await getRegistration(session, identity, { timeoutMs: 10_000 })).joinId).toBe(session.joinId);
    expect(listener.calls.view).toBe(2);
  });

  it("ends with the refusal when its Retry-After is past the deadline, and never retries a final one", async () => {
    const session = listener.sessionFor(identity);
    listener.behave.progress = () => problem(503, "STORAGE_UNAVAILABLE", 30);
    const busy = await outcome(() => reportProgress(session, identity, { steps: [], timeoutMs: 5_000 }));
    expect(busy.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", retryAfter: 30 });
    expect(listener.calls.progress).toBe(1);

    listener.behave.progress = () => problem(409, "JOIN_STATE_CONFLICT");
    const final = await outcome(() => reportProgress(session, identity, { steps: [], timeoutMs: 5_000 }));
    expect(final.error).toMatchObject({ code: "JOIN_STATE_CONFLICT" });
    expect(listener.calls.progress).toBe(2);
  });
});

describe("the watchers retry what is transient", () => {
  // A request's own deadline: what a stall and a drip wait out, and far more than an honest
  // answer takes on loopback however loaded the machine.
  const fast = { backoff: { baseMs: 10, maxMs: 50 }, waitSeconds: 1, requestTimeoutMs: 1_000 };

  it("waitForRegistration gets past 500, bad JSON, a wrong schema, a reset, a stall, a drip and 503", async () => {
    const session = listener.sessionFor(identity);
    listener.behave.view = sequence(
      () => problem(500, "INTERNAL"),
      badJson,
      wrongSchema,
      reset,
      stall,
      drip(100),
      () => problem(503, "UPGRADE_IN_PROGRESS", 1),
    );
    const retried: unknown[] = [];
    const view = await waitForRegistration(session, identity, {
      ...fast,
      until: "pending",
      timeoutMs: 60_000,
      onRetry: (error) => retried.push(error),
    });
    expect(view).toMatchObject({ joinId: session.joinId, state: "pending" });
    expect(retried.map((e) => (e as StratumError).constructor.name)).toEqual([
      "StratumApiError",
      "ResponseValidationError",
      "ResponseValidationError",
      "NetworkError",
      "TimeoutError",
      "TimeoutError",
      "StratumApiError",
    ]);
    expect((retried[0] as StratumApiError).status).toBe(500);
    expect(retried[1]).toBeInstanceOf(ResponseValidationError);
    expect((retried[6] as StratumApiError).retryAfter).toBe(1);
    expect(listener.calls.view).toBe(8);
  });

  it("watchRegistration retries between views too, then sees the change by long poll", async () => {
    const session = listener.sessionFor(identity);
    const retried: unknown[] = [];
    const watch = watchRegistration(session, identity, { ...fast, onRetry: (e) => retried.push(e) });
    expect((await watch.next()).value).toMatchObject({ state: "pending" });
    listener.resetBehaviour(); // counts the polls from here
    listener.behave.view = sequence(() => problem(502, "INTERNAL"), wrongSchema);
    setTimeout(() => listener.setState(session.joinId, "approved"), 100);
    // The view after the retries is the current one (approved), whichever poll sees it first.
    let next = await watch.next();
    while ((next.value as { state: string }).state === "pending") next = await watch.next();
    expect(next.value).toMatchObject({ state: "approved" });
    expect(retried.length).toBe(2);
    await watch.return();
  });

  it("ends at its own deadline in a TimeoutError while the listener keeps failing", async () => {
    const session = listener.sessionFor(identity);
    listener.behave.view = () => problem(500, "INTERNAL");
    const retried: unknown[] = [];
    const { error, ms } = await outcome(() =>
      waitForRegistration(session, identity, {
        ...fast,
        until: "approved",
        timeoutMs: DEADLINE_MS,
        onRetry: (e) => retried.push(e),
      }),
    );
    expect(error).toBeInstanceOf(TimeoutError);
    expect(retried.length).toBeGreaterThan(1);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it("stops at once on a final answer: 404, 409, a final state, a protocol or identity error", async () => {
    const session = listener.sessionFor(identity);
    const retried: unknown[] = [];
    const onRetry = (e: unknown) => retried.push(e);
    const finals: [string, Behaviour | undefined, () => Promise<unknown>, (e: unknown) => void][] = [
      [
        "404",
        () => problem(404, "NOT_FOUND"),
        () => waitForRegistration(session, identity, { ...fast, until: "approved", onRetry }),
        (e) => expect(e).toMatchObject({ status: 404, code: "NOT_FOUND" }),
      ],
      [
        "409",
        () => problem(409, "JOIN_STATE_CONFLICT"),
        () => waitForRegistration(session, identity, { ...fast, until: "approved", onRetry }),
        (e) => expect(e).toMatchObject({ status: 409 }),
      ],
      [
        "a final state",
        () => ({
          status: 200,
          headers: { etag: '"x"' },
          body: { joinId: session.joinId, state: "rejected", pairingCode: "ABC-DEF" },
        }),
        () => waitForRegistration(session, identity, { ...fast, until: "approved", onRetry }),
        (e) => expect(e).toBeInstanceOf(RegistrationEndedError),
      ],
    ];
    for (const [what, behaviour, run, check] of finals) {
      listener.resetBehaviour();
      if (behaviour) listener.behave.view = behaviour;
      const error = await run().catch((e: unknown) => e);
      check(error);
      expect(listener.calls.view, what).toBe(1);
      expect(retried).toEqual([]);
    }

    // Another key than the registration's: refused locally, nothing sent.
    listener.resetBehaviour();
    const stranger = await createMachineIdentity();
    const mismatch = await waitForRegistration(session, stranger, { ...fast, until: "approved" }).catch(
      (e: unknown) => e,
    );
    expect(mismatch).toMatchObject({ code: "IDENTITY_MISMATCH" });
    expect(listener.calls.view).toBe(0);

    // A listener whose leaf does not chain to the pinned CA: a protocol error, not retried.
    const other = await startFakeListener();
    try {
      const pinnedElsewhere = { ...session, endpoint: other.endpoint };
      const error = await waitForRegistration(pinnedElsewhere, identity, { ...fast, until: "approved" }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(JoinProtocolError);
      expect(error).toMatchObject({ code: "LISTENER_CERTIFICATE", check: "chain" });
    } finally {
      await other.close();
    }
  });
});
