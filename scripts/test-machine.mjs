#!/usr/bin/env node
// What the tests need of the machine beyond `npm ci`: Debian packages, each with the file that
// proves it is installed and what needs it. `npm test` runs this first, and so does .ci/run.
// All there: it prints nothing and exits 0. Something missing, as root: `apt-get update` and
// `apt-get install` of what is missing, services kept from starting. Not root: one line naming
// the packages and the command that installs them, the table of what is missing, exit 1. A
// test whose tool is missing fails; none skips.
//
// Usage: node scripts/test-machine.mjs [--check]   (--check: never install, only report)
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * One Debian package the tests need. `proof` is how to tell it is installed: `{ path }` an
 * absolute path, `{ command }` a program on the PATH (or in /usr/sbin, /sbin), `{ library }` a
 * shared library in a multiarch directory (/usr/lib/<triplet>/). `neededBy` says what uses it.
 * Add a line here for a new tool a test runs; the tests name the same paths.
 */
export const REQUIREMENTS = [
  {
    package: "chromium",
    proof: { path: "/usr/bin/chromium" },
    neededBy: "the console's browser tests (test/console/*.e2e.test.ts)",
  },
  {
    package: "firefox-esr",
    proof: { path: "/usr/bin/firefox-esr" },
    neededBy: "the console's browser tests in Firefox",
  },
  {
    package: "nginx-light",
    proof: { path: "/usr/sbin/nginx" },
    neededBy: "the release mirror (npm run bench:release)",
  },
  {
    package: "tinyproxy",
    proof: { path: "/usr/bin/tinyproxy" },
    neededBy: "downloads through an HTTP proxy (test/release/proxy.test.ts)",
  },
  {
    package: "faketime",
    proof: { path: "/usr/bin/faketime" },
    neededBy: "a joiner with a wrong clock (test/cli/clock-skew.test.ts)",
  },
  { package: "jq", proof: { command: "jq" }, neededBy: "the README's scripts flow (test/cli/scripts.test.ts)" },
  { package: "bsdutils", proof: { command: "script" }, neededBy: "a terminal for the CLI (test/cli/terminal.test.ts)" },
  {
    package: "iproute2",
    proof: { command: "ip" },
    neededBy: "the inventory's interface list (test/node/inventory/collect.test.ts)",
  },
  { package: "swtpm", proof: { command: "swtpm" }, neededBy: "a software TPM for the secrets at rest" },
  { package: "swtpm-tools", proof: { command: "swtpm_setup" }, neededBy: "a software TPM for the secrets at rest" },
  { package: "tpm2-tools", proof: { command: "tpm2_startup" }, neededBy: "a software TPM for the secrets at rest" },
  {
    package: "libtss2-tcti-swtpm0",
    proof: { library: "libtss2-tcti-swtpm.so.0" },
    neededBy: "tpm2-tools talking to swtpm",
  },
  { package: "sslscan", proof: { command: "sslscan" }, neededBy: "the admin API's TLS check" },
  { package: "testssl.sh", proof: { command: "testssl" }, neededBy: "the admin API's TLS check" },
];

const SBIN = ["/usr/sbin", "/sbin"];

/** True when `proof` holds on this machine. */
export function proven(proof, env = process.env) {
  if (proof.path) return existsSync(proof.path);
  if (proof.command) {
    const dirs = [...(env.PATH ?? "").split(delimiter).filter(Boolean), ...SBIN];
    return dirs.some((dir) => existsSync(join(dir, proof.command)));
  }
  if (proof.library) {
    for (const base of ["/usr/lib", "/lib"]) {
      if (existsSync(join(base, proof.library))) return true;
      let entries;
      try {
        entries = readdirSync(base, { withFileTypes: true });
      } catch {
        continue;
      }
      if (entries.some((e) => e.isDirectory() && existsSync(join(base, e.name, proof.library)))) return true;
    }
    return false;
  }
  throw new Error(`a requirement's proof names no path, command or library: ${JSON.stringify(proof)}`);
}

