// What a script branches on must say what happened: a malformed --api is a usage error (exit 2),
// refused by createAdminClient before any call (watchJoins would retry it forever), and a
// SIGTERM during `register --wait --json` exits with the code its JSON document says.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAdminClient } from "../../src/admin/index.js";
import { demoInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { buildCli, inPipe, killAll, removeCli } from "./process.js";

let cli: string;
let h: TestServer;
let scratch: string;
beforeAll(async () => {
  [cli, h] = await Promise.all([buildCli(), startTestServer({ timing: { tickMs: 100 } })]);
  scratch = mkdtempSync(join(tmpdir(), "stratum-cli-loud-"));
}, 120_000);
afterAll(async () => {
  killAll();
  if (cli) removeCli(cli);
  await h?.dispose();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const MALFORMED = ["127.0.0.1:8080", "not-a-url", "ftp://192.0.2.240/"];

describe("a malformed admin API URL", () => {
  it.each(MALFORMED)("createAdminClient refuses %s at once with INVALID_ARGUMENT", (baseUrl) => {
    expect(() => createAdminClient({ baseUrl, token: "t" })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringContaining("http:// or https://") }),
    );
  });

  it("createAdminClient takes http and https URLs, with a path prefix", () => {
    for (const baseUrl of ["http://127.0.0.1:8080", "https://stratum.example.com/api", "https://[2001:db8::1]"])
      expect(() => createAdminClient({ baseUrl, token: "t" })).not.toThrow();
  });

  it.each(MALFORMED)("`admin joins --api %s` is a usage error: exit 2, nothing sent", async (api) => {
    const run = inPipe(cli, ["admin", "joins", "--api", api, "--json"], { STRATUM_TOKEN: "t" });
    expect(await run.exited).toBe(2);
    expect(JSON.parse(run.out())).toMatchObject({ error: { code: "INVALID_ARGUMENT", exitCode: 2 } });
  });
});

describe("SIGTERM during register --wait --json", () => {
  it("exits with the exit code its JSON document says (143)", async () => {
    const { url } = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    const inventory = join(scratch, "inventory.json");
    await import("node:fs/promises").then((fs) => fs.writeFile(inventory, JSON.stringify(demoInventory)));
    const run = inPipe(
      cli,
      [
        "register",
        "--identity",
        join(scratch, "machine"),
        "--release",
        "0.6.0",
        "--inventory",
        inventory,
        "--wait",
        "delivering",
        "--json",
      ],
      { STRATUM_JOIN_URL: url },
    );
    await run.until(() => run.err().includes("waiting for approval"), "the wait", 60_000);
    run.child.kill("SIGTERM");
    const code = await run.exited;
    const document = JSON.parse(run.out()) as { error: { code: string; exitCode: number } };
    expect(document.error).toMatchObject({ code: "ABORTED" });
    expect(code).toBe(143);
    expect(document.error.exitCode).toBe(code);
  }, 120_000);
});
