// The public types as a user's project sees them, through the package's names only: the
// either-or options accept each valid shape and refuse the others, and each joiner and admin
// call resolves to its documented result. Run by vitest's typecheck here, and compiled in a
// fresh project on the packed package under `strict` and `exactOptionalPropertyTypes`
// (test/package/typescript.test.ts), as a user with the strictest tsconfig would.
import { expectTypeOf, test } from "vitest";
import {
  createAdminClient,
  type AdminClient,
  type AdminClientOptions,
  type ApiSchemas,
  type JoinChange,
  type JoinListPoll,
} from "@stratum/join";
import {
  checkJoinCode,
  getRegistration,
  registerMachine,
  reportProgress,
  waitForRegistration,
  watchRegistration,
  type CheckJoinCodeOptions,
  type CodeCheckResult,
  type JoinTarget,
  type MachineIdentity,
  type RegisterResult,
  type Registration,
} from "@stratum/join/node";

declare const identity: MachineIdentity;

test("JoinTarget: a join URL, or an endpoint with its code; never both, never half", () => {
  const url: JoinTarget = { url: "stratum-join://192.0.2.240/7K3Q-9FTX-M2P" };
  const parts: JoinTarget = { endpoint: "192.0.2.240:9444", code: "7K3Q-9FTX-M2P" };
  expectTypeOf(url).toExtend<JoinTarget>();
  expectTypeOf(parts).toExtend<JoinTarget>();
  // @ts-expect-error: the URL carries the code
  const urlAndCode: JoinTarget = { url: "stratum-join://192.0.2.240/7K3Q-9FTX-M2P", code: "7K3Q-9FTX-M2P" };
  // @ts-expect-error: the URL carries the endpoint
  const urlAndEndpoint: JoinTarget = { url: "stratum-join://192.0.2.240/7K3Q-9FTX-M2P", endpoint: "192.0.2.240" };
  // @ts-expect-error: an endpoint needs its code
  const endpointOnly: JoinTarget = { endpoint: "192.0.2.240" };
  // @ts-expect-error: a code needs its endpoint
  const codeOnly: JoinTarget = { code: "7K3Q-9FTX-M2P" };
  // @ts-expect-error: neither
  const neither: JoinTarget = {};
  void [urlAndCode, urlAndEndpoint, endpointOnly, codeOnly, neither];
});

test("checkJoinCode and registerMachine take a JoinTarget with their own options", () => {
  const check: CheckJoinCodeOptions = { url: "stratum-join://192.0.2.240/7K3Q-9FTX-M2P", release: "0.6.0" };
  expectTypeOf(check).toExtend<Parameters<typeof checkJoinCode>[0]>();
  // @ts-expect-error: the release is required
  const noRelease: CheckJoinCodeOptions = { url: "stratum-join://192.0.2.240/7K3Q-9FTX-M2P" };
  void noRelease;
  expectTypeOf({ endpoint: "192.0.2.240", code: "7K3Q-9FTX-M2P", identity, release: "0.6.0" }).toExtend<
    Parameters<typeof registerMachine>[0]
  >();
  // @ts-expect-error: registering needs the machine's identity
  void registerMachine({ endpoint: "192.0.2.240", code: "7K3Q-9FTX-M2P", release: "0.6.0" });
});

test("AdminClientOptions: a fixed token or a getToken, exactly one", () => {
  const fixed: AdminClientOptions = { baseUrl: "https://192.0.2.240", token: "t" };
  const provided: AdminClientOptions = { baseUrl: "https://192.0.2.240", getToken: async () => "t" };
  const sync: AdminClientOptions = { baseUrl: "/api", getToken: () => "t", timeoutMs: 10_000 };
  expectTypeOf([fixed, provided, sync]).toExtend<AdminClientOptions[]>();
  // @ts-expect-error: one of token and getToken
  const both: AdminClientOptions = { baseUrl: "https://192.0.2.240", token: "t", getToken: () => "t" };
  // @ts-expect-error: no way to authenticate
  const none: AdminClientOptions = { baseUrl: "https://192.0.2.240" };
  // @ts-expect-error: the base URL is required
  const noBase: AdminClientOptions = { token: "t" };
  // @ts-expect-error: a token is a string
  const numeric: AdminClientOptions = { baseUrl: "https://192.0.2.240", token: 42 };
  void [both, none, noBase, numeric];
});

test("the joiner's calls resolve to their documented results", () => {
  expectTypeOf(checkJoinCode).returns.toEqualTypeOf<Promise<CodeCheckResult>>();
  expectTypeOf(registerMachine).returns.toEqualTypeOf<Promise<RegisterResult>>();
  expectTypeOf(getRegistration).returns.toEqualTypeOf<Promise<Registration>>();
  expectTypeOf(waitForRegistration).returns.toEqualTypeOf<Promise<Registration>>();
  expectTypeOf(reportProgress).returns.toEqualTypeOf<Promise<Registration>>();
  expectTypeOf(watchRegistration).returns.toEqualTypeOf<AsyncGenerator<Registration, void, undefined>>();
  expectTypeOf<CodeCheckResult["clockOffsetMs"]>().toEqualTypeOf<number>();
  expectTypeOf<RegisterResult["created"]>().toEqualTypeOf<boolean>();
});

test("the admin client's calls resolve to the API's bodies", () => {
  expectTypeOf(createAdminClient).returns.toEqualTypeOf<AdminClient>();
  type Result<K extends keyof AdminClient> = AdminClient[K] extends (...args: never[]) => infer R ? R : never;
  expectTypeOf<Result<"mintJoinCode">>().toEqualTypeOf<Promise<ApiSchemas["MintedJoinCode"]>>();
  expectTypeOf<Result<"listNodeJoins">>().toEqualTypeOf<Promise<ApiSchemas["NodeJoinList"]>>();
  expectTypeOf<Result<"approveNodeJoin">>().toEqualTypeOf<Promise<ApiSchemas["NodeJoin"]>>();
  expectTypeOf<Result<"previewApproval">>().toEqualTypeOf<Promise<{ assignment: ApiSchemas["Assignment"] }>>();
  expectTypeOf<Result<"pollNodeJoins">>().toEqualTypeOf<Promise<JoinListPoll>>();
  expectTypeOf<Result<"watchJoins">>().toEqualTypeOf<AsyncGenerator<JoinChange, void, undefined>>();
  // A long poll that saw no change has no list to read.
  const poll = {} as JoinListPoll;
  if (!poll.changed) {
    // @ts-expect-error: nothing changed, so no items
    void poll.items;
    expectTypeOf(poll.etag).toEqualTypeOf<string>();
  }
});
