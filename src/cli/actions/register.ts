/**
 * `stratum-join register`: the installer's stage 1 in one command. Creates (or loads) the
 * machine identity, registers with the join code, shows the pairing code, upgrades itself
 * when the cluster runs a newer release, saves the join session, and optionally waits for a
 * state, writing the delivery when it arrives.
 *
 * The command's declaration (words, flags, help) is `src/cli/commands/register.ts`; this module is
 * loaded only when the command runs.
 * @module
 */

import { hostname as osHostname } from "node:os";
import { join } from "node:path";
import { clockIsOff } from "../../core/clock.js";
import { StratumError } from "../../errors/index.js";
import type { WrittenDelivery } from "../../node/delivery.js";
import { JOIN_STATES, isJoinState } from "../../core/join-states.js";
import { collectInventory } from "../../node/inventory/index.js";
import { registerMachine, type RegisterResult } from "../../node/join-calls.js";
import type { DownloadedRelease } from "../../transport/download/index.js";
import type { Inventory, JoinState, Registration } from "../../types.js";
import { CliError } from "../../errors/cli.js";
import {
  listFlag,
  numberFlag,
  requiredFlag,
  stringFlag,
  type CommandContext,
  type ParsedArgs,
  type CommandAction,
} from "../args.js";
import { MACHINE_DIR_FILES, openMachineDir, readJsonFile, readTextFile, saveSession } from "../files.js";
import { readSecretsFlag, writeDeliveryOf } from "../delivery.js";
import { downloadUpgrade, retryNotice, SAFE_RELEASE, joinTargetOf, trustedKeysOf } from "../joiner-steps.js";
import { clockLine, fingerprintLines, pairingBanner } from "../output.js";
import { stateReporter, waitForState, type WaitOutcome } from "../watch.js";
import type { register } from "../commands/register.js";
import { printable } from "../style.js";

/** The registration view as printed: the delivery is summarised elsewhere, never dumped. */
function withoutDelivery(registration: Registration): Omit<Registration, "delivery"> {
  const { delivery: _delivery, ...rest } = registration;
  return rest;
}

/**
 * The inventory to send: the file's, none, or this machine's (the default on Linux: the
 * default approval reads the NICs and disks from it, and is refused without one).
 */
async function inventoryOf(
  ctx: CommandContext,
  choice: { file: string | undefined; none: boolean; collect: boolean },
): Promise<Inventory | undefined> {
  if (choice.file !== undefined) {
    const value = await readJsonFile(choice.file, "inventory");
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new CliError("FILE_ERROR", `the inventory ${choice.file} is not a JSON object`);
    return value as Inventory;
  }
  if (choice.collect || (!choice.none && process.platform === "linux")) {
    const inventory = await collectInventory({ signal: ctx.signal });
    ctx.out.say(
      `collected this machine's inventory: ${count(inventory.nics?.length ?? 0, "NIC")}, ${count(inventory.disks?.length ?? 0, "disk")}`,
    );
    return inventory;
  }
  if (!choice.none) {
    ctx.out.warn(
      `no inventory sent: collecting one needs Linux, not ${process.platform}; give --inventory FILE for the default approval`,
    );
  }
  return undefined;
}

/** What a person at the machine reads after registering: where, the cluster CA, the pairing code. */
function announce(ctx: CommandContext, result: RegisterResult): void {
  ctx.out.say(
    `${result.created ? "registered" : "already registered"} with the cluster at ${result.session.endpoint} as ${printable(result.session.joinId)}`,
  );
  for (const line of fingerprintLines("cluster CA", result.session.caFingerprint)) ctx.out.say(line);
  ctx.out.say("");
  for (const line of pairingBanner(printable(result.registration.pairingCode), ctx.out.style)) ctx.out.say(`  ${line}`);
  ctx.out.say("");
  if (clockIsOff(result.clockOffsetMs / 1000)) ctx.out.warn(clockLine(result.clockOffsetMs));
}

