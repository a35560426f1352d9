// An action reads its arguments through the types of its own command's spec: a flag the spec
// does not declare is a type error, a required flag is a string, a repeatable one a list
// (src/cli/args.ts). The specs are the CLI's own.
import { expectTypeOf, test } from "vitest";
import {
  listFlag,
  numberFlag,
  requiredFlag,
  requiredList,
  stringFlag,
  type CommandAction,
  type CommandSpec,
  type ParsedArgs,
} from "../../src/cli/args.js";
import { joinTargetOf } from "../../src/cli/joiner-steps.js";
import type { adminReject } from "../../src/cli/commands/admin.js";
import type { register } from "../../src/cli/commands/register.js";
import type { releaseDownload, releaseSign } from "../../src/cli/commands/release.js";
import type { status } from "../../src/cli/commands/status.js";

declare const args: ParsedArgs<typeof register.flags>;

test("a required flag reads as a string, an optional one as possibly absent", () => {
  expectTypeOf(requiredFlag(args, "identity")).toEqualTypeOf<string>();
  expectTypeOf(requiredFlag(args, "release")).toEqualTypeOf<string>();
  expectTypeOf(stringFlag(args, "hostname")).toEqualTypeOf<string | undefined>();
  expectTypeOf(numberFlag(args, "timeout")).toEqualTypeOf<number | undefined>();
  expectTypeOf(listFlag(args, "trusted-key")).toEqualTypeOf<string[]>();
  expectTypeOf(args.values["self-upgrade"]).toEqualTypeOf<boolean | undefined>();
  expectTypeOf(args.values.json).toEqualTypeOf<boolean | undefined>();
  expectTypeOf(args.values.identity).toEqualTypeOf<string | undefined>();
  expectTypeOf(args.values["trusted-key"]).toEqualTypeOf<string[] | undefined>();
  const sign = {} as ParsedArgs<typeof releaseSign.flags>;
  expectTypeOf(requiredList(sign, "key")).toEqualTypeOf<string[]>();
});

test("a flag the spec does not declare, or reads as another kind, is refused", () => {
  // @ts-expect-error: register has no --reason
  stringFlag(args, "reason");
  // @ts-expect-error: register has no --reason
  void args.values.reason;
  // @ts-expect-error: --hostname is not required: its help does not say so
  requiredFlag(args, "hostname");
  // @ts-expect-error: --trusted-key is repeatable: a list, not one string
  stringFlag(args, "trusted-key");
  // @ts-expect-error: --self-upgrade is a boolean
  stringFlag(args, "self-upgrade");
  // @ts-expect-error: --hostname takes one value
  listFlag(args, "hostname");
  // @ts-expect-error: release download's --trusted-key is required, but a list
  requiredFlag({} as ParsedArgs<typeof releaseDownload.flags>, "trusted-key");
});

test("a shared step takes the arguments of every command that declares its flags, and only those", () => {
  joinTargetOf(args);
  // @ts-expect-error: status has no --url, --endpoint or --code
  joinTargetOf({} as ParsedArgs<typeof status.flags>);
});

test("a spec's action is checked against the spec's flags; the command list holds every spec", () => {
  expectTypeOf<typeof register>().toExtend<CommandSpec>();
  expectTypeOf<CommandAction<typeof adminReject.flags>>().toExtend<
    NonNullable<Awaited<ReturnType<(typeof adminReject)["load"]>>>
  >();
  const reads: CommandAction<typeof adminReject.flags> = async (_ctx, parsed) => {
    expectTypeOf(requiredFlag(parsed, "reason")).toEqualTypeOf<string>();
    // @ts-expect-error: admin reject has no --identity
    requiredFlag(parsed, "identity");
  };
  void reads;
  const wrong: CommandSpec<typeof status.flags> = {
    ...({} as typeof status),
    // @ts-expect-error: register's action reads flags status does not declare
    load: async () => ({}) as CommandAction<typeof register.flags>,
  };
  void wrong;
});
