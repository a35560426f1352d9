// The abort rule, held for the three functions that watch: watchJoins, watchRegistration and
// waitForRegistration re-throw the caller's abort as is (the signal's `reason`): while a poll
// or a backoff is pending, before the first call, and for the iterators between iterations.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { components } from "../../generated/api.js";
import { watchJoins, type JoinLister } from "../../src/admin/watch.js";
import { isAbortError, NetworkError } from "../../src/errors/index.js";
import { fixtures } from "../../src/testing/index.js";
import { createMachineIdentity, type MachineIdentity } from "../../src/node/identity.js";
import { waitForRegistration, watchRegistration } from "../../src/node/registration.js";
import { problem, startFakeListener, type FakeListener } from "./fake-listener.js";

type NodeJoin = components["schemas"]["NodeJoin"];

let listener: FakeListener;
let identity: MachineIdentity;
beforeAll(async () => {
  listener = await startFakeListener();
  identity = await createMachineIdentity();
});
afterEach(() => listener.resetBehaviour());
afterAll(async () => listener?.close());

const until = async (check: () => boolean) => {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
};

/**
 * A join lister whose calls a test controls: `answers[n]` is the n-th call's answer (a list, or
 * "hang" until the signal aborts, then a DOMException rather than the reason, as some fetch
 * implementations do, or "fail" with a NetworkError).
 */
function lister(answers: (NodeJoin[] | "hang" | "fail")[]): JoinLister & { calls: number } {
  const client = {
    calls: 0,
    listNodeJoins: (options?: { signal?: AbortSignal }) => {
      const answer = answers[client.calls++] ?? "hang";
      if (answer === "fail") return Promise.reject(new NetworkError("no answer"));
      if (answer !== "hang") return Promise.resolve({ items: answer });
      return new Promise<{ items: NodeJoin[] }>((_resolve, reject) =>
        options?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))),
      );
    },
  };
  return client;
}

/** A function that waits, started so that it is waiting on a poll or a backoff when `waiting` resolves. */
interface Subject {
  name: string;
  /** Starts the call and resolves, with its pending outcome (boxed: a promise would be adopted), once it waits on `what`. */
  waiting(what: "poll" | "backoff", signal: AbortSignal): Promise<{ pending: Promise<unknown> }>;
}

const subjects: Subject[] = [
  {
    name: "watchJoins",
    async waiting(what, signal) {
      const client = lister([what === "poll" ? "hang" : "fail"]);
      // onRetry is told just before the backoff's wait begins.
      let backingOff = false;
      const pending = watchJoins(client, {
        signal,
        backoff: { baseMs: 60_000, maxMs: 60_000 },
        onRetry: () => (backingOff = true),
      }).next();
      await until(() => (what === "poll" ? client.calls === 1 : backingOff));
      return { pending };
    },
  },
  {
    name: "watchRegistration",
    async waiting(what, signal) {
      const session = listener.sessionFor(identity);
      if (what === "backoff") listener.behave.view = () => problem(503, "UPGRADE_IN_PROGRESS", 60);
      let backingOff = false;
      const watch = watchRegistration(session, identity, { signal, onRetry: () => (backingOff = true) });
      if (what === "backoff") {
        const pending = watch.next();
        await until(() => backingOff);
        return { pending };
      }
      await watch.next(); // the current view; the next one is a long poll the listener holds
      const pending = watch.next();
      await until(() => listener.calls.view === 2);
      return { pending };
    },
  },
  {
    name: "waitForRegistration",
    async waiting(what, signal) {
      const session = listener.sessionFor(identity);
      if (what === "backoff") listener.behave.view = () => problem(503, "UPGRADE_IN_PROGRESS", 60);
      let backingOff = false;
      const pending = waitForRegistration(session, identity, {
        signal,
        until: "approved",
        onRetry: () => (backingOff = true),
      });
      await until(() => (what === "poll" ? listener.calls.view === 2 : backingOff));
      return { pending };
    },
  },
];

describe("the abort rule: the caller's abort is re-thrown as is", () => {
  for (const subject of subjects) {
    for (const what of ["poll", "backoff"] as const) {
      it(`${subject.name}: an abort while it waits on a ${what} rejects with the signal's reason`, async () => {
        const controller = new AbortController();
        const reason = new Error("the operator closed the console");
        const { pending } = await subject.waiting(what, controller.signal);
        controller.abort(reason);
        const error = await pending.then(
          () => "resolved",
          (e: unknown) => e,
        );
        expect(error).toBe(reason);
        expect(isAbortError(error, controller.signal)).toBe(true);
      });
    }

    it(`${subject.name}: the default reason is an AbortError, told apart by isAbortError`, async () => {
      const controller = new AbortController();
      const { pending } = await subject.waiting("poll", controller.signal);
      controller.abort();
      const error = await pending.catch((e: unknown) => e);
      expect(error).toBe(controller.signal.reason);
      expect(isAbortError(error)).toBe(true);
    });
  }

  it("an already aborted signal: each rejects with its reason and sends nothing", async () => {
    const reason = new Error("too late");
    const signal = AbortSignal.abort(reason);
    const client = lister([[]]);
    await expect(watchJoins(client, { signal }).next()).rejects.toBe(reason);
    expect(client.calls).toBe(0);
    const session = listener.sessionFor(identity);
    await expect(watchRegistration(session, identity, { signal }).next()).rejects.toBe(reason);
    await expect(waitForRegistration(session, identity, { signal, until: "approved" })).rejects.toBe(reason);
    expect(listener.calls.view).toBe(0);
  });

  it("watchJoins: an abort between iterations makes the next next() reject, changes left or not", async () => {
    const client = lister([[fixtures.nodeJoin({ id: "nj-a" }), fixtures.nodeJoin({ id: "nj-b" })]]);
    const controller = new AbortController();
    const reason = new Error("stop");
    const watch = watchJoins(client, { signal: controller.signal, intervalMs: 10 });
    expect((await watch.next()).value).toMatchObject({ type: "added", join: { id: "nj-a" } });
    controller.abort(reason);
    // The second change of that poll is not yielded after the abort.
    await expect(watch.next()).rejects.toBe(reason);
    expect((await watch.next()).done).toBe(true);
    expect(client.calls).toBe(1);
  });

  it("watchRegistration: an abort between iterations makes the next next() reject, with no more polls", async () => {
    const session = listener.sessionFor(identity);
    const controller = new AbortController();
    const reason = new Error("stop");
    const watch = watchRegistration(session, identity, { signal: controller.signal });
    expect((await watch.next()).value).toMatchObject({ state: "pending" });
    controller.abort(reason);
    await expect(watch.next()).rejects.toBe(reason);
    expect((await watch.next()).done).toBe(true);
    expect(listener.calls.view).toBe(1);
  });

  it("the caller's abort wins over the watch's own deadline and is not turned into a TimeoutError", async () => {
    const session = listener.sessionFor(identity);
    const controller = new AbortController();
    const reason = new Error("stop");
    const pending = waitForRegistration(session, identity, {
      signal: controller.signal,
      until: "approved",
      timeoutMs: 60_000,
    });
    await until(() => listener.calls.view === 2);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });
});