/** The `--json` document of `register` (its shape: `register.result`, in docs/cli.md). */
function registerDocument(o: {
  result: RegisterResult;
  registration: Registration;
  dir: string;
  sessionFile: string;
  created: boolean;
  keyFingerprint: string;
  upgrade: { from: string } | undefined;
  upgraded: DownloadedRelease | undefined;
  delivery: WrittenDelivery | undefined;
}) {
  const { result, registration, dir, upgraded, delivery } = o;
  return {
    joinId: result.session.joinId,
    state: registration.state,
    pairingCode: registration.pairingCode,
    created: result.created,
    endpoint: result.session.endpoint,
    caFingerprint: result.session.caFingerprint,
    keyFingerprint: o.keyFingerprint,
    release: result.session.release,
    clockOffsetSeconds: Math.round(result.clockOffsetMs / 1000),
    identity: { dir, created: o.created },
    sessionFile: o.sessionFile,
    ...(upgraded && o.upgrade
      ? {
          upgrade: {
            from: o.upgrade.from,
            to: upgraded.release,
            dir: join(dir, MACHINE_DIR_FILES.release, upgraded.release),
            files: upgraded.files.length,
            bytesFetched: upgraded.bytesFetched,
            signedBy: upgraded.signedBy,
          },
        }
      : {}),
    ...(delivery ? { delivery: { dir: delivery.dir, files: delivery.files, secrets: delivery.secrets } } : {}),
    registration: withoutDelivery(registration),
  };
}

/** The flags of `register`, checked together before anything is read or sent. */
function flagsOf(args: ParsedArgs<typeof register.flags>) {
  const usage = (message: string) => new CliError("USAGE", message, { command: "register" });
  const target = joinTargetOf(args);
  const dir = requiredFlag(args, "identity");
  const release = requiredFlag(args, "release");
  const selfUpgrade = args.values["self-upgrade"] === true;
  const wait = stringFlag(args, "wait");
  if (wait !== undefined && !isJoinState(wait)) throw usage(`--wait takes one of ${JOIN_STATES.join(", ")}`);
  const timeoutSeconds = numberFlag(args, "timeout");
  if (timeoutSeconds !== undefined && wait === undefined) throw usage("--timeout goes with --wait");
  const threshold = numberFlag(args, "threshold");
  if (selfUpgrade && listFlag(args, "trusted-key").length === 0) {
    throw usage(
      "--self-upgrade needs at least one --trusted-key: the release is verified against keys this machine already trusts",
    );
  }
  const inventoryChoice = {
    file: stringFlag(args, "inventory"),
    none: args.values["no-inventory"] === true,
    collect: args.values["collect-inventory"] === true,
  };
  if ([inventoryChoice.file !== undefined, inventoryChoice.none, inventoryChoice.collect].filter(Boolean).length > 1)
    throw usage("give one of --inventory FILE and --no-inventory (collecting this machine's is the default)");
  return { target, dir, release, selfUpgrade, wait, timeoutSeconds, threshold, inventoryChoice };
}

/** `1 disk`, `2 disks`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** What `register` reads before it touches the network: its flags, and every file they name. */
async function readInputs(ctx: CommandContext, args: ParsedArgs<typeof register.flags>) {
  const flags = flagsOf(args);
  // Everything read from disk is read before the network is touched, so a typo in a path
  // does not cost a registration.
  const trustedKeys = await trustedKeysOf(args);
  const mirrorCaFile = stringFlag(args, "mirror-ca");
  const mirrorCa = mirrorCaFile === undefined ? undefined : await readTextFile(mirrorCaFile, "mirror CA");
  const proxy = stringFlag(args, "proxy");
  const inventory = await inventoryOf(ctx, flags.inventoryChoice);
  const secrets = await readSecretsFlag(args, flags.dir);
  const hostname = stringFlag(args, "hostname") ?? osHostname();
  const serial = stringFlag(args, "serial");
  return { ...flags, trustedKeys, mirrorCa, proxy, inventory, secrets, hostname, serial };
}

/** The flags and files of `register`, read. */
type Inputs = Awaited<ReturnType<typeof readInputs>>;

/** Where the registration stands after a step: the founder's answer and the session file saved from it. */
interface Registered {
  result: RegisterResult;
  sessionFile: string;
}

/**
 * Registers: opens (or creates) the machine identity in DIR, registers it on `--release`,
 * saves the join session and shows the pairing code.
 */
async function registerStep(ctx: CommandContext, inputs: Inputs) {
  const opened = await openMachineDir(inputs.dir, { create: true, warn: (text) => ctx.out.warn(text) });
  const { identity } = opened;
  ctx.out.say(
    `${opened.created ? "created the machine identity in" : "using the machine identity in"} ${inputs.dir} (key ${identity.keyFingerprint.slice(0, 11)}…)`,
  );
  const details = {
    ...inputs.target,
    identity,
    selfUpgrade: inputs.selfUpgrade,
    hostname: inputs.hostname,
    ...(inputs.serial !== undefined ? { systemSerial: inputs.serial } : {}),
    ...(inputs.inventory ? { inventory: inputs.inventory } : {}),
    signal: ctx.signal,
    onRetry: retryNotice(ctx),
  };
  const result = await registerMachine({ ...details, release: inputs.release });
  const sessionFile = await saveSession(inputs.dir, result.session);
  announce(ctx, result);
  const report = stateReporter(ctx);
  report(result.registration);
  return { opened, details, report, registered: { result, sessionFile } satisfies Registered };
}

