// The public entries of the packed package, imported from a fresh project as a user does.
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";

const run = promisify(execFile);
let project: string;
beforeAll(async () => {
  project = ((await packedProject()) as { dir: string }).dir;
}, 300_000);

async function node(name: string, source: string): Promise<string> {
  const file = join(project, name);
  writeFileSync(file, source);
  const { stdout } = await run(process.execPath, [file], { cwd: project });
  return stdout.trim();
}

describe("the packed package's entries", () => {
  it("each imports in Node and lists the names its API report promises", async () => {
    const out = await node(
      "entries.mjs",
      `for (const entry of ["", "/validate", "/node", "/release", "/server", "/testing"]) {
         const m = await import("@stratum/join" + entry);
         console.log(entry || "/", Object.keys(m).length);
       }`,
    );
    for (const line of out.split("\n")) expect(Number(line.split(" ")[1]), line).toBeGreaterThan(0);
  });

  it("share one class per error: an error ./node throws is an instance of the root entry's class", async () => {
    const out = await node(
      "errors.mjs",
      `import { StratumError, StratumApiError } from "@stratum/join";
       import * as joiner from "@stratum/join/node";
       try { joiner.loadMachineIdentity({ certPem: "not a certificate", keyPem: "no" }); }
       catch (error) { console.log(error instanceof StratumError, error.code, joiner.StratumApiError === StratumApiError); }`,
    );
    expect(out).toBe("true IDENTITY_INVALID true");
  });
});
