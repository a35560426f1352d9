// The test machine's setup (scripts/test-machine.mjs), which `npm test` and .ci/run run first:
// every package the tests need is on its list with what proves it is there; as root a missing
// one is installed with apt-get (lists updated first, no recommends, no service started);
// without root one line says what to install, and the run stops.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  aptInstall,
  proven,
  REQUIREMENTS,
  setUpTestMachine,
  type Proof,
  type Requirement,
} from "../../scripts/test-machine.mjs";

const dir = mkdtempSync(join(tmpdir(), "stratum-test-machine-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const here: Requirement = { package: "here-pkg", proof: { path: process.execPath }, neededBy: "a test that is here" };
const gone: Requirement = { package: "gone-pkg", proof: { path: join(dir, "nothing") }, neededBy: "a test of X" };
const goneToo: Requirement = { package: "gone-pkg", proof: { command: "gone-tool" }, neededBy: "a test of Y" };

/** setUpTestMachine with a fake list and what it printed and installed. */
function setUp(requirements: Requirement[], isRoot: boolean, installed: (proof: Proof) => boolean = proven) {
  const out: string[] = [];
  const errors: string[] = [];
  const installs: string[][] = [];
  const status = setUpTestMachine({
    requirements,
    isRoot,
    isProven: installed,
    installPackages: (packages) => installs.push(packages),
    log: (line) => out.push(line),
    error: (line) => errors.push(line),
  });
  return { status, out, errors, installs };
}

describe("the test machine's setup", () => {
  it("all there: prints nothing, installs nothing, exits 0", () => {
    expect(setUp([here], true)).toEqual({ status: 0, out: [], errors: [], installs: [] });
  });

  it("not root: one line naming each missing package once and the command, then the table; exit 1", () => {
    const { status, errors, installs } = setUp([here, gone, goneToo], false);
    expect(status).toBe(1);
    expect(installs).toEqual([]);
    expect(errors[0]).toBe(
      "test machine: missing Debian packages gone-pkg: install them as root with " +
        "`apt-get update && apt-get install -y --no-install-recommends gone-pkg` (or run `npm test` as root), then run again",
    );
    // the table: package, what proves it, what needs it; the one that is there is not listed
    expect(errors[1]).toContain(`gone-pkg  ${join(dir, "nothing")}`);
    expect(errors[1]).toContain("a test of X");
    expect(errors[1]).toContain("gone-tool on the PATH");
    expect(errors[1]).toContain("a test of Y");
    expect(errors.join("\n")).not.toContain("here-pkg");
  });

  it("root: installs what is missing, each package once, and checks again", () => {
    let installed = false;
    const after = (proof: Proof) => (proof === here.proof ? true : installed);
    const outcome = setUpTestMachine({
      requirements: [here, gone, goneToo],
      isRoot: true,
      isProven: after,
      installPackages: (packages) => {
        expect(packages).toEqual(["gone-pkg"]);
        installed = true;
      },
      log: () => undefined,
      error: () => undefined,
    });
    expect(outcome).toBe(0);
    expect(installed).toBe(true);
  });

  it("root: a package still missing after the install fails the run, naming it", () => {
    const { status, installs, errors } = setUp([gone], true);
    expect(installs).toEqual([["gone-pkg"]]);
    expect(status).toBe(1);
    expect(errors.join("\n")).toMatch(/still missing after apt-get install:\n {2}gone-pkg/);
  });

  it("apt-get: lists updated first, noninteractive, no recommends, and no service started meanwhile", () => {
    const policy = join(dir, "policy-rc.d");
    const calls: { command: string; args: string[]; frontend?: string; policyExit: number | null }[] = [];
    aptInstall(
      ["tinyproxy", "nginx-light"],
      (command, args, env) =>
        calls.push({
          command,
          args,
          frontend: env.DEBIAN_FRONTEND,
          policyExit: spawnSync("sh", [policy, "nginx", "start"]).status,
        }),
      policy,
    );
    expect(calls).toEqual([
      { command: "apt-get", args: ["update", "-qq"], frontend: "noninteractive", policyExit: 101 },
      {
        command: "apt-get",
        args: ["install", "-y", "-qq", "--no-install-recommends", "tinyproxy", "nginx-light"],
        frontend: "noninteractive",
        policyExit: 101,
      },
    ]);
    // The policy was the setup's own: gone after the install.
    expect(existsSync(policy)).toBe(false);
  });

  it("apt-get: a machine's own policy-rc.d is left as it was", () => {
    const policy = join(dir, "own-policy-rc.d");
    writeFileSync(policy, "#!/bin/sh\nexit 0\n");
    aptInstall(["jq"], () => undefined, policy);
    expect(existsSync(policy)).toBe(true);
  });

  it("tells a path, a program on the PATH and a multiarch library apart", () => {
    const bin = join(dir, "bin");
    execFileSync("mkdir", ["-p", bin]);
    writeFileSync(join(bin, "a-tool"), "#!/bin/sh\n");
    chmodSync(join(bin, "a-tool"), 0o755);
    expect(proven({ path: process.execPath })).toBe(true);
    expect(proven({ path: join(dir, "no-such-file") })).toBe(false);
    expect(proven({ command: "a-tool" }, { PATH: bin })).toBe(true);
    expect(proven({ command: "a-tool" }, { PATH: dir })).toBe(false);
    expect(proven({ library: "libc.so.6" })).toBe(true);
    expect(proven({ library: "libno-such-thing.so.0" })).toBe(false);
  });

  it("this machine has every package on the list (npm test checked it before the tests)", () => {
    const missing = REQUIREMENTS.filter((r) => !proven(r.proof));
    expect(missing.map((r) => r.package)).toEqual([]);
    // Each entry names its package, its proof and what needs it.
    for (const r of REQUIREMENTS) {
      expect(r.package).toMatch(/^[a-z0-9][a-z0-9.+-]+$/);
      expect(r.neededBy.length).toBeGreaterThan(0);
    }
  });
});