/** The requirements whose proof does not hold. */
export function missingRequirements(requirements = REQUIREMENTS, isProven = proven) {
  return requirements.filter((r) => !isProven(r.proof));
}

/** How a proof reads in the table. */
function describeProof(proof) {
  return proof.path ?? (proof.command ? `${proof.command} on the PATH` : `${proof.library} in /usr/lib/*/`);
}

/** The table of `requirements`: package, the proof, what needs it. */
export function table(requirements) {
  const rows = requirements.map((r) => [r.package, describeProof(r.proof), r.neededBy]);
  const widths = [0, 1].map((i) => Math.max(...rows.map((row) => row[i].length)));
  return rows.map((row) => `  ${row[0].padEnd(widths[0])}  ${row[1].padEnd(widths[1])}  ${row[2]}`).join("\n");
}

/** The one line a user without root is told: what is missing and the command that installs it. */
export function installLine(missing) {
  const names = [...new Set(missing.map((r) => r.package))];
  return `test machine: missing Debian packages ${names.join(", ")}: install them as root with \`apt-get update && apt-get install -y --no-install-recommends ${names.join(" ")}\` (or run \`npm test\` as root), then run again`;
}

// Debian's packages of services (nginx-light, tinyproxy) start them on install through
// invoke-rc.d unless /usr/sbin/policy-rc.d says no (exit 101): a daemon left holding port 80
// or 8888 is not the tests' business. An existing policy is left as it is.
const POLICY_RC_D = "/usr/sbin/policy-rc.d";

/** Runs a command with its output shown; throws naming it when it fails. */
function run(command, args, env) {
  const result = spawnSync(command, args, { stdio: "inherit", env });
  if (result.error) throw new Error(`${command} could not run: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`\`${command} ${args.join(" ")}\` failed (exit ${result.status})`);
}

/** apt-get update, then install `packages` without recommends, noninteractive, no service started. */
export function aptInstall(packages, runCommand = run, policy = POLICY_RC_D) {
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const policyAdded = !existsSync(policy);
  if (policyAdded)
    writeFileSync(policy, "#!/bin/sh\n# no service starts while the test setup installs\nexit 101\n", { mode: 0o755 });
  try {
    // The package lists may be empty on a fresh machine, or old: always update first.
    runCommand("apt-get", ["update", "-qq"], env);
    runCommand("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...packages], env);
  } finally {
    if (policyAdded) rmSync(policy, { force: true });
  }
}

/**
 * Checks the machine and installs what is missing when it may. Returns the exit status.
 * @param {{ requirements?: typeof REQUIREMENTS, isRoot?: boolean, install?: boolean,
 *   isProven?: typeof proven, installPackages?: (packages: string[]) => void,
 *   log?: (line: string) => void, error?: (line: string) => void }} options
 */
export function setUpTestMachine(options = {}) {
  const {
    requirements = REQUIREMENTS,
    isRoot = process.getuid?.() === 0,
    install = true,
    isProven = proven,
    installPackages = (packages) => aptInstall(packages),
    log = (line) => console.log(line),
    error = (line) => console.error(line),
  } = options;
  const missing = missingRequirements(requirements, isProven);
  if (missing.length === 0) return 0;
  if (!isRoot || !install) {
    error(installLine(missing));
    error(`what is missing (package, what proves it is there, what needs it):\n${table(missing)}`);
    return 1;
  }
  const names = [...new Set(missing.map((r) => r.package))];
  log(`test machine: installing ${names.join(" ")} (apt-get, as root)`);
  installPackages(names);
  const still = missingRequirements(requirements, isProven);
  if (still.length > 0) {
    error(`test machine: still missing after apt-get install:\n${table(still)}`);
    return 1;
  }
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    process.exitCode = setUpTestMachine({ install: !process.argv.includes("--check") });
  } catch (e) {
    console.error(`test machine: ${e instanceof Error ? e.message : String(e)}`);
    process.exitCode = 1;
  }
}
