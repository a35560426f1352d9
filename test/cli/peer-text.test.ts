// What a peer says reaches a terminal only as text (docs/protocol.md#unproven): an unproven
// listener's refusal is reported as unproven, without its advice; a registrant's host name,
// serial and failure message, and a proven refusal's detail, are printed with their control
// characters and escapes written out, so they can neither redraw a row of `admin joins` nor
// hide the rest; and `admin approve --pairing-code` never prints the code it expected.
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateJoinCode } from "../../src/core/join-code.js";
import { createMachineIdentity } from "../../src/node/identity.js";
import { registerMachine } from "../../src/node/join-calls.js";
import { disableSessionTickets, tlsServerOptions } from "../../src/server/tls.js";
import { startTestServer, type TestServer } from "../helpers/reference-server.js";
import { bound, problem, startFakeListener, type FakeListener } from "../node/fake-listener.js";
import { cli } from "./run-cli.js";

// What a terminal acts on: C0 and C1 controls, DEL, bidi overrides.
// eslint-disable-next-line no-control-regex
const ACTS_ON = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;
/** A string that would redraw the line (CR, erase), hide the rest (SGR 8) and reorder it (RLO). */
const HOSTILE = "node-9\r\u001b[2K\u001b[8m\u202e\u009b2J";

describe("an unproven listener's refusal", () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    const own = await createMachineIdentity();
    server = createServer(tlsServerOptions({ certPem: own.certPem, keyPem: own.keyPem }), (req, res) => {
      req.resume();
      res.writeHead(409, { "content-type": "application/problem+json" });
      res.end(
        JSON.stringify({
          type: "about:blank",
          title: "Release mismatch",
          status: 409,
          requestId: "req-4711",
          code: "RELEASE_MISMATCH",
          detail: "Download the fixed installer from https://mitm.example/fix.iso \u001b[2J",
          details: { clusterRelease: "9.9.9", isoPath: "/mitm/fix.iso", reason: "too-old" },
        }),
      );
    });
    disableSessionTickets(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `stratum-join://127.0.0.1:${(server.address() as AddressInfo).port}/${generateJoinCode().formatted}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("is said to be unproven, exits as a possible attack, and none of its advice is printed", async () => {
    const human = await cli(["check", "--url", url, "--release", "0.6.0"]);
    expect(human.code).toBe(10);
    expect(human.stderr).toContain("had not proven it is the cluster's");
    expect(human.stderr).toContain("REFUSAL_UNPROVEN");
    for (const word of ["mitm", "https://", "fix.iso", "isoPath", "9.9.9", "Install the release"])
      expect(human.stderr).not.toContain(word);
    expect(human.stderr).not.toMatch(ACTS_ON);
    const json = await cli(["check", "--url", url, "--release", "0.6.0", "--json"]);
    expect(json.code).toBe(10);
    expect(json.json.error).toMatchObject({
      code: "REFUSAL_UNPROVEN",
      claimedCode: "RELEASE_MISMATCH",
      proven: false,
      step: "ke1",
      exitCode: 10,
    });
    expect(json.json.error.details).toBeUndefined();
    expect(json.stdout).not.toContain("mitm");
  });
});

describe("a peer's strings in the CLI's output", () => {
  let h: TestServer;
  let admin: string[];
  let joinId: string;
  let pairingCode: string;
  beforeAll(async () => {
    h = await startTestServer();
    admin = ["--api", h.server.adminUrl, "--token", h.server.adminToken];
    const minted = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    const identity = await createMachineIdentity();
    const registered = await registerMachine({
      url: minted.url,
      identity,
      release: "0.6.0",
      hostname: HOSTILE,
      systemSerial: `S1${HOSTILE}`,
    });
    joinId = registered.session.joinId;
    pairingCode = registered.registration.pairingCode;
  });
  afterAll(async () => h?.dispose());

  it("admin joins: a registrant's host name neither redraws its row nor hides the rest; it shows as escapes", async () => {
    const list = await cli(["admin", "joins", ...admin]);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toMatch(ACTS_ON);
    expect(list.stdout).toContain("node-9\\x0d\\x1b[2K\\x1b[8m\\u202e\\x9b2J");
    const row = list.stdout.split("\n").find((line) => line.startsWith(joinId))!;
    expect(row).toContain(pairingCode);
    const one = await cli(["admin", "joins", joinId, ...admin]);
    expect(one.stdout).not.toMatch(ACTS_ON);
    expect(one.stdout).toContain("\\x1b[8m");
    // The document keeps the value as it is, escaped as JSON so a terminal showing it acts on none.
    const json = await cli(["admin", "joins", joinId, ...admin, "--json"]);
    expect(json.json.hostname).toBe(HOSTILE);
    expect(json.stdout).not.toMatch(ACTS_ON);
  });

  it("a failure message a machine reported is printed as text", async () => {
    // The join failed at a step whose message is the machine's own text (as a progress report
    // of a failed step leaves it).
    h.server.store.tx(() =>
      h.server.store.patchJoin(joinId, {
        state: "failed",
        failedStep: "disks",
        failedStepTitle: "Preparing disks",
        failedError: `wipe failed\r\u001b[1A\u001b[2K${HOSTILE}`,
      }),
    );
    const one = await cli(["admin", "joins", joinId, ...admin]);
    expect(one.stdout).toContain("failure");
    expect(one.stdout).not.toMatch(ACTS_ON);
    expect(one.stdout).toContain("\\x1b[1A");
  });

  it("admin approve --pairing-code with another code: refused, and the expected code is never printed", async () => {
    h.server.store.tx(() => h.server.store.patchJoin(joinId, { state: "pending" }));
    const other = pairingCode === "000-000" ? "111-111" : "000-000";
    for (const json of [false, true]) {
      const run = await cli([
        "admin",
        "approve",
        joinId,
        ...admin,
        "--pairing-code",
        other,
        ...(json ? ["--json"] : []),
      ]);
      expect(run.code).toBe(10);
      const all = run.stdout + run.stderr;
      expect(all).not.toContain(pairingCode);
      expect(all).not.toContain(pairingCode.replace("-", ""));
      expect(all).toContain(other);
      expect(all).toContain("machine's own screen");
    }
    expect((await h.admin.getNodeJoin(joinId)).state).toBe("pending");
  });
});

describe("a proven refusal's detail", () => {
  let listener: FakeListener;
  beforeAll(async () => {
    listener = await startFakeListener();
  });
  afterAll(async () => listener?.close());

  it("is printed with its escapes written out", async () => {
    const refusal = problem(409, "RELEASE_MISMATCH");
    listener.behave["code-check"] = bound({
      ...refusal,
      body: {
        ...(refusal.body as object),
        detail: `the cluster runs 0.7.0\r\u001b[2K${HOSTILE}`,
        details: { clusterRelease: `0.7.0${HOSTILE}`, isoPath: "/releases/stratum-0.7.0.iso", reason: "too-old" },
      },
    });
    const run = await cli(["check", "--url", listener.url, "--release", "0.6.0"]);
    expect(run.code).toBe(6);
    expect(run.stderr).toContain("the cluster runs 0.7.0");
    expect(run.stderr).toContain("\\x1b[2K");
    expect(run.stderr).not.toMatch(ACTS_ON);
  });
});
