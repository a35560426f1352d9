// Automation runs on Bun and Deno too. From the packed package in a fresh project, on each
// runtime (its npm package, scripts/toolchains.mjs): the admin client, the CLI's admin
// commands, code checks, release verification, and the joiner, which works on Bun and on Deno
// is refused at once (RUNTIME_UNSUPPORTED: Deno's node:tls has no TLS exporter), never with a
// raw TypeError, a misleading network error or a process that stays alive. Against a
// reference server in this process.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { toolchains, TOOLCHAIN_VERSIONS } from "../../scripts/toolchains.mjs";
import { generateReleaseKeyPair } from "../../src/release/keys.js";
import { signReleaseDirectory } from "../../src/release/manifest.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { runToEnd } from "../readme/processes.js";

let project: string;
let work: string;
let h: TestServer;
let release: { dir: string; keyFile: string };
const runtimes: Record<"bun" | "deno", string[]> = { bun: [], deno: [] };

beforeAll(async () => {
  const [packed, tools] = await Promise.all([packedProject(), toolchains()]);
  project = (packed as { dir: string }).dir;
  const { bun, deno } = tools as { bun: string; deno: string };
  runtimes.bun = [bun];
  runtimes.deno = [deno, "run", "--allow-all", "--quiet"];
  work = mkdtempSync(join(project, "runtimes-"));
  const scratch = mkdtempSync(join(tmpdir(), "stratum-runtimes-release-"));
  const dir = join(scratch, "0.6.0");
  mkdirSync(join(dir, "os", "blobs"), { recursive: true });
  writeFileSync(join(dir, "os", "blobs", "rootfs.img"), Buffer.alloc(100_000, 3));
  const key = generateReleaseKeyPair();
  await signReleaseDirectory(dir, { release: "0.6.0", keys: [key.privateKeyPem] });
  writeFileSync(join(scratch, "key.pem"), key.publicKeyPem);
  release = { dir, keyFile: join(scratch, "key.pem") };
  h = await startTestServer({ timing: { tickMs: 100 } });
}, 600_000);
afterAll(async () => {
  await h?.dispose();
  if (work) rmSync(work, { recursive: true, force: true });
  if (release) rmSync(join(release.dir, ".."), { recursive: true, force: true });
});

const cli = () => join(project, "node_modules", "@stratum", "join", "dist", "cli", "main.js");

/** Runs `file args…` on `runtime` in the project, with the admin API's environment; exits within 60 s or fails. */
async function on(runtime: "bun" | "deno", file: string, args: string[] = [], env: Record<string, string> = {}) {
  const [command, ...runArgs] = runtimes[runtime];
  const started = Date.now();
  const run = await runToEnd(command!, [...runArgs, file, ...args], {
    cwd: project,
    env: { STRATUM_API: h.server.adminUrl, STRATUM_TOKEN: h.server.adminToken, NO_COLOR: "1", ...env },
    timeoutMs: 60_000,
  });
  return { ...run, ms: Date.now() - started };
}

function script(name: string, source: string): string {
  const file = join(work, name);
  writeFileSync(file, source);
  return file;
}

/** The JSON document a `--json` command printed (the first line starting with `{` to the end). */
function document(output: string): Record<string, unknown> {
  const start = output.indexOf("{");
  return JSON.parse(output.slice(start, output.lastIndexOf("}") + 1)) as Record<string, unknown>;
}

