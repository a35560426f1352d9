/**
 * `npm run demo`: one machine joins a reference cluster, end to end, on this machine.
 *
 * A founder (the reference server, on free loopback ports, in a temporary data directory)
 * runs release 0.6.0 and serves it; the joining machine was installed from 0.5.0. The founder
 * mints a join code; the machine checks it, registers, is told to upgrade, downloads and
 * verifies the served release, registers again on 0.6.0, is approved through the admin client,
 * receives its delivery, reports its steps and reaches `joined`. Both sides show the pairing
 * code. The machine keeps its state in one machine directory (`openMachineDirectory`), as an
 * installer does, and puts each secret of its delivery where the seed says, under a temporary
 * stand-in for /etc (env lines, files, a command that takes the secret on stdin), the OpenBao
 * unseal key sealed to a TPM.
 *
 * Which TPM: a software TPM of its own (swtpm, started in the temporary directory) when swtpm and
 * tpm2-tools are installed, so that the demo shows the real seal and unseal and never touches
 * this computer's own TPM; on a machine without them (a fresh checkout right after `npm ci`),
 * the plaintext fallback that a `{ tpm }` destination allows only when asked by name
 * (`withoutTpm: "plaintext"`), said loudly. Everything is cleaned up; the exit code is 0 only
 * if the machine joined.
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAdminClient, StratumError, type AdminClient, type NodeJoin } from "@stratum/join";
import {
  checkJoinCode,
  collectInventory,
  downloadRelease,
  openMachineDirectory,
  registerMachine,
  type JoinSession,
  reportProgress,
  type SecretDestinations,
  unsealSecret,
  waitForRegistration,
  writeDelivery,
} from "@stratum/join/node";
import { generateReleaseKeyPair, signReleaseDirectory } from "@stratum/join/release";
import { startReferenceServer } from "../reference-server/server.js";

const CLUSTER_RELEASE = "0.6.0";
const INSTALLED_RELEASE = "0.5.0";

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const dim = (s: string) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);
let stepNo = 0;
function step(side: "founder" | "machine" | "demo", text: string): void {
  stepNo++;
  const who = side === "founder" ? "founder " : side === "machine" ? "machine " : "demo    ";
  console.log(`${String(stepNo).padStart(2)}. ${bold(who)} ${text}`);
}
const detail = (text: string) => console.log(`             ${dim(text)}`);

function banner(pairingCode: string): string {
  const spaced = pairingCode.split("").join(" ");
  const line = "━".repeat(spaced.length + 6);
  return [`┏${line}┓`, `┃   ${bold(spaced)}   ┃`, `┗${line}┛`].map((l) => `             ${l}`).join("\n");
}

/** A small release 0.6.0 directory signed with a fresh release key: what a mirror or the founder publishes. */
async function makeRelease(root: string) {
  const key = generateReleaseKeyPair();
  const dir = join(root, CLUSTER_RELEASE);
  mkdirSync(join(dir, "os", "blobs"), { recursive: true });
  mkdirSync(join(dir, "sysext"), { recursive: true });
  writeFileSync(join(dir, "os", "blobs", "rootfs.img"), randomBytes(24 << 20));
  writeFileSync(join(dir, "os", "blobs", "kernel.efi"), randomBytes(6 << 20));
  writeFileSync(join(dir, "sysext", "stratum-agent.raw"), randomBytes(2 << 20));
  const signed = await signReleaseDirectory(dir, { release: CLUSTER_RELEASE, keys: [key.privateKeyPem] });
  return { key, files: signed.manifest.files };
}

/** The founder: a signed release to serve, and the reference server on free loopback ports. */
async function startFounder(work: string) {
  step("demo", `release ${CLUSTER_RELEASE}: building and signing a release directory (Ed25519, DSSE)`);
  const release = await makeRelease(join(work, "releases"));
  detail(`${release.files.length} files, release key ${release.key.keyid.slice(0, 16)}…`);
  const started = await startReferenceServer({
    dataDir: join(work, "founder"),
    adminAddr: "127.0.0.1:0",
    joinAddr: "127.0.0.1:0",
    clusterRelease: CLUSTER_RELEASE,
    releaseDir: join(work, "releases"),
    // A cluster whose OpenBao runs as a raft: its bundles carry the unseal key, which the
    // machine seals to its TPM (a single-instance cluster sends none).
    openBaoMode: "raft",
    log: () => {},
  });
  step(
    "founder",
    `reference server up: admin API ${started.adminUrl}, cluster CA ${started.caFingerprint.slice(0, 23)}…`,
  );
  return Object.assign(started, { releaseKey: release.key });
}

