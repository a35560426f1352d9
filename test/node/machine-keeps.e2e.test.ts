// What a joined machine keeps, end to end with the library: a machine joins a reference
// cluster, its delivery's secrets go to the seed's homes (env lines, files, podman's stdin, the
// TPM), and after `joined` every file under the run's directories is searched for each
// secret's bytes: each is only at its destination, the unseal key nowhere in plaintext, the
// sealed file unseals to it on this TPM and not on another. Then the same delivery is written
// by a process killed at each step, and the disk is searched after every kill.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  openMachineDirectory,
  registerMachine,
  reportProgress,
  SecretDestinationError,
  TpmError,
  unsealSecret,
  waitForRegistration,
  writeDelivery,
  type MachineDirectory,
} from "../../src/node/index.js";
import type { Delivery } from "../../src/types.js";
import { demoInventory } from "../helpers/inventory.js";
import { type TestServer } from "../helpers/reference-server.js";
import {
  expectEachSecretAtHome,
  filesUnder,
  JOINED_MACHINE_FILES,
  secretsOf,
  seedHomeFiles,
  seedHomesIn,
  startUnsealingHarness,
  whereSecretsAre,
} from "./machine-secrets.js";
import { startSwtpm, type Swtpm } from "./swtpm.js";

let h: TestServer;
let tpm: Swtpm;
let otherTpm: Swtpm;
let url: string;
let work: string;
let machines = 0;

