// `npm run demo` is the README's first command: it must reach `joined` and exit 0, with a
// software TPM where swtpm is installed and, on a fresh machine without one, with the plaintext
// fallback it asks for by name.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

function demo(env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, ["--import", "tsx", "examples/demo/main.ts"], {
    encoding: "utf8",
    timeout: 180_000,
    env,
  });
}

describe("npm run demo", () => {
  it("joins one machine end to end (upgrade, approval, delivery, joined) and exits 0", () => {
    const run = demo();
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/state needs-upgrade/);
    expect(run.stdout).toMatch(/downloaded from the founder and verified/);
    expect(run.stdout).toMatch(/registered again on 0\.6\.0: state pending/);
    expect(run.stdout).toMatch(/is joined; members:/);
    // The pairing code shows on both sides, and they agree.
    const codes = [...run.stdout.matchAll(/console ([0-9A-Z]{3}-[0-9A-Z]{3}) = machine ([0-9A-Z]{3}-[0-9A-Z]{3})/g)];
    expect(codes).toHaveLength(1);
    expect(codes[0]![1]).toBe(codes[0]![2]);
    // Each secret in its home; this machine has swtpm (the test setup installs it): the key sealed.
    expect(run.stdout).toMatch(/openBaoUnsealKey → tpm /);
    expect(run.stdout).toMatch(
      /sealed to the demo's software TPM \(swtpm\): unsealed again, it matches; not in the sealed file/,
    );
    expect(run.stdout).toMatch(/postgresPassword → command .* \(stdin\)/);
  }, 200_000);

  it("on a machine without swtpm and tpm2-tools (a fresh checkout), joins with the plaintext fallback it names", () => {
    // Every program of this machine but swtpm's and tpm2-tools'.
    const bin = mkdtempSync(join(tmpdir(), "stratum-demo-bin-"));
    try {
      for (const dir of ["/usr/bin", "/usr/sbin", "/usr/local/bin"]) {
        let names: string[] = [];
        try {
          names = readdirSync(dir);
        } catch {
          continue;
        }
        for (const name of names)
          if (!/^(swtpm|tpm2)/.test(name)) {
            try {
              symlinkSync(join(dir, name), join(bin, name));
            } catch {
              // the same name in an earlier directory wins, as on a PATH
            }
          }
      }
      const { TPM2TOOLS_TCTI: _tcti, ...env } = process.env;
      const run = demo({ ...env, PATH: bin });
      expect(run.stderr).toBe("");
      expect(run.status, run.stdout).toBe(0);
      expect(run.stdout).toMatch(/openBaoUnsealKey is NOT sealed: .*plaintext/);
      expect(run.stdout).toMatch(/openBaoUnsealKey → plaintext /);
      expect(run.stdout).toMatch(/withoutTpm: "plaintext"/);
      expect(run.stdout).toMatch(/is joined; members:/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  }, 200_000);
});
