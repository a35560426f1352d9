import { describe, expect, it } from "vitest";
import { ResponseValidationError } from "../../src/errors/index.js";
import {
  LinkSchema,
  NodeJoinListSchema,
  parseResponse,
  ProblemSchema,
  RegistrationSchema,
  validateResponses,
} from "../../src/schemas/index.js";

const join = {
  id: "nj-1",
  codeId: "jc-1",
  state: "pending",
  pairingCode: "4F7-K2Q",
  stalled: false,
  steps: [],
  createdAt: "2026-11-29T10:00:00Z",
  updatedAt: "2026-11-29T10:00:00Z",
};

describe("schemas", () => {
  it("allow unknown fields (a newer server) and drop them", () => {
    expect(parseResponse(NodeJoinListSchema, "op", { items: [{ ...join, newField: { x: 1 } }], next: "t" })).toEqual({
      items: [join],
    });
  });

  it("enforce required fields, enums and integers", () => {
    const { stalled: _stalled, ...missing } = join;
    const result = validateResponses("listNodeJoins", {
      items: [{ ...missing, state: "gone", steps: [{ name: "a", title: "A", status: "running" }] }],
    });
    expect(result).toEqual({
      success: false,
      issues: [
        { path: "items.0.state", message: expect.stringMatching(/^expected one of "needs-upgrade", "pending"/) },
        { path: "items.0.stalled", message: "expected boolean" },
      ],
    });
    expect(validateResponses("listClusterMembers", { membershipGeneration: 1.5, items: [] })).toMatchObject({
      success: false,
      issues: [{ path: "membershipGeneration" }],
    });
  });

  it("fill the spec's defaults", () => {
    expect(parseResponse(LinkSchema, "op", { name: "s", interface: "eth0" })).toEqual({
      name: "s",
      interface: "eth0",
      kind: "ethernet",
    });
  });

  it("parseResponse throws ResponseValidationError with the operation, never the values", () => {
    const secret = "-----BEGIN PRIVATE KEY-----";
    const body = {
      joinId: "nj-1",
      state: "delivering",
      pairingCode: "4F7-K2Q",
      delivery: { nodeId: "n", nodeYaml: "", bundle: { role: "hybrid", nodes: [], nodeKey: { wrong: secret } } },
    };
    let error: unknown;
    try {
      parseResponse(RegistrationSchema, "GET /v1/join/registrations/{joinId}", body);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect(error).toMatchObject({
      operation: "GET /v1/join/registrations/{joinId}",
      issues: [{ path: "delivery.bundle.nodeKey", message: "expected string" }],
    });
    expect(JSON.stringify(error) + String(error)).not.toContain(secret);
  });

  it("Problem: strict on its code", () => {
    const doc = { type: "t", title: "T", status: 409, requestId: "r", code: "RELEASE_MISMATCH" };
    expect(parseResponse(ProblemSchema, "op", doc)).toEqual(doc);
    expect(() => parseResponse(ProblemSchema, "op", { ...doc, code: "NOPE" })).toThrow(ResponseValidationError);
  });
});
