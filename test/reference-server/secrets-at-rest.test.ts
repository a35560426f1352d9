// No secret is left in the founder's database files once a join has ended: a machine joins to
// `joined` (the real joiner against the real listener), and then the raw bytes of the database,
// its WAL and its shared-memory index hold none of the delivery's secrets (every `x-sensitive`
// field of the Bundle, the node key's PEM body line by line) and not the join code.
//
// It fails against a founder that only cleared the delivery (secure_delete on): the WAL still
// held every frame that carried the delivery until a checkpoint (the node key was found in
// stratum.db-wal), and the cluster's secrets sat in the database's meta table.
import { existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sensitiveFields } from "../../generated/sensitive.js";
import { parseJoinUrl } from "../../src/core/join-url.js";
import { createMachineIdentity, registerMachine, reportProgress, waitForRegistration } from "../../src/node/index.js";
import type { Bundle } from "../../src/types.js";
import { admin } from "./helpers.js";
import { sampleInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

/** Where each secret is found in the database's files: `file: name` for every hit. */
function findSecrets(dataDir: string, secrets: Record<string, string>): string[] {
  const found: string[] = [];
  for (const file of ["stratum.db", "stratum.db-wal", "stratum.db-shm"]) {
    const path = join(dataDir, file);
    if (!existsSync(path)) continue;
    const bytes = readFileSync(path);
    for (const [name, value] of Object.entries(secrets)) if (bytes.includes(value)) found.push(`${file}: ${name}`);
  }
  return found;
}

describe("the founder's database files after a join", () => {
  it("hold no secret of the delivery and not the join code", async () => {
    // A raft cluster, so that the bundle carries every secret there is, the unseal key included.
    const s = await startTestServer({ openBaoMode: "raft" });
    t = s;
    const minted = (await admin(s.server, "POST", "/v1/admin/cluster/join-codes", { body: {} })).body;
    const identity = await createMachineIdentity();
    const { session } = await registerMachine({
      url: minted.url,
      identity,
      release: "0.6.0",
      hostname: "node-2",
      inventory: sampleInventory() as never,
    });
    const approved = await admin(s.server, "POST", `/v1/admin/cluster/joins/${session.joinId}/approve`, {
      body: { assignment: { role: "hybrid" } },
    });
    expect(approved.status).toBe(200);
    await s.server.tick();
    const delivered = await waitForRegistration(session, identity, { until: "delivering", timeoutMs: 20_000 });
    const bundle = delivered.delivery!.bundle as Bundle;
    await reportProgress(session, identity, {
      steps: [{ name: "join", title: "Joining the cluster", status: "done" }],
    });
    expect((await waitForRegistration(session, identity, { until: "joined", timeoutMs: 20_000 })).state).toBe("joined");

    const secrets: Record<string, string> = {};
    for (const field of sensitiveFields.Bundle) {
      const value = (bundle as unknown as Record<string, unknown>)[field];
      expect(typeof value, `bundle.${field}`).toBe("string");
      expect((value as string).length, `bundle.${field}`).toBeGreaterThanOrEqual(16);
      secrets[`bundle.${field}`] = value as string;
    }
    // The key as stored would be JSON text (newlines escaped): each line of its body is looked for.
    const body = (bundle.nodeKey ?? "").split("\n").filter((line) => line !== "" && !line.startsWith("-----"));
    expect(body.length).toBeGreaterThan(0);
    body.forEach((line, i) => (secrets[`nodeKey line ${i + 1}`] = line));
    const code = parseJoinUrl(minted.url).code;
    secrets["join code"] = code.code;
    secrets["join code (display form)"] = code.formatted;
    secrets["join URL"] = minted.url;

    // While the founder runs, and after it stops.
    expect(findSecrets(s.dataDir, secrets)).toEqual([]);
    await s.stop();
    expect(findSecrets(s.dataDir, secrets)).toEqual([]);
  });

  it("moves the cluster's secrets of an older data directory out of the database into a 0600 file", async () => {
    const first = await startTestServer();
    t = first;
    const path = join(first.dataDir, "cluster-secrets.json");
    const secrets = JSON.parse(readFileSync(path, "utf8")) as Record<string, string>;
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // As an older reference server kept them: a meta row, no file.
    first.server.store.tx(() => first.server.store.setMeta("secrets", secrets));
    await first.stop();
    rmSync(path);
    const second = await first.restart();
    t = second;
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual(secrets);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(second.server.store.getMeta("secrets")).toBeUndefined();
    expect(second.server.cluster.secrets).toEqual(secrets);
    expect(findSecrets(second.dataDir, secrets)).toEqual([]);
  });
});