/** A free loopback port whose next one is free too (swtpm's command and control ports). */
async function freePortPair(): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
    });
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    if ((await free(port)) && (await free(port + 1))) return port;
  }
}

/** A software TPM in `dir` when swtpm and tpm2-tools are installed: its TCTI and how to stop it. */
async function startSoftwareTpm(dir: string): Promise<{ tcti: string; stop: () => void } | undefined> {
  const installed = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;
  if (!installed("swtpm") || !installed("tpm2_createprimary")) return undefined;
  mkdirSync(dir, { recursive: true });
  const port = await freePortPair();
  const child = spawn(
    "swtpm",
    ["socket", "--tpm2", "--tpmstate", `dir=${dir}`, "--server", `type=tcp,port=${port},bindaddr=127.0.0.1`].concat([
      "--ctrl",
      `type=tcp,port=${port + 1},bindaddr=127.0.0.1`,
      "--flags",
      "not-need-init,startup-clear",
    ]),
    { stdio: "ignore" },
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  if (child.exitCode !== null) return undefined;
  return { tcti: `swtpm:host=127.0.0.1,port=${port}`, stop: () => child.kill("SIGTERM") };
}

/**
 * Where each secret of the delivery goes, as the seed says, under `etc` (the demo's /etc):
 * env lines of controlplane.env and axdnsd.env, files, a program that takes the Postgres password
 * on stdin (as `podman secret create stratum-postgres -` would), and the unseal key sealed to the
 * TPM, or, without one, in plaintext because this demo asks for that by name.
 */
function demoSecrets(etc: string, sealed: string, tpm: boolean): SecretDestinations {
  const store = "require('fs').writeFileSync(process.argv[1], require('fs').readFileSync(0), { mode: 0o600 })";
  return {
    adminPassword: [
      { env: join(etc, "controlplane.env"), name: "STRATUM_IAM_ADMIN_PASSWORD" },
      { file: join(etc, "bootstrap-credentials.txt") },
    ],
    openBaoToken: { env: join(etc, "controlplane.env"), name: "STRATUM_OPENBAO_TOKEN" },
    openBaoNodeToken: { file: join(etc, "secrets", "openbao-node.token") },
    dnsEncryptionKey: { env: join(etc, "axdnsd.env"), name: "ENCRYPTION_KEY" },
    postgresPassword: { command: [process.execPath, "-e", store, join(etc, "podman-secret-stratum-postgres")] },
    openBaoUnsealKey: tpm ? { tpm: sealed } : { tpm: sealed, withoutTpm: "plaintext" },
  };
}

type Founder = Awaited<ReturnType<typeof startFounder>>;
type Machine = Awaited<ReturnType<typeof openMachineDirectory>>;
type Inventory = Awaited<ReturnType<typeof collectInventory>> | undefined;

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "stratum-demo-"));
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort(new Error("interrupted")));
  const { signal } = controller;
  const server = await startFounder(work);
  try {
    const admin = createAdminClient({ baseUrl: server.adminUrl, token: server.adminToken });
    const minted = await admin.mintJoinCode({ endpoint: server.joinEndpoint, ttlSeconds: 3600 }, { signal });
    step("founder", `minted join code ${bold(minted.code)} (shown once), selector ${minted.joinCode.selector}`);
    detail(`give the machine: ${minted.url}`);

    // ---- the machine, installed from an older release ----
    const check = await checkJoinCode({ url: minted.url, release: INSTALLED_RELEASE, selfUpgrade: true, signal });
    step(
      "machine",
      `code checked before installing: cluster runs ${check.clusterRelease}, the code expires ${check.expiresAt}`,
    );
    detail(`listener proved the code; cluster CA learned through the PAKE: ${check.caFingerprint.slice(0, 23)}…`);
    if (check.upgrade) detail(`this machine (${INSTALLED_RELEASE}) must first upgrade to ${check.upgrade.to}`);

    // The machine directory: its identity (made here, kept), the join session, the release, the delivery.
    const machine = await openMachineDirectory(join(work, "machine"), { create: true });
    const inventory = await collectInventory({ signal }).catch(() => undefined);
    step(
      "machine",
      `identity made in ${machine.dir} (Ed25519 key ${machine.identity.keyFingerprint.slice(0, 17)}…); hardware: ${describeInventory(inventory)}`,
    );

    const upgraded = await registerAndUpgrade(server, admin, machine, minted.url, inventory, signal);
    const session = await registerAgain(machine, minted.url, upgraded, inventory, signal);
    await approve(admin, session, signal);
    await deliverAndInstall(admin, machine, session, work, signal);
    console.log(`\n${bold("joined")}: the machine is a member of the cluster. Cleaning up.`);
  } finally {
    await server.close();
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The machine registers on its older release, is told to upgrade (`needs-upgrade`, the release
 * served by the founder), downloads and verifies it, reporting its steps. Returns the release.
 */
async function registerAndUpgrade(
  server: Founder,
  admin: AdminClient,
  machine: Machine,
  url: string,
  inventory: Inventory,
  signal: AbortSignal,
): Promise<string> {
  const { identity } = machine;
  const first = await registerMachine({
    url,
    identity,
    release: INSTALLED_RELEASE,
    selfUpgrade: true,
    hostname: "demo-node-2",
    ...(inventory ? { inventory } : {}),
    signal,
  });
  await machine.saveSession(first.session);
  step(
    "machine",
    `registered as ${first.session.joinId}: state ${bold(first.registration.state)}; pairing code on the machine's console:`,
  );
  console.log(banner(first.registration.pairingCode));
  const upgrade = first.registration.upgrade;
  if (first.registration.state !== "needs-upgrade" || !upgrade?.served)
    throw new Error(`expected needs-upgrade with a served release, got ${first.registration.state}`);

  const waiting = await admin.listNodeJoins({ signal });
  const seen = waiting.items.find((j) => j.id === first.session.joinId)!;
  step(
    "founder",
    `sees ${seen.hostname} in ${seen.state} (${seen.upgrade?.from} → ${seen.upgrade?.to}), pairing code ${bold(seen.pairingCode)}`,
  );

  const downloadStep = (status: "running" | "done") => ({
    name: "upgrade/download",
    title: "Downloading the cluster's release",
    status,
    at: new Date().toISOString(),
  });
  await reportProgress(first.session, identity, { steps: [downloadStep("running")], signal });
  let lastShown = -1;
  const downloaded = await downloadRelease({
    upgrade,
    session: first.session,
    identity,
    destDir: machine.releaseDir(upgrade.to),
    trustedKeys: [server.releaseKey.publicKeyPem],
    signal,
    onProgress: (p) => {
      const pct = Math.floor((p.bytesDone / Math.max(1, p.bytesTotal)) * 100);
      if (pct >= lastShown + 25 || p.filesDone === p.filesTotal) {
        lastShown = pct;
        detail(
          `download ${String(pct).padStart(3)}%  ${(p.bytesDone / 1048576).toFixed(1)} of ${(p.bytesTotal / 1048576).toFixed(1)} MiB, ${p.filesDone}/${p.filesTotal} files verified`,
        );
      }
    },
  });
  step(
    "machine",
    `release ${downloaded.release} downloaded from the founder and verified: signature by ${downloaded.signedBy.length} trusted key, ${downloaded.files.length} files hashed`,
  );
  await reportProgress(first.session, identity, {
    steps: [downloadStep("done")],
    log: [`release ${downloaded.release} verified`],
    signal,
  });
  return upgrade.to;
}

/** Registered again on the new release: the same join, now pending; the session saved for stage 2. */
async function registerAgain(
  machine: Machine,
  url: string,
  release: string,
  inventory: Inventory,
  signal: AbortSignal,
): Promise<JoinSession> {
  const second = await registerMachine({
    url,
    identity: machine.identity,
    release,
    hostname: "demo-node-2",
    ...(inventory ? { inventory } : {}),
    signal,
  });
  step(
    "machine",
    `registered again on ${release}: state ${bold(second.registration.state)}, same join ${second.session.joinId}, pairing code ${bold(second.registration.pairingCode)}`,
  );
  detail(`join session saved for stage 2: ${await machine.saveSession(second.session)}`);
  return second.session;
}

/** The operator compares the pairing codes and approves with the founder's default assignment. */
async function approve(admin: AdminClient, session: JoinSession, signal: AbortSignal): Promise<void> {
  const pending = (await admin.listNodeJoins({ signal })).items.find((j) => j.id === session.joinId)!;
  step(
    "founder",
    `operator compares pairing codes: console ${bold(pending.pairingCode)} = machine ${bold(session.pairingCode)} → approve`,
  );
  if (pending.pairingCode !== session.pairingCode) throw new Error("pairing codes differ: do not approve");
  const approved = await admin.approveNodeJoin(session.joinId, {}, { signal });
  step(
    "founder",
    `approved ${approved.id} as node ${approved.nodeId} (role ${approved.assignment?.role}); state ${approved.state}`,
  );
  describeAssignment(approved);
}

/** The machine receives its delivery, reports its install steps and reaches `joined`; the founder sees it. */
async function deliverAndInstall(
  admin: AdminClient,
  machine: Machine,
  session: JoinSession,
  work: string,
  signal: AbortSignal,
): Promise<void> {
  const { identity } = machine;
  const delivered = await waitForRegistration(session, identity, {
    until: ["delivering"],
    timeoutMs: 60_000,
    signal,
    onChange: (r) => detail(`machine sees state ${r.state}${r.waitReason ? ` (${r.waitReason})` : ""}`),
  });
  const delivery = delivered.delivery!;
  const tpm = await startSoftwareTpm(join(work, "swtpm"));
  try {
    const sealed = join(work, "var", "openbao-unseal.sealed");
    mkdirSync(join(work, "etc"), { recursive: true, mode: 0o700 });
    const written = await writeDelivery(machine.deliveryDir, delivery, {
      secrets: demoSecrets(join(work, "etc"), sealed, tpm !== undefined),
      ...(tpm ? { tpm: { tcti: tpm.tcti } } : {}),
      signal,
      onWarning: (text) => detail(`warning: ${text}`),
    });
    step(
      "machine",
      `delivery received over the pinned channel: node ${delivery.nodeId}; ${Object.keys(written.files).filter((role) => role !== "nodeKey").length} public files and the node key (0600) in ${written.dir}; each secret in its home:`,
    );
    for (const [field, places] of Object.entries(written.secrets))
      for (const place of places)
        detail(
          `${field} → ${place.kind}${place.name ? ` ${place.name}` : ""}${place.path ? ` ${place.path}` : ""}${place.command ? ` ${place.command} (stdin)` : ""}`,
        );
    const unseal = written.secrets.openBaoUnsealKey?.[0];
    if (unseal) {
      const back = await unsealSecret(sealed, { ...(tpm ? { tcti: tpm.tcti } : {}), signal });
      const matches = back.value === delivery.bundle.openBaoUnsealKey ? "it matches" : "MISMATCH";
      const which = tpm ? "the demo's software TPM (swtpm)" : "this machine's TPM";
      detail(
        unseal.kind === "tpm"
          ? `unseal key sealed to ${which}: unsealed again, ${matches}; ${readFileSync(sealed, "utf8").includes(back.value) ? "LEAKED" : "not in the sealed file"}`
          : 'no TPM here (no swtpm and tpm2-tools): the unseal key was written in plaintext, as the demo asked by name (withoutTpm: "plaintext")',
      );
    } else detail("the cluster sent no unseal key (its OpenBao is a single instance)");
  } finally {
    tpm?.stop();
  }
  detail(
    `secrets stay out of logs: ${JSON.stringify(delivery.bundle).includes("PRIVATE KEY") ? "LEAKED" : "nodeKey and passwords are not in the printed bundle"}`,
  );

  const phases: Array<[string, string]> = [
    ["storage", "Preparing storage"],
    ["network", "Configuring the network"],
    ["join/patroni", "Joining the Postgres cluster"],
    ["join/raft-openbao", "Joining the OpenBao raft"],
    ["join", "Joining the cluster"],
  ];
  for (const [name, title] of phases) {
    const view = await reportProgress(session, identity, {
      steps: [{ name, title, status: "done", at: new Date().toISOString() }],
      log: [`${title}: done`],
      signal,
    });
    step("machine", `reported step ${name} done → state ${bold(view.state)}`);
  }
  const joined = await waitForRegistration(session, identity, { until: "joined", timeoutMs: 30_000, signal });
  const founderView = await admin.getNodeJoin(session.joinId, { signal });
  const members = await admin.listClusterMembers({ signal });
  step(
    "founder",
    `${founderView.hostname} is ${bold(founderView.state)}; members: ${members.items.map((m) => `${m.name} (${m.state})`).join(", ")}; generation ${members.membershipGeneration}`,
  );
  detail(`install log tail: ${founderView.logTail?.slice(-2).join(" | ")}`);
  if (joined.state !== "joined") throw new Error(`ended ${joined.state}`);
}

function describeInventory(inventory: Inventory): string {
  if (!inventory) return "not collected on this OS";
  const gib = (n: number | undefined) => (n ? `${(n / 2 ** 30).toFixed(1)} GiB` : "?");
  return `${inventory.cpu?.threads ?? "?"} threads, ${gib(inventory.memoryBytes)} memory, ${inventory.disks?.length ?? 0} disks, ${inventory.nics?.length ?? 0} NICs`;
}

function describeAssignment(join: NodeJoin): void {
  for (const link of join.assignment?.links ?? []) {
    detail(
      `link ${link.name} on ${link.interface}: ${link.purposes?.join("+")} ${link.addresses?.join(", ") ?? ""}${link.addressesAllocated ? " (allocated)" : ""}`,
    );
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    const code = StratumError.is(error) ? ` [${error.code}]` : "";
    console.error(`\ndemo failed${code}: ${(error as Error).message}`);
    process.exit(1);
  },
);
