// What a joined machine keeps, end to end with the CLI: each `stratum-join` a process of the
// real entry, against a reference server and a software TPM. Without --secrets a delivery is
// refused before anything is written (exit 13, the fields and the flag named); with it each
// secret goes to the seed's home; after `joined` every file under the run's directories is
// searched for each secret's bytes; `stratum-join unseal` prints the unseal key on this TPM
// and fails on another.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { demoInventory } from "../helpers/inventory.js";
import { type TestServer } from "../helpers/reference-server.js";
import {
  expectEachSecretAtHome,
  filesUnder,
  JOINED_MACHINE_FILES,
  secretsOf,
  seedHomeFiles,
  startUnsealingHarness,
  writeSecretsFile,
} from "../node/machine-secrets.js";
import { startSwtpm, type Swtpm } from "../node/swtpm.js";
import { getRegistration, openMachineDirectory } from "../../src/node/index.js";
import { buildCli, inPipe, killAll, removeCli } from "./process.js";
import { writeFileSync } from "node:fs";

let h: TestServer;
let tpm: Swtpm;
let otherTpm: Swtpm;
let cli: string;
let run: string;

beforeAll(async () => {
  [h, tpm, otherTpm, cli] = await Promise.all([
    startUnsealingHarness({ timing: { tickMs: 100 } }),
    startSwtpm(),
    startSwtpm(),
    buildCli(),
  ]);
  run = mkdtempSync(join(tmpdir(), "stratum-cli-keeps-"));
}, 60_000);
afterEach(killAll);
afterAll(async () => {
  await Promise.all([h?.dispose(), tpm?.stop(), otherTpm?.stop()]);
  if (cli) removeCli(cli);
  rmSync(run, { recursive: true, force: true });
});

/** `stratum-join args…` as a process; its exit code and output. */
async function stratumJoin(args: string[], env: Record<string, string> = {}) {
  const proc = inPipe(cli, args, env);
  const code = await proc.exited;
  return { code, out: proc.out(), err: proc.err(), json: args.includes("--json") ? JSON.parse(proc.out()) : undefined };
}

describe("what a joined machine keeps (CLI)", () => {
  it("refuses a delivery without --secrets, then puts each secret in its home; only the node key stays in the machine directory", async () => {
    const dir = join(run, "machine");
    const homes = join(run, "homes");
    const inventory = join(run, "inventory.json");
    writeFileSync(inventory, JSON.stringify(demoInventory));
    const { url } = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    const env = { STRATUM_JOIN_URL: url, TPM2TOOLS_TCTI: tpm.tcti };
    const registered = await stratumJoin(
      ["register", "--identity", dir, "--release", "0.6.0", "--inventory", inventory, "--json"],
      env,
    );
    expect(registered.code, registered.err).toBe(0);
    await h.admin.approveNodeJoin(registered.json.joinId);

    // No --secrets: refused when the delivery comes, before anything of it is written.
    const refused = await stratumJoin(
      ["register", "--identity", dir, "--release", "0.6.0", "--inventory", inventory, "--wait", "delivering", "--json"],
      env,
    );
    expect(refused.code, refused.err).toBe(13);
    expect(refused.json.error).toMatchObject({
      code: "SECRET_DESTINATION_MISSING",
      exitCode: 13,
      fields: [
        "adminPassword",
        "dnsEncryptionKey",
        "openBaoNodeToken",
        "openBaoToken",
        "openBaoUnsealKey",
        "postgresPassword",
      ],
    });
    expect(refused.json.error.message).toContain("--secrets FILE");
    expect(readdirSync(dir).sort()).toEqual(["cert.pem", "key.pem", "session.json"]);

    // The same delivery, written with the seed's homes.
    const secretsFile = writeSecretsFile(homes);
    const written = await stratumJoin(
      ["status", "--identity", dir, "--write-delivery", "--secrets", secretsFile, "--json"],
      env,
    );
    expect(written.code, written.err).toBe(0);
    expect(written.json.delivery.secrets.openBaoUnsealKey).toEqual([
      { kind: "tpm", path: join(homes, "var", "openbao-unseal.sealed") },
    ]);
    const machine = await openMachineDirectory(dir);
    const delivery = (await getRegistration(await machine.readSession(), machine.identity)).delivery!;
    const secrets = secretsOf(delivery);
    expect(secrets.openBaoUnsealKey).toBeTruthy();
    // Printed nowhere: not by the refusal, not by the write.
    const printed = [refused, written].map((r) => r.out + r.err).join("\n");
    for (const [name, value] of Object.entries(secrets)) expect(printed, name).not.toContain(value);

    const joined = await stratumJoin(
      ["progress", "--identity", dir, "--step", "join", "--status", "done", "--json"],
      env,
    );
    expect(joined.json.state).toBe("joined");

    // After joined: each secret's bytes only at its destination.
    expectEachSecretAtHome(secrets, seedHomeFiles(homes, join(dir, "delivery")), run);
    expect(filesUnder(dir).map((f) => f.slice(dir.length + 1))).toEqual(JOINED_MACHINE_FILES);

    // The boot-time unseal: the key on stdout on this TPM, a refusal on another.
    const sealed = join(homes, "var", "openbao-unseal.sealed");
    const unsealed = await stratumJoin(["unseal", sealed], { TPM2TOOLS_TCTI: tpm.tcti });
    expect(unsealed.code, unsealed.err).toBe(0);
    expect(unsealed.out).toBe(`${delivery.bundle.openBaoUnsealKey}\n`);
    expect(unsealed.err).toBe("");
    const foreign = await stratumJoin(["unseal", sealed, "--json"], { TPM2TOOLS_TCTI: otherTpm.tcti });
    expect(foreign.code).toBe(15);
    expect(foreign.json.error).toMatchObject({ code: "TPM_FAILED", reason: "foreign" });
    expect(foreign.out + foreign.err).not.toContain(delivery.bundle.openBaoUnsealKey);
  }, 180_000);

  it("a --secrets file that cannot work is refused before the network is touched", async () => {
    const bad = join(run, "bad-secrets.json");
    writeFileSync(bad, JSON.stringify({ openBaoUnsealKey: { file: "/etc/stratum/unseal.key" } }));
    const requests = h.logs.length;
    const refused = await stratumJoin(
      ["register", "--identity", join(run, "bad"), "--release", "0.6.0", "--no-inventory", "--secrets", bad, "--json"],
      { STRATUM_JOIN_URL: (await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint })).url },
    );
    expect(refused.code).toBe(13);
    expect(refused.json.error).toMatchObject({ code: "SECRET_DESTINATION_INVALID", fields: ["openBaoUnsealKey"] });
    expect(refused.json.error.message).toMatch(/never written in plaintext/);
    expect(h.logs.slice(requests).filter((line) => line.includes("/v1/join/"))).toEqual([]);
  });
});
