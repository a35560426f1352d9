// The joiner against the reference server over real TLS 1.3 on loopback: the whole flow to
// `joined`, and each refusal a caller must be able to branch on.
import { readFileSync, statSync, readdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JoinCodeError, StratumApiError, type StratumError, formatJoinUrl, parseJoinUrl } from "../../src/index.js";
import {
  checkJoinCode,
  createMachineIdentity,
  JoinProtocolError,
  parseJoinSession,
  registerMachine,
  RegistrationEndedError,
  reportProgress,
  serializeJoinSession,
  waitForRegistration,
  watchRegistration,
  writeDelivery,
} from "../../src/node/index.js";
import type { Registration } from "../../src/index.js";
import { sensitiveFields } from "../../generated/sensitive.js";
import { demoInventory } from "../helpers/inventory.js";
import { eventually } from "../helpers/eventually.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let h: TestServer;
let url: string;

beforeAll(async () => {
  h = await startTestServer();
  const minted = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
  url = minted.url;
});
afterAll(async () => h?.dispose());

/** The same code with one data symbol changed and a correct check symbol: well formed, but not the code. */
function otherValidUrl(joinUrl: string): string {
  const { code, endpoint } = parseJoinUrl(joinUrl);
  const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  for (const symbol of alphabet) {
    const data = code.code.slice(0, 9) + symbol;
    if (data === code.code.slice(0, 10)) continue;
    for (const check of alphabet) {
      try {
        const candidate = formatJoinUrl({ endpoint, code: data + check });
        parseJoinUrl(candidate);
        return candidate;
      } catch {
        // not the check symbol; try the next
      }
    }
  }
  throw new Error("no other code");
}

