// A listener that proves the code but forges its success answer: a wrong, missing or replayed
// `Join-Binding`, or another pairing code. The joiner refuses each with its typed error before
// anything of the body is used. (These tests kill the mutations that switch off the joiner's
// binding check and its pairing-code comparison.)
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JoinProtocolError } from "../../src/errors/join.js";
import { createMachineIdentity } from "../../src/node/identity.js";
import { checkJoinCode, registerMachine } from "../../src/node/join-calls.js";
import { startFakeListener, type Answer, type Behaviour, type FakeListener } from "./fake-listener.js";

let listener: FakeListener;
beforeAll(async () => {
  listener = await startFakeListener();
});
afterEach(() => listener.resetBehaviour());
afterAll(async () => listener?.close());

/** The honest answer, changed by `forge`. */
const forged =
  (forge: (answer: Answer) => Answer): Behaviour =>
  async (call) =>
    forge(await call.honest());

const withBinding = (answer: Answer, binding: string | undefined): Answer => {
  const headers = { ...answer.headers };
  delete headers["join-binding"];
  return { ...answer, headers: binding === undefined ? headers : { ...headers, "join-binding": binding } };
};

// What a forged answer tries to slip in: a registration of its choosing, with a delivery.
const SLIPPED_JOIN_ID = "nj-forged01";
const slipped = (answer: Answer): Answer => ({
  ...answer,
  body: { ...(answer.body as object), joinId: SLIPPED_JOIN_ID, state: "delivered" },
});

async function register() {
  return registerMachine({ url: listener.url, identity: await createMachineIdentity(), release: "0.6.0" }).then(
    (result) => ({ result, error: undefined }),
    (error: unknown) => ({ result: undefined, error }),
  );
}

function expectRefused(outcome: { result: unknown; error: unknown }, code: string): void {
  expect(outcome.result).toBeUndefined(); // no session, no view: nothing to save or act on
  expect(outcome.error).toBeInstanceOf(JoinProtocolError);
  expect((outcome.error as JoinProtocolError).code).toBe(code);
  expect((outcome.error as Error).message).not.toContain(SLIPPED_JOIN_ID);
  expect(JSON.stringify(outcome.error)).not.toContain(SLIPPED_JOIN_ID);
}

describe("the answer's Join-Binding is checked before its body is trusted", () => {
  it("a wrong binding: BINDING_MISMATCH", async () => {
    listener.behave.registration = forged((a) => slipped(withBinding(a, randomBytes(32).toString("base64"))));
    expectRefused(await register(), "BINDING_MISMATCH");
    expect(listener.calls.registration).toBe(1);
  });

  it("the client's own binding sent back (a reflection): BINDING_MISMATCH", async () => {
    let clientBinding = "";
    listener.behave.registration = async (call) => {
      clientBinding = String(call.req.headers["join-binding"]);
      return withBinding(await call.honest(), clientBinding);
    };
    expectRefused(await register(), "BINDING_MISMATCH");
    expect(clientBinding).not.toBe("");
  });

  it("no binding at all: BINDING_MISMATCH", async () => {
    listener.behave.registration = forged((a) => slipped(withBinding(a, undefined)));
    expectRefused(await register(), "BINDING_MISMATCH");
  });

  it("the binding of an earlier, honest exchange replayed: BINDING_MISMATCH", async () => {
    const honest = await register();
    expect(honest.result?.created).toBe(true);
    const earlier = listener.bindings.at(-1)!;
    listener.behave.registration = forged((a) => slipped(withBinding(a, earlier)));
    expectRefused(await register(), "BINDING_MISMATCH");
  });

  it("a code check is refused the same way, and its answer is not returned", async () => {
    listener.behave["code-check"] = forged((a) => ({
      ...withBinding(a, randomBytes(32).toString("base64")),
      body: { clusterRelease: "9.9.9", expiresAt: new Date().toISOString() },
    }));
    const error = await checkJoinCode({ url: listener.url, release: "0.6.0" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect((error as JoinProtocolError).code).toBe("BINDING_MISMATCH");
    expect((error as Error).message).not.toContain("9.9.9");
  });
});

describe("a new registration's pairing code is compared with the one computed locally", () => {
  it("another pairing code in a correctly bound answer: PAIRING_MISMATCH", async () => {
    let theirs = "";
    listener.behave.registration = forged((a) => {
      const body = a.body as { pairingCode: string };
      // Another well-formed pairing code: the last symbol changed.
      theirs = body.pairingCode.slice(0, -1) + (body.pairingCode.endsWith("A") ? "B" : "A");
      return { ...a, body: { ...body, joinId: SLIPPED_JOIN_ID, pairingCode: theirs } };
    });
    const outcome = await register();
    expectRefused(outcome, "PAIRING_MISMATCH");
    expect(listener.calls.registration).toBe(1);
    expect((outcome.error as Error).message).toContain(theirs);
  });

  it("a malformed pairing code: PAIRING_MISMATCH, the value not repeated", async () => {
    listener.behave.registration = forged((a) => ({ ...a, body: { ...(a.body as object), pairingCode: "\u001b[2J" } }));
    const outcome = await register();
    expectRefused(outcome, "PAIRING_MISMATCH");
    expect((outcome.error as Error).message).not.toContain("\u001b");
  });
});
