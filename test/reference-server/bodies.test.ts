// Request bodies as openapi.yaml describes them: a required body is required (no body at all
// is 400), a JSON null is a value and not an absent body (400 wherever an object is due), and a
// progress report never names a step with one of the founder's own failedStep names. Every
// answer is held to the spec.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TestJoiner, admin, insertJoinRow, mint } from "./helpers.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

let t: TestServer;
let joiner: TestJoiner;
let joinId: string;
beforeAll(async () => {
  t = await startTestServer();
  const minted = await mint(t.server);
  joiner = await TestJoiner.create(t.server);
  joinId = ((await joiner.register(minted.code)).response.json as { joinId: string }).joinId;
  // A join that takes progress reports.
  t.server.store.tx(() => t.server.store.patchJoin(joinId, { state: "installing" }));
});
afterAll(async () => {
  await joiner.close();
  await t.dispose();
});

describe("a progress report (its body required)", () => {
  it("is refused without a body, or with null, and records nothing", async () => {
    const before = t.server.store.getJoin(joinId)!;
    const none = await joiner.call("reportJoinProgress", "POST", `/v1/join/registrations/${joinId}/progress`);
    expect([none.status, (none.json as any).code]).toEqual([400, "INVALID_INPUT"]);
    expect((none.json as any).errors).toEqual([{ field: "", message: "a JSON body is required" }]);
    const nul = await joiner.call("reportJoinProgress", "POST", `/v1/join/registrations/${joinId}/progress`, {
      json: null,
    });
    expect([nul.status, (nul.json as any).code]).toEqual([400, "INVALID_INPUT"]);
    expect(t.server.store.getJoin(joinId)!.updatedAt).toBe(before.updatedAt);
    // An empty object is a report (of nothing new), as the schema allows.
    expect((await joiner.progress(joinId, {})).status).toBe(200);
  });

  it("never names a step stalled or operator: those are the founder's failedStep names", async () => {
    for (const name of ["stalled", "operator"]) {
      const refused = await joiner.progress(joinId, { steps: [{ name, title: "Mine", status: "failed" }] });
      expect(refused.status).toBe(400);
      expect((refused.json as any).errors).toEqual([
        { field: "steps[0].name", message: expect.stringContaining("only the founder") },
      ]);
    }
    expect(t.server.store.getJoin(joinId)!.state).toBe("installing");
    // A name that only contains one is the joiner's.
    const own = await joiner.progress(joinId, {
      steps: [{ name: "join/operator-check", title: "x", status: "running" }],
    });
    expect(own.status).toBe(200);
  });
});

describe("a JSON null is not an absent body", () => {
  it("mint: no body is all defaults, null is refused", async () => {
    const before = t.server.store.listCodes().length;
    const nul = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", {
      raw: "null",
      operationId: "mintJoinCode",
    });
    expect([nul.status, nul.body.code]).toEqual([400, "INVALID_INPUT"]);
    expect(t.server.store.listCodes()).toHaveLength(before);
    const none = await admin(t.server, "POST", "/v1/admin/cluster/join-codes", { operationId: "mintJoinCode" });
    expect(none.status).toBe(201);
  });

  it("approve and its preview: no body is all defaults, null is refused", async () => {
    t.server.setUpgrade(true);
    const id = insertJoinRow(t.server);
    for (const [action, operationId] of [
      ["approval-preview", "previewApproval"],
      ["approve", "approveNodeJoin"],
    ] as const) {
      const nul = await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/${action}`, {
        raw: "null",
        operationId,
      });
      expect([action, nul.status, nul.body.code]).toEqual([action, 400, "INVALID_INPUT"]);
    }
    expect(t.server.store.getJoin(id)!.state).toBe("pending");
    const none = await admin(t.server, "POST", `/v1/admin/cluster/joins/${id}/approve`, {
      operationId: "approveNodeJoin",
    });
    expect([none.status, none.body.state]).toEqual([200, "approved"]);
    t.server.setUpgrade(false);
  });
});