describe.each(["bun", "deno"] as const)("on %s (its npm package)", (runtime) => {
  it(`is the pinned version`, async () => {
    const [command] = runtimes[runtime];
    const run = await runToEnd(command!, ["--version"], { cwd: project });
    expect(run.output).toContain((TOOLCHAIN_VERSIONS as Record<string, string>)[runtime]);
  });

  it("the admin client mints a code and lists the joins", async () => {
    const file = script(
      `admin-${runtime}.mjs`,
      `import { createAdminClient } from "@stratum/join";
       const admin = createAdminClient({ baseUrl: process.env.STRATUM_API, token: process.env.STRATUM_TOKEN });
       const minted = await admin.mintJoinCode({ ttlSeconds: 600 });
       const joins = await admin.listNodeJoins();
       console.log(JSON.stringify({ state: minted.joinCode.state, items: Array.isArray(joins.items) }));`,
    );
    const run = await on(runtime, file);
    expect(run.code, run.output).toBe(0);
    expect(document(run.output)).toEqual({ state: "live", items: true });
  });

  it("the CLI's admin commands: mint, codes, joins; a wrong token exits 12", async () => {
    const mint = await on(runtime, cli(), ["admin", "mint", "--json"]);
    expect(mint.code, mint.output).toBe(0);
    expect(document(mint.output)).toMatchObject({ url: expect.stringMatching(/^stratum-join:\/\//) });
    const codes = await on(runtime, cli(), ["admin", "codes", "--json"]);
    expect(codes.code, codes.output).toBe(0);
    const joins = await on(runtime, cli(), ["admin", "joins", "--json"]);
    expect(joins.code, joins.output).toBe(0);
    expect(document(joins.output)).toHaveProperty("items");
    const refused = await on(runtime, cli(), ["admin", "joins", "--json"], { STRATUM_TOKEN: "wrong" });
    expect(refused.code, refused.output).toBe(12);
    expect(document(refused.output)).toMatchObject({ error: { code: "UNAUTHORIZED" } });
  });

  it("code checks: a good code, and a typo caught offline (exit 3)", async () => {
    const good = await on(runtime, cli(), ["code", "check", "4F7K-2Q9M-ABD", "--json"]);
    expect(good.code, good.output).toBe(0);
    const typo = await on(runtime, cli(), ["code", "check", "4F7K-2Q9M-ABE", "--json"]);
    expect(typo.code, typo.output).toBe(3);
    expect(document(typo.output)).toMatchObject({ error: { code: "JOIN_CODE_MALFORMED", reason: "check" } });
  });

  it("release verification: the CLI and verifyReleaseDirectory accept the signed release, and refuse another key", async () => {
    const ok = await on(runtime, cli(), [
      "release",
      "verify",
      release.dir,
      "--release",
      "0.6.0",
      "--trusted-key",
      release.keyFile,
      "--json",
    ]);
    expect(ok.code, ok.output).toBe(0);
    expect(document(ok.output)).toMatchObject({ release: "0.6.0", files: 1 });
    const file = script(
      `verify-${runtime}.mjs`,
      `import { generateReleaseKeyPair, verifyReleaseDirectory } from "@stratum/join/release";
       try {
         await verifyReleaseDirectory(process.argv[2], { trustedKeys: [generateReleaseKeyPair().publicKeyPem], expectRelease: "0.6.0" });
         console.log(JSON.stringify({ verified: true }));
       } catch (error) { console.log(JSON.stringify({ code: error.code, rule: error.rule })); }`,
    );
    const refused = await on(runtime, file, [release.dir]);
    expect(refused.code, refused.output).toBe(0);
    expect(document(refused.output)).toEqual({ code: "RELEASE_UNVERIFIED", rule: "signature-threshold" });
  });

  it(
    runtime === "bun"
      ? "the joiner works: the code checked, the machine registered with the CLI, its status read"
      : "the joiner is refused at once (RUNTIME_UNSUPPORTED, tls-exporter), the status of a registration made elsewhere is read",
    async () => {
      const { url } = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
      const file = script(
        `join-${runtime}.mjs`,
        `import { checkJoinCode } from "@stratum/join/node";
         try {
           const check = await checkJoinCode({ url: process.argv[2], release: "0.6.0" });
           console.log(JSON.stringify({ clusterRelease: check.clusterRelease }));
         } catch (error) {
           console.log(JSON.stringify({ name: error.name, code: error.code, feature: error.feature, runtime: error.runtime }));
         }`,
      );
      const pakes = () => h.logs.filter((line) => line.includes("/v1/join/pake")).length;
      const pakesBefore = pakes();
      const check = await on(runtime, file, [url]);
      expect(check.code, check.output).toBe(0);
      const identity = join(work, `machine-${runtime}`);
      const register = await on(runtime, cli(), ["register", "--identity", identity, "--release", "0.6.0", "--json"], {
        STRATUM_JOIN_URL: url,
      });
      if (runtime === "bun") {
        expect(document(check.output)).toEqual({ clusterRelease: "0.6.0" });
        expect(register.code, register.output).toBe(0);
        expect(document(register.output)).toMatchObject({ state: "pending" });
      } else {
        expect(document(check.output)).toEqual({
          name: "RuntimeUnsupportedError",
          code: "RUNTIME_UNSUPPORTED",
          feature: "tls-exporter",
          runtime: `Deno ${(TOOLCHAIN_VERSIONS as Record<string, string>).deno}`,
        });
        // At once: nothing was sent (no KE1: an exchange left unfinished would count against
        // the code), and nothing keeps the process alive.
        expect(pakes()).toBe(pakesBefore);
        expect(check.ms).toBeLessThan(20_000);
        expect(register.code, register.output).toBe(17);
        expect(document(register.output)).toMatchObject({ error: { code: "RUNTIME_UNSUPPORTED" } });
        // The calls after a registration need no exporter: a machine registered by Node reads its status.
        const node = await runToEnd(
          process.execPath,
          [cli(), "register", "--identity", identity, "--release", "0.6.0"],
          {
            cwd: project,
            env: { STRATUM_JOIN_URL: url },
          },
        );
        expect(node.code, node.output).toBe(0);
      }
      const status = await on(runtime, cli(), ["status", "--identity", identity, "--json"]);
      expect(status.code, status.output).toBe(0);
      expect(document(status.output)).toMatchObject({ state: "pending" });
    },
    120_000,
  );
});
