/**
 * The admin API's operations as data: one row per operation of `openapi.yaml` under
 * `/v1/admin/`, keyed by its `operationId`, which is also the name of the client's method. A
 * row says how the method's arguments become the request (a path parameter, a body) and, where
 * the answer is not returned as it is, how it becomes the result or an error. `index.ts` builds
 * every method from this table, so a new operation is one row here and one method with its
 * JSDoc in `AdminClient`; `test/admin/operations.test.ts` holds the rows to the spec and
 * `test/admin/operations.test-d.ts` each method's types to `generated/api.d.ts`.
 * @internal
 * @module
 */

import type { components } from "../../generated/api.js";
import { ResponseValidationError, StratumApiError } from "../errors/index.js";
import type { AdminOperationId } from "../schemas/index.js";

/** The methods of the admin API, as openapi-fetch's `request` names them. */
export type AdminMethod = "get" | "post" | "put" | "delete";

/** One operation of the admin API. */
export interface AdminOperation {
  /** The HTTP method. */
  readonly method: AdminMethod;
  /** The path template, as `openapi.yaml` writes it. */
  readonly path: string;
  /** The path parameter the method's first argument fills in, if any. */
  readonly pathParam?: "codeId" | "joinId";
  /**
   * The request body, the argument after the path parameter: `optional` is sent as `{}` when
   * the caller gives none (the API's defaults apply), `required` as given. Absent: no body.
   */
  readonly body?: "optional" | "required";
  /**
   * What the method resolves to, from the answer's body (validated when the client validates).
   * Absent: the body as it is. May throw, as the API's refusal would (`previewApproval`).
   */
  readonly answer?: (body: never, operation: string) => unknown;
}

/**
 * Every admin operation. Each answers its body (201 for `mintJoinCode`, 200 for the rest); a
 * 4xx/5xx is a `StratumApiError` from its problem document for every row alike (`index.ts`).
 */
export const ADMIN_OPERATIONS = {
  mintJoinCode: { method: "post", path: "/v1/admin/cluster/join-codes", body: "optional" },
  listJoinCodes: { method: "get", path: "/v1/admin/cluster/join-codes" },
  revokeJoinCode: { method: "delete", path: "/v1/admin/cluster/join-codes/{codeId}", pathParam: "codeId" },
  listNodeJoins: { method: "get", path: "/v1/admin/cluster/joins" },
  getNodeJoin: { method: "get", path: "/v1/admin/cluster/joins/{joinId}", pathParam: "joinId" },
  approveNodeJoin: {
    method: "post",
    path: "/v1/admin/cluster/joins/{joinId}/approve",
    pathParam: "joinId",
    body: "optional",
  },
  previewApproval: {
    method: "post",
    path: "/v1/admin/cluster/joins/{joinId}/approval-preview",
    pathParam: "joinId",
    body: "optional",
    answer: previewAnswer,
  },
  rejectNodeJoin: {
    method: "post",
    path: "/v1/admin/cluster/joins/{joinId}/reject",
    pathParam: "joinId",
    body: "required",
  },
  retryNodeJoin: { method: "post", path: "/v1/admin/cluster/joins/{joinId}/retry", pathParam: "joinId" },
  expireNodeJoin: { method: "post", path: "/v1/admin/cluster/joins/{joinId}/expire", pathParam: "joinId" },
  failNodeJoin: {
    method: "post",
    path: "/v1/admin/cluster/joins/{joinId}/fail",
    pathParam: "joinId",
    body: "required",
  },
  listClusterMembers: { method: "get", path: "/v1/admin/cluster/members" },
  getClusterNetworks: { method: "get", path: "/v1/admin/cluster/networks" },
  rotateClusterCa: { method: "post", path: "/v1/admin/cluster/ca-rotations" },
  setClusterUpgrade: { method: "put", path: "/v1/admin/cluster/upgrade", body: "required" },
} as const satisfies Record<AdminOperationId, AdminOperation>;

/**
 * The preview's answer as the approval would give it: the assignment, or the refusal the
 * approval would get thrown as the approval would throw it (the founder answers it with 200,
 * so a browser logs no failed request).
 */
function previewAnswer(
  preview: components["schemas"]["ApprovalPreview"],
  operation: string,
): { assignment: components["schemas"]["Assignment"] } {
  if (preview.refusal) throw new StratumApiError(preview.refusal.status, preview.refusal);
  if (!preview.assignment)
    throw new ResponseValidationError(operation, [{ path: "", message: "neither an assignment nor a refusal" }]);
  return { assignment: preview.assignment };
}
