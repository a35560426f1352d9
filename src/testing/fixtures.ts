/**
 * The fake cluster's building blocks: complete example objects of the admin API's answers, and
 * problem documents as the API sends them. `index.ts` (the `./testing` entry) exports both.
 * @module
 */

import { HttpResponse } from "msw";
import type { components } from "../../generated/api.js";

/** The component schemas of `openapi.yaml` as TypeScript types (`ApiSchemas["NodeJoin"]`, …). */
export type Schemas = components["schemas"];
/** A machine that registered to join, on the founder. */
export type NodeJoin = Schemas["NodeJoin"];
/** A join code as the founder lists it (never the code itself). */
export type JoinCode = Schemas["JoinCode"];
/** The machine-readable code of every API refusal. */
export type ProblemCode = Schemas["ProblemCode"];

/** What {@link problemResponse} puts in the document and headers besides the code. */
export interface ProblemInit {
  /** The problem's short title; by default the code in words. */
  title?: string | undefined;
  /** The human explanation; absent by default. */
  detail?: string | undefined;
  /** The request id; `req-test0000` by default. */
  requestId?: string | undefined;
  /** Field errors (`INVALID_INPUT`, `JOIN_APPROVAL_REFUSED`). */
  errors?: Schemas["FieldError"][] | undefined;
  /** Per-code facts (`RELEASE_MISMATCH`: `clusterRelease`, …; `FORBIDDEN`: `permission`). */
  details?: Record<string, unknown> | undefined;
  /** Seconds, sent as `Retry-After`. */
  retryAfter?: number | undefined;
  /** More headers, e.g. `WWW-Authenticate`. */
  headers?: Record<string, string> | undefined;
}

/**
 * An `application/problem+json` refusal as the API sends it. Wrap it in openapi-msw's
 * `response.untyped(...)` when the status is not declared for that operation.
 */
export function problemResponse(
  status: number,
  code: ProblemCode,
  init: ProblemInit = {},
): HttpResponse<Schemas["Problem"]> {
  const body: Schemas["Problem"] = {
    type: `https://docs.stratum.example/problems/${code.toLowerCase().replace(/_/g, "-")}`,
    title: init.title ?? code.toLowerCase().replace(/_/g, " "),
    status,
    requestId: init.requestId ?? "req-test0000",
    code,
  };
  if (init.detail !== undefined) body.detail = init.detail;
  if (init.errors) body.errors = init.errors;
  if (init.details) body.details = init.details;
  const headers: Record<string, string> = { "Content-Type": "application/problem+json", ...init.headers };
  if (init.retryAfter !== undefined) headers["Retry-After"] = String(init.retryAfter);
  return HttpResponse.json(body, { status, headers });
}

let sequence = 0;
/** Ids unique within a test run, in the spec's shapes (`nj-…`, `jc-…`). */
function nextId(prefix: string): string {
  sequence += 1;
  return `${prefix}-${sequence.toString(36).padStart(8, "0")}`;
}

const NOW = "2026-11-29T10:00:00Z";

/** Complete example objects of the admin API's answers, with any field overridden. */
export const fixtures = {
  /** A live join code's record. */
  joinCode(overrides: Partial<JoinCode> = {}): JoinCode {
    const id = overrides.id ?? nextId("jc");
    return {
      id,
      selector: "4F",
      attempts: 0,
      endpoint: "192.0.2.240:9444",
      caFingerprint: "7D:9F:05:39:12:F6:D4:91",
      state: "live",
      registrations: 0,
      createdBy: "bootstrap-admin",
      createdAt: NOW,
      expiresAt: "2026-11-29T14:00:00Z",
      ...overrides,
    };
  },
  /** A machine that registered and waits for approval. */
  nodeJoin(overrides: Partial<NodeJoin> = {}): NodeJoin {
    return {
      id: nextId("nj"),
      codeId: "jc-4f7k2q9m",
      state: "pending",
      pairingCode: "4F7-K2Q",
      hostname: "node-2",
      release: "0.6.0",
      sourceAddr: "192.0.2.21",
      inventory: { disks: [{ name: "nvme1n1", path: "/dev/nvme1n1" }], nics: [{ name: "enp87s0" }] },
      stalled: false,
      steps: [],
      createdAt: NOW,
      updatedAt: NOW,
      expiresAt: "2026-11-30T14:00:00Z",
      ...overrides,
    };
  },
  /** An active member. */
  member(overrides: Partial<Schemas["Member"]> = {}): Schemas["Member"] {
    return {
      nodeId: nextId("n"),
      name: "node-1",
      role: "hybrid",
      state: "active",
      mgmtIp: "192.0.2.11",
      appliedGeneration: 1,
      ...overrides,
    };
  },
  /** The cluster's networks (bridged provider uplink). */
  clusterNetworks(overrides: Partial<Schemas["ClusterNetworks"]> = {}): Schemas["ClusterNetworks"] {
    return {
      storage: { cidr: "10.90.0.0/24", mtu: 9000, vlan: 90 },
      overlay: { cidr: "10.91.0.0/24", mtu: 9000 },
      providerTopology: "bridged",
      providerVlan: 100,
      providerUpstreamInterface: "enp87s0",
      providerUpstreamPurpose: "mgmt",
      ...overrides,
    };
  },
};