/**
 * Upgrades when the cluster runs a newer release: downloads and verifies it into
 * DIR/release/<version>, then registers again on it with the same key (the founder moves the
 * registration to pending). Without an upgrade to make, the registration stays as it is.
 */
async function upgradeStep(
  ctx: CommandContext,
  inputs: Inputs,
  made: Awaited<ReturnType<typeof registerStep>>,
): Promise<Registered & { upgrade: { from: string } | undefined; upgraded: DownloadedRelease | undefined }> {
  const { registration, session } = made.registered.result;
  const upgrade = registration.state === "needs-upgrade" ? registration.upgrade : undefined;
  if (!upgrade) return { ...made.registered, upgrade: undefined, upgraded: undefined };
  if (!SAFE_RELEASE.test(upgrade.to))
    throw new StratumError("RESPONSE_INVALID", "the cluster names a release that is not a safe directory name");
  const upgraded = await downloadUpgrade(ctx, {
    upgrade,
    destDir: join(inputs.dir, MACHINE_DIR_FILES.release, upgrade.to),
    trustedKeys: inputs.trustedKeys,
    ...(inputs.threshold !== undefined ? { threshold: inputs.threshold } : {}),
    ...(inputs.mirrorCa !== undefined ? { mirrorCa: inputs.mirrorCa } : {}),
    ...(inputs.proxy !== undefined ? { proxy: inputs.proxy } : {}),
    session,
    identity: made.opened.identity,
  });
  ctx.out.say(`registering again on release ${upgrade.to}`);
  const result = await registerMachine({ ...made.details, release: upgrade.to });
  const sessionFile = await saveSession(inputs.dir, result.session);
  made.report(result.registration);
  return { result, sessionFile, upgrade, upgraded };
}

/**
 * Waits, with `--wait STATE`, until the registration reaches STATE, printing each state as it
 * changes and writing a delivery that arrives on the way.
 */
async function waitStep(
  ctx: CommandContext,
  inputs: Inputs & { wait: JoinState },
  made: Awaited<ReturnType<typeof registerStep>>,
  registered: Registered,
): Promise<WaitOutcome> {
  return waitForState(ctx, {
    session: registered.result.session,
    identity: made.opened.identity,
    dir: inputs.dir,
    until: inputs.wait,
    secrets: inputs.secrets,
    ...(inputs.timeoutSeconds !== undefined ? { timeoutMs: inputs.timeoutSeconds * 1000 } : {}),
    // The state printed above is not printed again when the wait sees it first.
    report: made.report,
  });
}

/**
 * Writes the delivery that registering again while delivering answers (without `--wait`), as
 * a wait would: its files to DIR/delivery, each secret where `--secrets` says.
 */
async function deliverStep(
  ctx: CommandContext,
  inputs: Inputs,
  registration: Registration,
): Promise<WrittenDelivery | undefined> {
  return registration.delivery ? writeDeliveryOf(ctx, inputs.dir, registration.delivery, inputs.secrets) : undefined;
}

/** Runs `register`: register, upgrade if the cluster says so, wait if asked to, deliver, and print the result. */
export const runRegister: CommandAction<typeof register.flags> = async (ctx, args) => {
  const inputs = await readInputs(ctx, args);
  const { wait, dir } = inputs;
  const made = await registerStep(ctx, inputs);
  const registered = await upgradeStep(ctx, inputs, made);
  ctx.out.say(`join session saved to ${registered.sessionFile}`);
  const { registration, delivery } =
    wait !== undefined
      ? await waitStep(ctx, { ...inputs, wait }, made, registered)
      : {
          registration: registered.result.registration,
          delivery: await deliverStep(ctx, inputs, registered.result.registration),
        };

  const document = registerDocument({
    ...registered,
    registration,
    dir,
    created: made.opened.created,
    keyFingerprint: made.opened.identity.keyFingerprint,
    delivery,
  });
  const done = `${ctx.out.style.green("done:")} ${ctx.out.style.state(registration.state)}`;
  ctx.out.result(
    document,
    wait !== undefined ? done : `${done}; run 'stratum-join status --identity ${dir}' to look again`,
    // The delivery's file paths and each secret's destination, keyed by role and field (nodeKey,
    // adminPassword, …): paths and names, not secrets.
    { local: ["delivery"] },
  );
};
