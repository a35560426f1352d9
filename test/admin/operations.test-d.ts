// The operation table and the client's methods against generated/api.d.ts: the rows are
// exactly the admin paths and methods the generated `paths` declare, and each method resolves
// to its operation's success body and takes its request body.
import { expectTypeOf, test } from "vitest";
import type { paths } from "../../generated/api.js";
import type { AdminClient } from "../../src/admin/index.js";
import type { ADMIN_OPERATIONS } from "../../src/admin/operations.js";
import type { Input } from "../../src/types.js";

type Rows = typeof ADMIN_OPERATIONS;
type Id = keyof Rows;
type Method = "get" | "put" | "post" | "delete" | "patch" | "head" | "options" | "trace";
type AdminPath = Extract<keyof paths, `/v1/admin/${string}`>;

/** `method path` of every operation the generated paths declare under /v1/admin/. */
type DeclaredOperation = {
  [P in AdminPath]: { [M in Method]: [paths[P][M]] extends [undefined] ? never : `${M} ${P}` }[Method];
}[AdminPath];
type RowOperation = { [K in Id]: `${Rows[K]["method"]} ${Rows[K]["path"]}` }[Id];

type OperationOf<K extends Id> = paths[Rows[K]["path"]][Rows[K]["method"]];
type SuccessBody<O> = O extends { responses: { 200: { content: { "application/json": infer B } } } }
  ? B
  : O extends { responses: { 201: { content: { "application/json": infer B } } } }
    ? B
    : never;
type RequestBody<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;
type Result<K extends Id> = Awaited<ReturnType<AdminClient[K]>>;

test("the table has one row for each admin operation of the generated paths, and no other", () => {
  expectTypeOf<RowOperation>().toEqualTypeOf<DeclaredOperation>();
});

test("each method resolves to its operation's success body", () => {
  expectTypeOf<Result<"mintJoinCode">>().toEqualTypeOf<SuccessBody<OperationOf<"mintJoinCode">>>();
  expectTypeOf<Result<"listJoinCodes">>().toEqualTypeOf<SuccessBody<OperationOf<"listJoinCodes">>>();
  expectTypeOf<Result<"revokeJoinCode">>().toEqualTypeOf<SuccessBody<OperationOf<"revokeJoinCode">>>();
  expectTypeOf<Result<"listNodeJoins">>().toEqualTypeOf<SuccessBody<OperationOf<"listNodeJoins">>>();
  expectTypeOf<Result<"getNodeJoin">>().toEqualTypeOf<SuccessBody<OperationOf<"getNodeJoin">>>();
  expectTypeOf<Result<"approveNodeJoin">>().toEqualTypeOf<SuccessBody<OperationOf<"approveNodeJoin">>>();
  expectTypeOf<Result<"rejectNodeJoin">>().toEqualTypeOf<SuccessBody<OperationOf<"rejectNodeJoin">>>();
  expectTypeOf<Result<"retryNodeJoin">>().toEqualTypeOf<SuccessBody<OperationOf<"retryNodeJoin">>>();
  expectTypeOf<Result<"expireNodeJoin">>().toEqualTypeOf<SuccessBody<OperationOf<"expireNodeJoin">>>();
  expectTypeOf<Result<"failNodeJoin">>().toEqualTypeOf<SuccessBody<OperationOf<"failNodeJoin">>>();
  expectTypeOf<Result<"listClusterMembers">>().toEqualTypeOf<SuccessBody<OperationOf<"listClusterMembers">>>();
  expectTypeOf<Result<"getClusterNetworks">>().toEqualTypeOf<SuccessBody<OperationOf<"getClusterNetworks">>>();
  expectTypeOf<Result<"rotateClusterCa">>().toEqualTypeOf<SuccessBody<OperationOf<"rotateClusterCa">>>();
  expectTypeOf<Result<"setClusterUpgrade">>().toEqualTypeOf<SuccessBody<OperationOf<"setClusterUpgrade">>>();
  // The preview resolves to its assignment only: its refusal is thrown as the approval's.
  expectTypeOf<Result<"previewApproval">>().toEqualTypeOf<{
    assignment: NonNullable<SuccessBody<OperationOf<"previewApproval">>["assignment"]>;
  }>();
});

test("each method takes its operation's request body", () => {
  expectTypeOf<Parameters<AdminClient["mintJoinCode"]>[0]>().toEqualTypeOf<
    Input<RequestBody<OperationOf<"mintJoinCode">>> | undefined
  >();
  expectTypeOf<Parameters<AdminClient["approveNodeJoin"]>[1]>().toEqualTypeOf<
    Input<RequestBody<OperationOf<"approveNodeJoin">>> | undefined
  >();
  expectTypeOf<Parameters<AdminClient["previewApproval"]>[1]>().toEqualTypeOf<
    Input<RequestBody<OperationOf<"previewApproval">>> | undefined
  >();
  expectTypeOf<Parameters<AdminClient["rejectNodeJoin"]>[1]>().toEqualTypeOf<
    Input<RequestBody<OperationOf<"rejectNodeJoin">>>
  >();
  expectTypeOf<Parameters<AdminClient["failNodeJoin"]>[1]>().toEqualTypeOf<
    Input<RequestBody<OperationOf<"failNodeJoin">>>
  >();
  expectTypeOf<Parameters<AdminClient["setClusterUpgrade"]>[0]>().toEqualTypeOf<
    Input<RequestBody<OperationOf<"setClusterUpgrade">>>
  >();
});
