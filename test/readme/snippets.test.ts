// The README's TypeScript snippets, as a user gets them. Every ts/js block of README.md is
// type-checked in a fresh project with the packed package installed (strict, module nodenext),
// and the installer's two stages, the console, the testing example and the script run as they
// are written, each in a process of its own, against a live reference server. Only the lines a
// snippet marks `// yours:` are the test's: it supplies those names (./supplied/, and the
// constants below) and fails when a snippet names one it does not supply. A README edited into
// a snippet that does not compile, or does not do what the README says, fails here.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";
import { createMachineIdentity, registerMachine, unsealSecret } from "../../src/node/index.js";
import { generateReleaseKeyPair } from "../../src/release/keys.js";
import { signReleaseDirectory } from "../../src/release/manifest.js";
import { demoInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { fakePodman, startUnsealingHarness, whereSecretsAre } from "../node/machine-secrets.js";
import { startSwtpm, type Swtpm } from "../node/swtpm.js";
import { supplyConstants, yoursLines } from "./markdown.js";
import {
  atReadmeLines,
  exportsOf,
  FRAGMENT_CONTEXT_FILE,
  readmeSnippets,
  RUN,
  SUPPLIED_MODULES,
  writeSnippets,
  type Role,
} from "./readme-snippets.js";
import { runToEnd, startSnippet, tsc } from "./processes.js";

const readme = readFileSync(join(fileURLToPath(new URL("../../", import.meta.url)), "README.md"), "utf8");
const snippets = () => readmeSnippets(readme);

/** The `const NAME = …; // yours:` constants this test supplies, per snippet. */
const SUPPLIED_CONSTANTS: Partial<Record<Role, readonly string[]>> = {
  "stage-1": ["MACHINE_DIR", "RELEASE_KEY_FILE", "INSTALLED_RELEASE"],
  "stage-2": ["MACHINE_DIR", "ETC"],
  console: ["API_URL"],
};

let project: string;
let work: string;
beforeAll(async () => {
  project = ((await packedProject()) as { dir: string }).dir;
  work = join(project, `readme-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work);
  writeSnippets(work, snippets());
}, 600_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the README's snippets", () => {
  it("are where this test expects them: one of each it runs", () => {
    const all = snippets();
    for (const role of Object.keys(RUN) as Role[]) {
      expect(all.filter((s) => s.role === role).length, `${RUN[role].where}`).toBe(1);
    }
    expect(all.length).toBeGreaterThanOrEqual(Object.keys(RUN).length);
  });

  it("name as the reader's own (// yours:) only what this test supplies", () => {
    const problems: string[] = [];
    for (const snippet of snippets()) {
      const at = (line: number) => `README.md:${snippet.line + line - 1}`;
      for (const yours of yoursLines(snippet.code)) {
        if (yours.kind === "unrecognised") {
          problems.push(`${at(yours.line)}: a // yours: line that is neither an import nor a const: ${yours.text}`);
        } else if (yours.kind === "import") {
          const file = SUPPLIED_MODULES[yours.from];
          const offered = file ? exportsOf(file) : [];
          for (const name of yours.names) {
            if (!offered.includes(name))
              problems.push(`${at(yours.line)}: ${name} from ${yours.from} is not supplied by test/readme/supplied/`);
          }
        } else if (snippet.role && !SUPPLIED_CONSTANTS[snippet.role]?.includes(yours.name)) {
          problems.push(`${at(yours.line)}: the test supplies no value for ${yours.name}`);
        }
      }
      // Every relative import of a snippet is the reader's own, and says so.
      for (const match of snippet.code.matchAll(/from\s+"(\.[^"]+)";(.*)$/gm)) {
        if (!match[2]!.includes("// yours:"))
          problems.push(
            `${at(snippet.code.slice(0, match.index).split("\n").length)}: ${match[1]} is not marked // yours:`,
          );
      }
    }
    expect(problems).toEqual([]);
  });

  it("type-check in a fresh project with the packed package (strict, module nodenext)", async () => {
    const all = snippets();
    const options = {
      strict: true,
      module: "nodenext",
      moduleResolution: "nodenext",
      target: "es2022",
      noEmit: true,
      allowJs: true,
      checkJs: true,
    };
    const config = (name: string, files: string[]) =>
      writeFileSync(join(work, name), `${JSON.stringify({ compilerOptions: options, files }, null, 2)}\n`);
    config("tsconfig.json", [...all.filter((s) => s.role).map((s) => s.file), ...Object.values(SUPPLIED_MODULES)]);
    config("tsconfig.fragments.json", [...all.filter((s) => !s.role).map((s) => s.file), FRAGMENT_CONTEXT_FILE]);
    const results = await Promise.all([
      tsc(project, work, "tsconfig.json"),
      tsc(project, work, "tsconfig.fragments.json"),
    ]);
    const errors = atReadmeLines(results.map((r) => r.output).join("\n"), all);
    expect(errors).toEqual([]);
    expect(results.map((r) => r.code)).toEqual([0, 0]);
  }, 300_000);
});