describe("the joiner against the reference server", () => {
  it("checks a code without recording anything", async () => {
    const before = (await h.admin.listNodeJoins()).items.length;
    const check = await checkJoinCode({ url, release: "0.6.0" });
    expect(check.clusterRelease).toBe("0.6.0");
    expect(check.caFingerprint).toBe(h.server.caFingerprint);
    expect(check.upgrade).toBeUndefined();
    expect((await h.admin.listNodeJoins()).items.length).toBe(before);
  });

  it("catches a typo locally: nothing reaches the network", async () => {
    const lines = h.logs.length;
    const { code, endpoint } = parseJoinUrl(url);
    const typo = code.formatted.slice(0, 5) + (code.formatted[5] === "Z" ? "Y" : "Z") + code.formatted.slice(6);
    const error = await checkJoinCode({ endpoint, code: typo, release: "0.6.0" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JoinCodeError);
    expect(error).toMatchObject({ code: "JOIN_CODE_MALFORMED", reason: "check" });
    expect(h.logs.length).toBe(lines);
  });

  it("refuses a release other than the cluster's, naming the cluster's release and ISO", async () => {
    const error = await checkJoinCode({ url, release: "0.3.0" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StratumApiError);
    expect((error as StratumApiError).code).toBe("RELEASE_MISMATCH");
    expect((error as StratumApiError).details).toMatchObject({
      clusterRelease: "0.6.0",
      isoPath: expect.stringContaining("0.6.0"),
    });
  });

  it("a well-formed but wrong code: the listener did not prove it, no KE3 is sent, the attempt counts", async () => {
    const wrong = otherValidUrl(url);
    const codeId = (await h.admin.listJoinCodes()).items[0]!.id;
    const before = (await h.admin.listJoinCodes()).items.find((c) => c.id === codeId)!.attempts ?? 0;
    const lines = h.logs.length;
    const error = await checkJoinCode({ url: wrong, release: "0.6.0" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JoinProtocolError);
    expect((error as JoinProtocolError).code).toBe("LISTENER_NOT_PROVEN");
    expect((error as Error).message).toMatch(/mistyped|not the cluster/);
    const requests = h.logs.slice(lines).join("\n");
    expect(requests).toContain("/v1/join/pake");
    expect(requests).not.toContain("/v1/join/code-checks");
    // The exchange ended unproven when the joiner closed its connection: counted as the
    // listener sees the connection close.
    const attempts = async () => (await h.admin.listJoinCodes()).items.find((c) => c.id === codeId)!.attempts ?? 0;
    await eventually(async () => ((await attempts()) === before + 1 ? true : undefined), 5_000, "the attempt counted");
    // A right code proves it and counts nothing.
    await checkJoinCode({ url, release: "0.6.0" });
    expect(await attempts()).toBe(before + 1);
  });

  it("registers, pins the CA, keeps the session across a 'reboot', approves, delivers and joins", async () => {
    const identity = await createMachineIdentity();
    const first = await registerMachine({
      url,
      identity,
      release: "0.6.0",
      hostname: "node-2",
      systemSerial: "S-1",
      inventory: demoInventory,
    });
    expect(first.created).toBe(true);
    expect(first.registration.state).toBe("pending");
    expect(first.registration.pairingCode).toMatch(/^[0-9A-Z]{3}-[0-9A-Z]{3}$/);
    expect(first.session.caFingerprint).toBe(h.server.caFingerprint);

    // The founder shows the same pairing code.
    const listed = (await h.admin.listNodeJoins()).items.find((j) => j.id === first.session.joinId)!;
    expect(listed.pairingCode).toBe(first.registration.pairingCode);
    expect(listed.keyFingerprint).toBe(identity.keyFingerprint);

    // The same key registering again gets its registration back.
    const again = await registerMachine({ url, identity, release: "0.6.0", hostname: "node-2" });
    expect(again.created).toBe(false);
    expect(again.session.joinId).toBe(first.session.joinId);
    expect(again.registration.pairingCode).toBe(first.registration.pairingCode);

    // Stage 1 hands the session to stage 2.
    const session = parseJoinSession(serializeJoinSession(first.session));
    expect(session).toEqual(first.session);

    const seen: string[] = [];
    const views = watchRegistration(session, identity, { waitSeconds: 5 });
    const firstView = await views.next();
    expect(firstView.value?.state).toBe("pending");
    await h.admin.approveNodeJoin(session.joinId, { assignment: { role: "hybrid" } });
    await h.server.tick();
    let delivered: Registration | undefined;
    for await (const view of views) {
      seen.push(view.state);
      if (view.state === "delivering") {
        delivered = view;
        break;
      }
    }
    expect(seen.at(-1)).toBe("delivering");
    if (!delivered) throw new Error("no delivery");

    const delivery = delivered.delivery!;
    expect(delivery.nodeYaml).toContain(delivery.nodeId);
    expect(delivery.bundle.nodeKey).toMatch(/PRIVATE KEY/);
    // Secrets are readable but never printed or serialised by accident.
    expect(inspect(delivered, { depth: 10 })).not.toContain("PRIVATE KEY");
    expect(JSON.stringify(delivered)).not.toContain("PRIVATE KEY");
    if (delivery.bundle.postgresPassword)
      expect(inspect(delivered, { depth: 10 })).not.toContain(delivery.bundle.postgresPassword);

    const dir = mkdtempSync(join(tmpdir(), "stratum-delivery-"));
    try {
      // Each secret to the installer's own code (the other destinations: machine-keeps.e2e.test.ts).
      const handed: Record<string, string> = {};
      const secrets = Object.fromEntries(
        sensitiveFields.Bundle.filter((f) => f !== "nodeKey").map((f) => [f, (v: string) => void (handed[f] = v)]),
      );
      const written = await writeDelivery(join(dir, "delivery"), delivery, { secrets });
      for (const field of Object.keys(secrets))
        expect(handed[field], field).toBe((delivery.bundle as unknown as Record<string, unknown>)[field]);
      expect(readFileSync(written.files.nodeKey!, "utf8")).toBe(delivery.bundle.nodeKey);
      for (const path of Object.values(written.files)) expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(readFileSync(written.files.bundle!, "utf8")).not.toContain("PRIVATE KEY");
      expect(readdirSync(dir)).toEqual(["delivery"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    const installing = await reportProgress(session, identity, {
      steps: [{ name: "storage", title: "Preparing storage", status: "done", at: new Date().toISOString() }],
      log: ["storage ready"],
    });
    expect(installing.state).toBe("installing");
    await reportProgress(session, identity, {
      steps: [{ name: "join", title: "Joining the cluster", status: "done" }],
      log: ["joined"],
    });
    const joined = await waitForRegistration(session, identity, { until: "joined", timeoutMs: 10_000 });
    expect(joined.state).toBe("joined");
    const founderView = await h.admin.getNodeJoin(session.joinId);
    expect(founderView.logTail).toEqual(["storage ready", "joined"]);
    // Nothing secret reached the server's log.
    const log = h.logs.join("\n");
    expect(log).not.toContain(parseJoinUrl(url).code.code);
    expect(log).not.toContain(parseJoinUrl(url).code.formatted);
    expect(log).not.toContain("PRIVATE KEY");
  });

  it("refuses a call with a key that does not own the registration", async () => {
    const identity = await createMachineIdentity();
    const { session } = await registerMachine({ url, identity, release: "0.6.0" });
    const other = await createMachineIdentity();
    await expect(reportProgress(session, other, { steps: [] })).rejects.toMatchObject({ code: "IDENTITY_MISMATCH" });
    // Even when the session is edited to claim the other key, the listener pins the registration: 404.
    const forged = { ...session, keyFingerprint: other.keyFingerprint };
    await expect(reportProgress(forged, other, { steps: [] })).rejects.toMatchObject({
      status: 404,
      code: "NOT_FOUND",
    });
  });

  it("a rejected machine: the wait ends with the reason, and the key is refused from then on", async () => {
    const identity = await createMachineIdentity();
    const { session } = await registerMachine({ url, identity, release: "0.6.0" });
    await h.admin.rejectNodeJoin(session.joinId, { reason: "unknown serial" });
    const ended = await waitForRegistration(session, identity, { until: "joined", timeoutMs: 10_000 }).catch(
      (e: unknown) => e,
    );
    expect(ended).toBeInstanceOf(RegistrationEndedError);
    expect((ended as RegistrationEndedError).registration.reason).toBe("unknown serial");
    const again = await registerMachine({ url, identity, release: "0.6.0" }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(StratumApiError);
    expect((again as StratumApiError).status).toBe(409);
    expect((again as StratumApiError).code).toBe("REGISTRATION_REJECTED");
  });

  it("a revoked code is refused with the reason, after the proof", async () => {
    const minted = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    await h.admin.revokeJoinCode(minted.joinCode.id);
    const error = await checkJoinCode({ url: minted.url, release: "0.6.0" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StratumApiError);
    expect((error as StratumApiError).status).toBe(401);
    expect((error as StratumApiError).code).toBe("JOIN_CODE_REVOKED");
  });

  it("an upgrade in progress: 503 with Retry-After, waited out within the deadline, else thrown", async () => {
    h.server.setUpgrade(true, 7);
    try {
      // Seven seconds do not fit in a 5 s deadline: the refusal, at once.
      const error = await checkJoinCode({ url, release: "0.6.0", timeoutMs: 5_000 }).catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 503, code: "UPGRADE_IN_PROGRESS", retryAfter: 7 });
      // One second does: the KE1 is sent again once the upgrade is over.
      h.server.setUpgrade(true, 1);
      const waits: string[] = [];
      // The upgrade ends while the joiner waits (told by onRetry), however long its KE1 took.
      const check = await checkJoinCode({
        url,
        release: "0.6.0",
        onRetry: (e) => (waits.push(e.code), h.server.setUpgrade(false)),
      });
      expect(check.clusterRelease).toBe("0.6.0");
      expect(waits[0]).toBe("UPGRADE_IN_PROGRESS");
    } finally {
      h.server.setUpgrade(false);
    }
  });

  it("waitForRegistration honours its timeout and the caller's abort", async () => {
    const identity = await createMachineIdentity();
    const { session } = await registerMachine({ url, identity, release: "0.6.0" });
    await expect(
      waitForRegistration(session, identity, { until: "joined", timeoutMs: 300, waitSeconds: 1 }),
    ).rejects.toMatchObject({ code: "TIMEOUT" });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stop")), 200);
    await expect(
      waitForRegistration(session, identity, { until: "joined", signal: controller.signal, waitSeconds: 1 }),
    ).rejects.toThrow("stop");
  });

  it("errors never carry the code", async () => {
    const wrong = otherValidUrl(url);
    const error = (await checkJoinCode({ url: wrong, release: "0.6.0" }).catch((e: unknown) => e)) as StratumError;
    const text = `${error.message} ${JSON.stringify(error)} ${inspect(error)}`;
    expect(text).not.toContain(parseJoinUrl(wrong).code.code);
    expect(text).not.toContain(parseJoinUrl(wrong).code.formatted);
  });
});
