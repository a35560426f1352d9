// A flag's `required` lives in its spec: the help's "(required)" and the usage error both come
// from there, so the two cannot disagree (src/cli/args.ts).
import { describe, expect, it } from "vitest";
import { CliError } from "../../src/errors/cli.js";
import { parseCommandArgs, requiredFlag, requiredList, stringFlag } from "../../src/cli/args.js";
import { commandHelp } from "../../src/cli/help.js";
import { COMMANDS } from "../../src/cli/run.js";
import { releaseSign } from "../../src/cli/commands/release.js";
import { status } from "../../src/cli/commands/status.js";
import { createStyle } from "../../src/cli/style.js";

const layout = { style: createStyle(false), width: 400 };

describe("required flags", () => {
  it("--help says (required) of exactly the flags whose spec is required", () => {
    let required = 0;
    for (const spec of COMMANDS) {
      const help = commandHelp(spec, layout);
      for (const [name, flag] of Object.entries(spec.flags)) {
        if (flag.hidden) continue;
        const line = help.split("\n").find((l) => l.trimStart().startsWith(`--${name}`) || l.includes(`, --${name}`));
        expect(line, `${spec.path.join(" ")} --${name}`).toBeDefined();
        expect(line!.includes("(required)"), `${spec.path.join(" ")} --${name}: ${line}`).toBe(flag.required === true);
        expect(flag.description).not.toContain("(required)");
        if (flag.required) required += 1;
      }
    }
    expect(required).toBeGreaterThan(10);
  });

  it("an absent required flag is a USAGE error naming it, where the action reads it", () => {
    const args = parseCommandArgs(status, [], {});
    expect(stringFlag(args, "identity")).toBeUndefined();
    const error = (() => {
      try {
        requiredFlag(args, "identity");
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(CliError);
    expect(error).toMatchObject({ code: "USAGE", message: "--identity is required", command: "status" });
    expect(() => requiredList(parseCommandArgs(releaseSign, ["dir", "--release", "1"], {}), "key")).toThrow(
      "--key is required",
    );
    expect(requiredFlag(parseCommandArgs(status, ["--identity", "/d"], {}), "identity")).toBe("/d");
  });

  it("reading a flag as required that its spec does not mark is refused, not passed over", () => {
    const args = parseCommandArgs(status, [], {});
    // @ts-expect-error: the types refuse it too (test/cli/args.test-d.ts); this is the spec read at run time
    expect(() => requiredFlag(args, "secrets")).toThrow(/its spec does not say so/);
  });
});
