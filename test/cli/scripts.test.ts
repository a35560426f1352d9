// The README's "Scripts" shell flow, run as it is written: the block is read from README.md
// and run by bash, each `stratum-join` a process of the real entry, against a live reference
// server. Only the settings a reader would put in are set to this test's own (the admin API's
// URL, the token file it reads, the machine's directory): a README edited into a broken flow
// fails here.
import { spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectInstalled } from "../machine/tools.js";
import { type TestServer } from "../helpers/reference-server.js";
import { startUnsealingHarness, writeSecretsFile } from "../node/machine-secrets.js";
import { startSwtpm, type Swtpm } from "../node/swtpm.js";
import { buildCli, removeCli, root, shellQuote } from "./process.js";

let h: TestServer;
let tmp: string;
let cli: string;

let tpm: Swtpm;
beforeAll(async () => {
  expectInstalled("jq");
  tmp = mkdtempSync(join(tmpdir(), "stratum-cli-scripts-"));
  [h, cli, tpm] = await Promise.all([startUnsealingHarness({ timing: { tickMs: 100 } }), buildCli(), startSwtpm()]);
});
afterAll(async () => {
  await Promise.all([h?.dispose(), tpm?.stop()]);
  rmSync(tmp, { recursive: true, force: true });
  if (cli) removeCli(cli);
});

/** The one `sh` block of the README's "Scripts" section. */
function scriptsBlock(): string {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const start = readme.indexOf("\n## Scripts\n");
  expect(start, "README has a Scripts section").toBeGreaterThan(0);
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks, "one sh block in Scripts").toHaveLength(1);
  return blocks[0]!;
}

it("the README's Scripts flow takes a machine from a minted code to joined with the CLI alone", async () => {
  const block = scriptsBlock();
  const dir = join(tmp, "machine");
  // The settings: STRATUM_API's value, ID's value; the token is read from admin.token as written.
  let settings = 0;
  const script = block
    .split("\n")
    .map((line) => {
      if (/^export STRATUM_API=\S+ /.test(line)) {
        settings++;
        return line.replace(/^export STRATUM_API=\S+/, `export STRATUM_API=${shellQuote(h.server.adminUrl)}`);
      }
      if (/^ID=\S+/.test(line)) {
        settings++;
        return line.replace(/^ID=\S+/, `ID=${shellQuote(dir)}`);
      }
      return line;
    })
    .join("\n");
  expect(settings, "the block sets STRATUM_API (with STRATUM_TOKEN) and ID on lines of their own").toBe(2);
  expect(block).toMatch(/STRATUM_TOKEN="\$\(cat admin\.token\)"/);
  writeFileSync(join(tmp, "admin.token"), `${h.server.adminToken}\n`, { mode: 0o600 });
  // The secrets' homes: the seed's, under the test's own directory (as a reader's are /etc/stratum).
  copyFileSync(writeSecretsFile(join(tmp, "homes")), join(tmp, "secrets.json"));
  // `stratum-join` on the PATH, as an installed package puts it there.
  writeFileSync(join(tmp, "stratum-join"), `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(cli)} "$@"\n`);
  chmodSync(join(tmp, "stratum-join"), 0o755);

  const child = spawn("bash", ["-euo", "pipefail", "-c", script], {
    cwd: tmp,
    env: { PATH: `${tmp}:${process.env.PATH ?? "/usr/bin:/bin"}`, HOME: tmp, TPM2TOOLS_TCTI: tpm.tcti },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const code = await new Promise<number>((resolve) => child.on("close", (c) => resolve(c ?? -1)));
  expect(code, `${stdout}\n${stderr}`).toBe(0);

  // What the jq filters printed, in order: the approval, the delivery's directory, joined twice.
  const printed = stdout.trim().split("\n");
  expect(printed, stdout).toHaveLength(4);
  expect(["approved", "delivering"]).toContain(printed[0]);
  expect(printed.slice(1)).toEqual([join(dir, "delivery"), "joined", "joined"]);
  const joins = (await h.admin.listNodeJoins()).items;
  expect(joins).toHaveLength(1);
  expect(joins[0]).toMatchObject({ state: "joined" });
  // The unseal key went to the TPM, sealed.
  expect(readFileSync(join(tmp, "homes", "var", "openbao-unseal.sealed"), "utf8")).toContain("tpm-sealed");
  // The person at the terminal saw the pairing code (stderr, since --json), never the token.
  expect(stderr).toContain("PAIRING CODE");
  expect(stdout + stderr).not.toContain(h.server.adminToken);
});