describe("the README's snippets against a reference server", () => {
  let h: TestServer;
  let tpm: Swtpm;
  let releases: string;
  let releaseKeyFile: string;
  beforeAll(async () => {
    // The cluster runs 0.6.0 and serves it; the installer is 0.5.0, so it upgrades itself.
    releases = mkdtempSync(join(tmpdir(), "stratum-readme-releases-"));
    const dir = join(releases, "0.6.0");
    mkdirSync(join(dir, "os", "blobs"), { recursive: true });
    mkdirSync(join(dir, "sysext"), { recursive: true });
    writeFileSync(join(dir, "os", "blobs", "rootfs.img"), Buffer.alloc(600_000, 7));
    writeFileSync(join(dir, "sysext", "agent.raw"), "agent\n");
    const key = generateReleaseKeyPair();
    await signReleaseDirectory(dir, { release: "0.6.0", keys: [key.privateKeyPem] });
    releaseKeyFile = join(releases, "release-key.pem");
    writeFileSync(releaseKeyFile, key.publicKeyPem);
    [h, tpm] = await Promise.all([
      startUnsealingHarness({ releaseDir: releases, clusterRelease: "0.6.0", timing: { tickMs: 100 } }),
      startSwtpm(),
    ]);
  });
  afterAll(async () => {
    await Promise.all([h?.dispose(), tpm?.stop()]);
    rmSync(releases, { recursive: true, force: true });
  });

  /** A snippet's file with the test's values in its `// yours:` constants. */
  function runnable(role: Role, values: Record<string, string>): string {
    const snippet = snippets().find((s) => s.role === role)!;
    const file = `run-${RUN[role].file}`;
    writeFileSync(join(work, file), supplyConstants(snippet.code, values));
    return file;
  }

  it("installer stage 1 then stage 2, two processes: from a join URL to joined, stopping and resuming the wait", async () => {
    const machineDir = join(work, "machine");
    const { url } = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    const stage1 = startSnippet(
      runnable("stage-1", {
        MACHINE_DIR: JSON.stringify(machineDir),
        RELEASE_KEY_FILE: JSON.stringify(releaseKeyFile),
        INSTALLED_RELEASE: JSON.stringify("0.5.0"),
      }),
      { cwd: work, env: { STRATUM_JOIN_URL: url } },
    );
    expect(await stage1.exited(), stage1.stderr()).toBe(0);
    const pairingCode = (await stage1.waitFor(/^PAIRING /)).slice("PAIRING ".length);
    expect(stage1.lines[0]).toMatch(/^cluster release 0\.6\.0; the code is valid until \S+$/);
    expect(stage1.lines.some((l) => /^release 0\.6\.0: \d+ of \d+ bytes$/.test(l))).toBe(true);
    expect(stage1.lines.at(-1)).toMatch(/^pending: reboot into the installed system/);
    // What stage 1 left in the machine directory.
    const mode = (name: string) => statSync(join(machineDir, name)).mode & 0o777;
    expect([mode("."), mode("key.pem"), mode("cert.pem"), mode("session.json")]).toEqual([0o700, 0o600, 0o644, 0o644]);
    expect(statSync(join(machineDir, "release", "0.6.0", "payload", "manifest.json")).isFile()).toBe(true);
    const session = JSON.parse(readFileSync(join(machineDir, "session.json"), "utf8")) as { joinId: string };
    expect(await h.admin.getNodeJoin(session.joinId)).toMatchObject({
      state: "pending",
      pairingCode,
      release: "0.6.0",
    });

    // Stage 2 waits; SIGTERM stops the wait cleanly (exit 130), and a new process picks it up.
    // Its system: /etc/stratum in the test's directory, this test's TPM, podman's stand-in.
    const etc = join(work, "etc-stratum");
    const bin = join(work, "bin");
    mkdirSync(bin, { recursive: true });
    fakePodman(join(bin, "podman"), join(work, "podman-secrets"));
    const values = { MACHINE_DIR: JSON.stringify(machineDir), ETC: JSON.stringify(etc) };
    const system = { TPM2TOOLS_TCTI: tpm.tcti, PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}` };
    const stopped = startSnippet(runnable("stage-2", values), { cwd: work, env: system });
    await stopped.waitFor(/^state pending$/);
    stopped.child.kill("SIGTERM");
    expect(await stopped.exited(), stopped.stderr()).toBe(130);
    const stage2 = startSnippet(runnable("stage-2", values), { cwd: work, env: system });
    await stage2.waitFor(/^state pending$/);
    await h.admin.approveNodeJoin(session.joinId);
    expect(await stage2.exited(), stage2.stderr()).toBe(0);
    expect(stage2.lines).toContain("state delivering");
    expect(stage2.lines.at(-1)).toBe("Joining the cluster: done; the join is joined");
    expect(statSync(join(machineDir, "delivery", "node.yaml")).mode & 0o777).toBe(0o600);
    const joined = await h.admin.getNodeJoin(session.joinId);
    expect(joined.state).toBe("joined");
    expect(joined.logTail).toContain(`storage: installed with ${join(machineDir, "delivery", "node.yaml")}`);
    // Each of the cluster's secrets in its home, the unseal key sealed to this TPM, and none in
    // the machine directory.
    const cluster = h.server.cluster.secrets;
    expect(readFileSync(join(etc, "controlplane.env"), "utf8")).toBe(
      `STRATUM_IAM_ADMIN_PASSWORD=${cluster.adminPassword}\nSTRATUM_OPENBAO_TOKEN=${cluster.openBaoToken}\n`,
    );
    expect(readFileSync(join(etc, "axdnsd.env"), "utf8")).toBe(`ENCRYPTION_KEY=${cluster.dnsEncryptionKey}\n`);
    expect(readFileSync(join(work, "podman-secrets", "stratum-postgres"), "utf8")).toBe(cluster.postgresPassword);
    const sealed = join(machineDir, "openbao-unseal.sealed");
    expect((await unsealSecret(sealed, { tcti: tpm.tcti })).value).toBe(cluster.openBaoUnsealKey);
    const found = whereSecretsAre({ ...cluster }, machineDir, etc);
    expect(found.openBaoUnsealKey).toEqual([]);
    expect(found.adminPassword).toEqual([join(etc, "bootstrap-credentials.txt"), join(etc, "controlplane.env")]);
    expect(found.postgresPassword).toEqual([]);
  }, 400_000);

  it("the console: mints, shows the machine arriving, marks a refused field, approves, and ends its watch when the page goes", async () => {
    const page = startSnippet(runnable("console", { API_URL: JSON.stringify(h.server.adminUrl) }), {
      cwd: work,
      env: { README_ADMIN_TOKEN: h.server.adminToken },
    });
    // The page going away must end the watch and, with it, the process.
    expect(await page.exited(), page.stderr()).toBe(0);
    const lines = page.lines;
    expect(lines).not.toContainEqual(expect.stringMatching(/^ERROR|failed/));
    const pairingCode = lines
      .find((l) => l.startsWith("machine registered"))
      ?.split(" ")
      .at(-1);
    expect(lines).toContain("qr shown");
    expect(lines).toContain(`added console-node pending ${pairingCode}`);
    expect(lines).toContainEqual(expect.stringMatching(/^field disks\[0\]\.key: /));
    expect(lines).toContainEqual(expect.stringMatching(/^changed console-node (approved|delivering)$/));
    // The page's lines end with its going away; the machine's own line comes from a task of
    // its own, before or after, as the machine's speed has it.
    expect(lines.filter((l) => !l.startsWith("machine registered")).at(-1)).toBe("page hidden");
    const joins = (await h.admin.listNodeJoins()).items.filter((j) => j.hostname === "console-node");
    expect(joins).toHaveLength(1);
    expect(joins[0]!.state).not.toBe("pending");
  }, 300_000);

  it("the testing example passes under vitest in the fresh project", async () => {
    const vitest = join(project, "node_modules", "vitest", "vitest.mjs");
    const run = await runToEnd(process.execPath, [vitest, "run", RUN.testing.file], {
      cwd: work,
      env: { NO_COLOR: "1" },
    });
    expect(run.output).toMatch(/Tests\s+2 passed/);
    expect(run.code, run.output).toBe(0);
  }, 300_000);

  it("the script approves the waiting machines whose pairing codes were confirmed, and only those", async () => {
    // A cluster of its own: the machines of this file register from one address, which the
    // default approval gives the first machine approved.
    const own = await startTestServer({ timing: { tickMs: 100 } });
    try {
      await approveConfirmed(own);
    } finally {
      await own.dispose();
    }
  }, 300_000);

  async function approveConfirmed(h: TestServer): Promise<void> {
    const { url } = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    const register = async (hostname: string) =>
      (
        await registerMachine({
          url,
          identity: await createMachineIdentity(),
          release: "0.6.0",
          hostname,
          inventory: demoInventory,
        })
      ).registration;
    const confirmed = await register("script-node");
    const unconfirmed = await register("script-other");
    const script = startSnippet(join(work, RUN.script.file), {
      cwd: work,
      env: { STRATUM_API: h.server.adminUrl, STRATUM_TOKEN: h.server.adminToken },
      args: [confirmed.pairingCode, "ZZZ-ZZZ"],
    });
    expect(await script.exited(), script.stderr()).toBe(0);
    expect(script.lines.filter(Boolean)).toEqual([expect.stringMatching(/^script-node: approved as \S+$/)]);
    expect((await h.admin.getNodeJoin(unconfirmed.joinId)).state).toBe("pending");
  }
});
