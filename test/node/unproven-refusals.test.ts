// Nothing before proof (docs/protocol.md#unproven): a refusal that comes before the PAKE proved
// the listener, or after KE3 without the listener's Join-Binding, is reported as unproven. Its
// words (a detail with a URL and an escape, an ISO path of its own) are never kept as advice,
// and a refusal a cluster's listener does not send there is the "possible attack" class.
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { exitCodeFor } from "../../src/cli/exit-codes.js";
import { generateJoinCode } from "../../src/core/join-code.js";
import { StratumApiError, UnprovenRefusalError } from "../../src/node/index.js";
import { createMachineIdentity } from "../../src/node/identity.js";
import { checkJoinCode, registerMachine } from "../../src/node/join-calls.js";
import { disableSessionTickets, tlsServerOptions } from "../../src/server/tls.js";
import { bound, problem, startFakeListener, type Answer, type FakeListener } from "./fake-listener.js";

/** What a machine in the middle tells the joiner: a fix to download, from a server of its own. */
const LURE = {
  detail: "Download the fixed installer from https://mitm.example/stratum.iso \u001b[2J\u001b[8m",
  details: { clusterRelease: "9.9.9", isoPath: "/mitm/stratum-9.9.9.iso", reason: "too-old" },
};

function lure(status: number, code: string, retryAfter?: number): Answer {
  const answer = problem(status, code, retryAfter);
  return { ...answer, body: { ...(answer.body as object), ...LURE } };
}

/** What of an error could carry the lure, for a person or a log. */
function everything(error: unknown): string {
  const e = error as StratumApiError;
  return [e.message, e.detail, e.title, JSON.stringify(e), JSON.stringify(e.details), JSON.stringify(e.errors)].join(
    "\n",
  );
}

function expectNothingOfTheLure(error: unknown): void {
  const all = everything(error);
  for (const word of ["mitm", "https://", "\u001b", "isoPath", "9.9.9", "installer"]) expect(all).not.toContain(word);
  expect((error as StratumApiError).details).toBeUndefined();
  expect((error as StratumApiError).errors).toEqual([]);
}

describe("a machine in the middle without the code, answering KE1", () => {
  let server: Server;
  let answer: Answer;
  let url: string;
  beforeAll(async () => {
    // Any self-signed certificate will do: nothing has been pinned yet.
    const own = await createMachineIdentity();
    server = createServer(tlsServerOptions({ certPem: own.certPem, keyPem: own.keyPem }), (req, res) => {
      req.resume();
      res.writeHead(answer.status, { "content-type": "application/problem+json", ...answer.headers });
      res.end(JSON.stringify(answer.body));
    });
    disableSessionTickets(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `stratum-join://127.0.0.1:${(server.address() as AddressInfo).port}/${generateJoinCode().formatted}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("a RELEASE_MISMATCH with its own ISO path and a URL in its detail: REFUSAL_UNPROVEN, possible attack, none of its words kept", async () => {
    answer = lure(409, "RELEASE_MISMATCH");
    const error = await registerMachine({ url, identity: await createMachineIdentity(), release: "0.6.0" }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnprovenRefusalError);
    expect(error).toMatchObject({
      code: "REFUSAL_UNPROVEN",
      claimedCode: "RELEASE_MISMATCH",
      step: "ke1",
      proven: false,
      status: 409,
    });
    expect((error as Error).message).toContain("before it proved it holds the join code");
    expectNothingOfTheLure(error);
    expect(exitCodeFor(error)).toBe(10);
  });

  it("refusals a founder sends at KE1 (busy, stale) keep their code, and only their code and Retry-After", async () => {
    answer = lure(503, "JOIN_CODE_BUSY", 30);
    const busy = await checkJoinCode({ url, release: "0.6.0", timeoutMs: 5_000 }).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(UnprovenRefusalError);
    expect(busy).toMatchObject({ code: "JOIN_CODE_BUSY", proven: false, retryAfter: 30, step: "ke1" });
    expectNothingOfTheLure(busy);
    expect(exitCodeFor(busy)).toBe(8);
    answer = lure(401, "JOIN_CODE_STALE");
    const stale = await checkJoinCode({ url, release: "0.6.0" }).catch((e: unknown) => e);
    expect(stale).toMatchObject({ code: "JOIN_CODE_STALE", proven: false });
    expectNothingOfTheLure(stale);
  });

  it("a code or request id that is not written as the API writes them is not repeated", async () => {
    answer = {
      status: 409,
      body: { code: "RELEASE_MISMATCH\u001b[8m", requestId: "req\r\nforged", detail: LURE.detail },
    };
    const error = await checkJoinCode({ url, release: "0.6.0" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "REFUSAL_UNPROVEN", claimedCode: undefined, requestId: undefined });
    expect((error as Error).message).toContain("409 HTTP_409");
    expectNothingOfTheLure(error);
  });
});

describe("after KE3, a refusal without the listener's Join-Binding", () => {
  let listener: FakeListener;
  beforeAll(async () => {
    listener = await startFakeListener();
  });
  afterEach(() => listener.resetBehaviour());
  afterAll(async () => listener?.close());

  it("is unproven: RELEASE_MISMATCH or JOIN_CODE_REVOKED unbound is REFUSAL_UNPROVEN, its details dropped", async () => {
    for (const [status, code] of [
      [409, "RELEASE_MISMATCH"],
      [401, "JOIN_CODE_REVOKED"],
      [409, "REGISTRATION_REJECTED"],
    ] as const) {
      listener.behave.registration = () => lure(status, code);
      const error = await registerMachine({
        url: listener.url,
        identity: await createMachineIdentity(),
        release: "0.6.0",
      }).catch((e: unknown) => e);
      expect(error, code).toMatchObject({ code: "REFUSAL_UNPROVEN", claimedCode: code, step: "ke3", proven: false });
      expect((error as Error).message).toContain("without the channel binding");
      expectNothingOfTheLure(error);
      expect(exitCodeFor(error)).toBe(10);
    }
  });

  it("the same refusal with the binding is the cluster's: kept whole, details and all", async () => {
    listener.behave.registration = bound(lure(409, "RELEASE_MISMATCH"));
    const error = await registerMachine({
      url: listener.url,
      identity: await createMachineIdentity(),
      release: "0.6.0",
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error).not.toBeInstanceOf(UnprovenRefusalError);
    expect(error).toMatchObject({ code: "RELEASE_MISMATCH", details: LURE.details });
    expect(exitCodeFor(error)).toBe(6);
  });
});