beforeAll(async () => {
  [h, tpm, otherTpm] = await Promise.all([startUnsealingHarness(), startSwtpm(), startSwtpm()]);
  url = (await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint })).url;
  work = mkdtempSync(join(tmpdir(), "stratum-machine-keeps-"));
}, 60_000);
afterAll(async () => {
  await Promise.all([h?.dispose(), tpm?.stop(), otherTpm?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

/** A machine of its own run directory (machine dir, /etc, /var/lib, podman's store), registered, approved and delivered. */
async function deliveredMachine(): Promise<{
  run: string;
  machine: MachineDirectory;
  delivery: Delivery;
  homes: ReturnType<typeof seedHomesIn>;
  store: string;
  finish: () => Promise<string>;
}> {
  const run = join(work, `run-${++machines}`);
  const store = join(run, "podman-secrets");
  const homes = seedHomesIn(run);
  const machine = await openMachineDirectory(join(run, "machine"), { create: true });
  const nic = { ...demoInventory.nics[0]!, addresses: [`192.0.2.${40 + machines}/24`] };
  const { session } = await registerMachine({
    url,
    identity: machine.identity,
    release: "0.6.0",
    hostname: `keeps-${machines}`,
    inventory: { ...demoInventory, nics: [nic] },
  });
  await machine.saveSession(session);
  await h.admin.approveNodeJoin(session.joinId);
  await h.server.tick();
  const delivered = await waitForRegistration(session, machine.identity, { until: "delivering", timeoutMs: 20_000 });
  const finish = async () => {
    await reportProgress(session, machine.identity, { steps: [{ name: "join", title: "Joining", status: "done" }] });
    return (await waitForRegistration(session, machine.identity, { until: "joined", timeoutMs: 20_000 })).state;
  };
  return { run, machine, delivery: delivered.delivery!, homes, store, finish };
}

describe("what a joined machine keeps (library)", () => {
  it("each secret only at its destination, the unseal key sealed to this TPM alone, nothing else secret in the machine directory", async () => {
    const { run, machine, delivery, homes, finish } = await deliveredMachine();
    const secrets = secretsOf(delivery);
    // Every secret of the seed is in this bundle, the unseal key included.
    expect(Object.keys(secrets)).toEqual(
      expect.arrayContaining([
        "adminPassword",
        "openBaoToken",
        "openBaoNodeToken",
        "dnsEncryptionKey",
        "postgresPassword",
        "openBaoUnsealKey",
        "nodeKey",
      ]),
    );
    // The installed system's env file already says other things: they are kept.
    const controlplane = homes.openBaoToken.env;
    mkdirSync(join(run, "etc"), { recursive: true });
    writeFileSync(controlplane, "# control plane\nSTRATUM_REGION=eu-1\nSTRATUM_IAM_ADMIN_PASSWORD=old\n", {
      mode: 0o644,
    });

    const written = await writeDelivery(machine.deliveryDir, delivery, { secrets: homes, tpm: { tcti: tpm.tcti } });
    expect(await finish()).toBe("joined");

    const sealed = homes.openBaoUnsealKey.tpm;
    expectEachSecretAtHome(secrets, seedHomeFiles(run, machine.deliveryDir), run);
    expect(statSync(sealed).mode & 0o777).toBe(0o600);

    // The env file: the secrets' lines set, every other line kept.
    expect(readFileSync(controlplane, "utf8")).toBe(
      `# control plane\nSTRATUM_REGION=eu-1\nSTRATUM_IAM_ADMIN_PASSWORD=${delivery.bundle.adminPassword}\nSTRATUM_OPENBAO_TOKEN=${delivery.bundle.openBaoToken}\n`,
    );
    // The machine directory: the identity, the session, public files and the node key.
    expect(filesUnder(machine.dir).map((f) => f.slice(machine.dir.length + 1))).toEqual(JOINED_MACHINE_FILES);
    expect(readdirSync(run)).not.toContainEqual(expect.stringMatching(/staging|old/));
    expect(written.secrets.openBaoUnsealKey).toEqual([{ kind: "tpm", path: sealed }]);

    // The sealed file unseals to the key on this TPM, and not on another machine's.
    expect((await unsealSecret(sealed, { tcti: tpm.tcti })).value).toBe(delivery.bundle.openBaoUnsealKey);
    const foreign = await unsealSecret(sealed, { tcti: otherTpm.tcti }).catch((e: unknown) => e);
    expect(foreign).toBeInstanceOf(TpmError);
    expect(foreign).toMatchObject({ reason: "foreign" });
  }, 120_000);

  it("refuses a delivery with a secret that has no destination, naming the fields, and writes nothing", async () => {
    const { run, machine, delivery, homes, finish } = await deliveredMachine();
    const { adminPassword: _a, dnsEncryptionKey: _d, ...partial } = homes;
    const before = filesUnder(run);
    const error = await writeDelivery(machine.deliveryDir, delivery, {
      secrets: partial,
      tpm: { tcti: tpm.tcti },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretDestinationError);
    expect(error).toMatchObject({ code: "SECRET_DESTINATION_MISSING", fields: ["adminPassword", "dnsEncryptionKey"] });
    expect((error as Error).message).not.toContain(delivery.bundle.adminPassword!);
    expect(filesUnder(run)).toEqual(before);
    // No destinations at all: every secret but the node key named.
    await expect(writeDelivery(machine.deliveryDir, delivery)).rejects.toMatchObject({
      fields: [
        "adminPassword",
        "dnsEncryptionKey",
        "openBaoNodeToken",
        "openBaoToken",
        "openBaoUnsealKey",
        "postgresPassword",
      ],
    });
    expect(filesUnder(run)).toEqual(before);
    // One join is delivered at a time: this one ends, for the next test's.
    expect(await finish()).toBe("joined");
  }, 60_000);

  it("no TPM: TPM_UNAVAILABLE and nothing written; the plaintext fallback only when asked for by name", async () => {
    const { run, machine, delivery, homes, finish } = await deliveredMachine();
    const before = filesUnder(run);
    const noTpm = `swtpm:host=127.0.0.1,port=${tpm.port + 11}`;
    await expect(
      writeDelivery(machine.deliveryDir, delivery, { secrets: homes, tpm: { tcti: noTpm } }),
    ).rejects.toMatchObject({
      code: "TPM_UNAVAILABLE",
      reason: "unreachable",
    });
    expect(filesUnder(run)).toEqual(before);
    // tpm2-tools missing: the same refusal, and the named fallback then writes plaintext, with a warning.
    const path = process.env.PATH;
    process.env.PATH = join(run, "no-tools");
    const warnings: string[] = [];
    try {
      await expect(
        writeDelivery(machine.deliveryDir, delivery, { secrets: homes, tpm: { tcti: tpm.tcti } }),
      ).rejects.toMatchObject({
        code: "TPM_UNAVAILABLE",
        reason: "tools-missing",
      });
      expect(filesUnder(run)).toEqual(before);
      const fallback = { ...homes, openBaoUnsealKey: { ...homes.openBaoUnsealKey, withoutTpm: "plaintext" as const } };
      // (podman's stand-in is a shell script, which needs the PATH this test took away)
      const written = await writeDelivery(machine.deliveryDir, delivery, {
        secrets: { ...fallback, postgresPassword: { file: join(run, "pg") } },
        tpm: { tcti: tpm.tcti },
        onWarning: (w) => warnings.push(w),
      });
      expect(written.secrets.openBaoUnsealKey).toEqual([{ kind: "plaintext", path: homes.openBaoUnsealKey.tpm }]);
    } finally {
      process.env.PATH = path;
    }
    expect(warnings).toEqual([expect.stringMatching(/^openBaoUnsealKey is NOT sealed: .*plaintext/)]);
    expect((await unsealSecret(homes.openBaoUnsealKey.tpm)).value).toBe(delivery.bundle.openBaoUnsealKey);
    expect(await finish()).toBe("joined");
  }, 60_000);
});

/** The delivery with its concealed fields, as JSON for a child's stdin. */
function revealed(delivery: Delivery): string {
  const bundle = Object.fromEntries(
    Object.getOwnPropertyNames(delivery.bundle).map((k) => [k, (delivery.bundle as never)[k]]),
  );
  return JSON.stringify({ ...delivery, bundle });
}

const STEPS = [
  "planned",
  "sealed",
  "swept",
  "staged",
  "placed:openBaoUnsealKey",
  "placed:postgresPassword",
  "placed:adminPassword",
  "placed:openBaoToken",
  "placed:openBaoNodeToken",
  "placed:dnsEncryptionKey",
  "old-key-removed",
  "old-moved",
  "swapped",
  "node-key",
];

describe("a write killed at each step (kill -9)", () => {
  it("never leaves a secret in a staging or old copy, nor in the machine directory beyond the node key, and the next write completes", async () => {
    const { run, machine, delivery, homes, store, finish } = await deliveredMachine();
    const secrets = secretsOf(delivery);
    const child = join(import.meta.dirname, "fixtures", "write-delivery-child.ts");
    const write = (killAt: string | undefined) =>
      new Promise<{ code: number | null; signal: string | null; steps: string[] }>((resolve) => {
        const proc = spawn(
          process.execPath,
          ["--import", "tsx", child, machine.deliveryDir, JSON.stringify(homes), tpm.tcti],
          {
            env: { ...process.env, ...(killAt ? { KILL_AT: killAt } : {}) },
            stdio: ["pipe", "pipe", "inherit"],
          },
        );
        let out = "";
        proc.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
        proc.on("close", (code, signal) => resolve({ code, signal, steps: out.trim().split("\n") }));
        proc.stdin.end(revealed(delivery));
      });
    // Each step twice over: once onto no delivery yet (the first write), once over one.
    for (const round of ["first", "again"]) {
      // Onto no delivery there is no old one to move away.
      for (const killAt of STEPS.filter((step) => round === "again" || !step.startsWith("old-"))) {
        if (round === "first") rmSync(machine.deliveryDir, { recursive: true, force: true });
        const killed = await write(killAt);
        expect(killed.signal, `${round}: killed at ${killAt} (${killed.steps.join(", ")})`).toBe("SIGKILL");
        expect(killed.steps.at(-1)).toBe(killAt);
        const found = whereSecretsAre(secrets, run);
        for (const [name, files] of Object.entries(found)) {
          const where = `${round}, killed at ${killAt}: ${name}`;
          expect(
            files.filter((f) => /\.staging-|\.old-/.test(f)),
            where,
          ).toEqual([]);
          if (name === "openBaoUnsealKey") expect(files, where).toEqual([]);
          const inMachine = files.filter((f) => f.startsWith(`${machine.dir}/`));
          if (name.startsWith("nodeKey"))
            expect(inMachine, where).toEqual(inMachine.length ? [join(machine.deliveryDir, "node.key")] : []);
          else expect(inMachine, where).toEqual([]);
        }
      }
      // The write that is not killed completes what the killed ones began.
      const done = await write(undefined);
      expect(done.code).toBe(0);
      expect(done.steps.at(-1)).toBe("written");
      expect(readdirSync(join(run))).not.toContainEqual(expect.stringMatching(/staging|old/));
      expect(filesUnder(machine.deliveryDir).map((f) => f.slice(machine.deliveryDir.length + 1))).toEqual([
        "bundle.json",
        "ca.pem",
        "node.crt",
        "node.key",
        "node.yaml",
      ]);
      const found = whereSecretsAre(secrets, run);
      expect(found.openBaoUnsealKey).toEqual([]);
      expect(found.nodeKey).toEqual([join(machine.deliveryDir, "node.key")]);
      expect(found.postgresPassword).toEqual([join(store, "stratum-postgres")]);
    }
    expect((await unsealSecret(homes.openBaoUnsealKey.tpm, { tcti: tpm.tcti })).value).toBe(
      delivery.bundle.openBaoUnsealKey,
    );
    expect(await finish()).toBe("joined");
  }, 400_000);
});
