import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  createJoinCodeRecord,
  createServerSetup,
  finishServerLogin,
  startServerLogin,
} from "../../src/server/opaque.js";
import { finishLogin, startLogin } from "../../src/node/opaque.js";
import { opaqueIdentifiers, opaqueReady } from "../../src/protocol/opaque.js";
import { createClusterCa, type ClusterCa } from "../../src/server/ca.js";

const CODE = "4F7K2Q9MABD";
const CODE_ID = "jc-0001";

let ca: ClusterCa;
let otherCa: ClusterCa;
let serverSetup: string;
let record: string;

beforeAll(async () => {
  await opaqueReady();
  [ca, otherCa] = await Promise.all([createClusterCa(), createClusterCa()]);
  serverSetup = await createServerSetup();
  record = await createJoinCodeRecord({ serverSetup, codeId: CODE_ID, code: CODE, caDer: ca.certDer });
});

describe("opaque", () => {
  it("binds the server identifier to the CA's DER", () => {
    expect(opaqueIdentifiers(ca.certDer)).toEqual({
      client: "stratum-join",
      server: `sha256:${createHash("sha256").update(ca.certDer).digest("hex")}`,
    });
  });

  it("the right code gives both sides the same session key", async () => {
    const client = await startLogin(CODE);
    const server = await startServerLogin({
      serverSetup,
      codeId: CODE_ID,
      registrationRecord: record,
      ke1: client.ke1,
      caDer: ca.certDer,
    });
    const finished = await finishLogin({ state: client.state, ke2: server.ke2, code: CODE, caDer: ca.certDer });
    expect(finished).toBeDefined();
    expect(finished!.sessionKey).toBeInstanceOf(Uint8Array);
    expect(finished!.sessionKey).toHaveLength(64);
    const serverKey = await finishServerLogin({ state: server.state, ke3: finished!.ke3, caDer: ca.certDer });
    expect(serverKey).toEqual(finished!.sessionKey);
  });

  it("a wrong code gives the joiner nothing (the listener is not proven)", async () => {
    const client = await startLogin("4F7K2Q9MABE");
    const server = await startServerLogin({
      serverSetup,
      codeId: CODE_ID,
      registrationRecord: record,
      ke1: client.ke1,
      caDer: ca.certDer,
    });
    expect(
      await finishLogin({ state: client.state, ke2: server.ke2, code: "4F7K2Q9MABE", caDer: ca.certDer }),
    ).toBeUndefined();
  });

  it("a fake KE2 has the length of a real one, and proves nothing", async () => {
    const client = await startLogin(CODE);
    const real = await startServerLogin({
      serverSetup,
      codeId: CODE_ID,
      registrationRecord: record,
      ke1: client.ke1,
      caDer: ca.certDer,
    });
    const fake = await startServerLogin({
      serverSetup,
      codeId: "ZZ",
      registrationRecord: null,
      ke1: client.ke1,
      caDer: ca.certDer,
    });
    expect(fake.ke2.length).toBe(real.ke2.length);
    expect(Buffer.from(fake.ke2, "base64url").length).toBe(Buffer.from(real.ke2, "base64url").length);
    expect(await finishLogin({ state: client.state, ke2: fake.ke2, code: CODE, caDer: ca.certDer })).toBeUndefined();
  });

  it("a listener answering under another CA is not proven", async () => {
    const client = await startLogin(CODE);
    // The record was minted under `ca`; a listener of another cluster claims `otherCa`.
    const server = await startServerLogin({
      serverSetup,
      codeId: CODE_ID,
      registrationRecord: record,
      ke1: client.ke1,
      caDer: otherCa.certDer,
    });
    expect(
      await finishLogin({ state: client.state, ke2: server.ke2, code: CODE, caDer: otherCa.certDer }),
    ).toBeUndefined();
    // Or the real listener, but the joiner computes the identifier from a substituted CA.
    const honest = await startServerLogin({
      serverSetup,
      codeId: CODE_ID,
      registrationRecord: record,
      ke1: client.ke1,
      caDer: ca.certDer,
    });
    expect(
      await finishLogin({ state: client.state, ke2: honest.ke2, code: CODE, caDer: otherCa.certDer }),
    ).toBeUndefined();
  });

  it("the listener refuses a KE3 of another login, and malformed messages", async () => {
    const a = await startLogin(CODE);
    const b = await startLogin(CODE);
    const serverA = await startServerLogin({
      serverSetup,
      codeId: CODE_ID,
      registrationRecord: record,
      ke1: a.ke1,
      caDer: ca.certDer,
    });
    const serverB = await startServerLogin({
      serverSetup,
      codeId: CODE_ID,
      registrationRecord: record,
      ke1: b.ke1,
      caDer: ca.certDer,
    });
    const finishedB = await finishLogin({ state: b.state, ke2: serverB.ke2, code: CODE, caDer: ca.certDer });
    expect(await finishServerLogin({ state: serverA.state, ke3: finishedB!.ke3, caDer: ca.certDer })).toBeUndefined();
    expect(await finishServerLogin({ state: serverA.state, ke3: "AAAA", caDer: ca.certDer })).toBeUndefined();
    expect(await finishLogin({ state: a.state, ke2: "AAAA", code: CODE, caDer: ca.certDer })).toBeUndefined();
  });

  it("times one memory-constrained login", async () => {
    const t0 = performance.now();
    const client = await startLogin(CODE);
    const t1 = performance.now();
    const server = await startServerLogin({
      serverSetup,
      codeId: CODE_ID,
      registrationRecord: record,
      ke1: client.ke1,
      caDer: ca.certDer,
    });
    const t2 = performance.now();
    const finished = await finishLogin({ state: client.state, ke2: server.ke2, code: CODE, caDer: ca.certDer });
    const t3 = performance.now();
    await finishServerLogin({ state: server.state, ke3: finished!.ke3, caDer: ca.certDer });
    const t4 = performance.now();
    const m0 = performance.now();
    await createJoinCodeRecord({ serverSetup, codeId: "jc-timing", code: CODE, caDer: ca.certDer });
    const m1 = performance.now();
    const ms = (x: number) => `${x.toFixed(1)} ms`;
    console.info(
      `OPAQUE memory-constrained: client startLogin ${ms(t1 - t0)} + finishLogin ${ms(t3 - t2)}; ` +
        `server startServerLogin ${ms(t2 - t1)} + finishServerLogin ${ms(t4 - t3)}; mint record ${ms(m1 - m0)}`,
    );
    expect(finished).toBeDefined();
  });
});
