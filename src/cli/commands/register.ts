/**
 * `stratum-join register`: the installer's stage 1 in one command. Creates (or loads) the
 * machine identity, registers with the join code, shows the pairing code, upgrades itself
 * when the cluster runs a newer release, saves the join session, and optionally waits for a
 * state, writing the delivery when it arrives.
 * @module
 */

import { hostname as osHostname } from "node:os";
import { join } from "node:path";
import { StratumError } from "../../errors/index.js";
import { writeDelivery, type WrittenDelivery } from "../../node/delivery.js";
import { JOIN_STATES, isJoinState } from "../../core/join-states.js";
import { collectInventory } from "../../node/inventory/index.js";
import { registerMachine } from "../../node/joiner.js";
import type { DownloadedRelease } from "../../release/download/index.js";
import type { Inventory, Registration } from "../../types.js";
import { CliError, listFlag, numberFlag, stringFlag, type CommandSpec } from "../args.js";
import { IDENTITY_FILES, openIdentityDir, readJsonFile, readTextFile, saveSession } from "../files.js";
import {
  downloadUpgrade,
  SAFE_RELEASE,
  joinTargetOf,
  stateReporter,
  TARGET_FLAGS,
  trustedKeysOf,
  waitForState,
} from "../joiner.js";
import { pairingBanner } from "../output.js";

/** The registration view as printed: the delivery is summarised elsewhere, never dumped. */
function printable(registration: Registration): Omit<Registration, "delivery"> {
  const { delivery: _delivery, ...rest } = registration;
  return rest;
}

/** `register`. */
export const register: CommandSpec = {
  path: ["register"],
  summary: "Register this machine with the cluster, show the pairing code, upgrade itself if told to, and wait.",
  details: [
    "DIR holds the machine identity: created there when DIR has none (cert.pem 0644, key.pem",
    "0600, DIR 0700), loaded otherwise; the registration is pinned to its key, so keep DIR. The",
    "join session is saved as DIR/session.json for later commands (status, stage 2).",
    "",
    "When the cluster runs a newer release and --self-upgrade is given, the release is",
    "downloaded and verified against --trusted-key into DIR/release/<version>, then the machine",
    "registers again on that release, which moves it to pending.",
    "",
    "With --wait STATE the command waits until the registration reaches STATE, printing each",
    "state as it changes; a delivery that arrives on the way is written to DIR/delivery (all",
    "files 0600). A final state other than STATE (rejected, expired) exits 7. Ctrl-C stops the",
    "wait (exit 130); running register again picks the same registration up.",
    "",
    `States: ${JOIN_STATES.join(", ")}.`,
  ].join("\n"),
  flags: {
    ...TARGET_FLAGS,
    identity: {
      type: "string",
      value: "DIR",
      description: "the machine's directory: identity, session.json, release/, delivery/ (required)",
    },
    release: { type: "string", value: "VERSION", description: "the release this machine runs (required)" },
    "self-upgrade": {
      type: "boolean",
      description: "upgrade to the cluster's release when it is newer (needs --trusted-key)",
    },
    "trusted-key": {
      type: "string",
      multiple: true,
      value: "FILE",
      description: "a release public key (PEM) the upgrade's manifest must be signed by",
    },
    threshold: { type: "string", value: "N", description: "distinct trusted keys that must have signed (default 1)" },
    "mirror-ca": {
      type: "string",
      value: "FILE",
      description: "CA certificate (PEM) of a release mirror with a private CA",
    },
    inventory: {
      type: "string",
      value: "FILE",
      description: "the machine's hardware inventory, JSON (the API's Inventory)",
    },
    "collect-inventory": {
      type: "boolean",
      description: "collect the inventory of this Linux machine from /sys, /proc, lsblk and ip",
    },
    hostname: { type: "string", value: "NAME", description: "the host name to register (default: this machine's)" },
    serial: { type: "string", value: "SERIAL", description: "the system serial number to register" },
    wait: {
      type: "string",
      value: "STATE",
      description: "wait until the registration reaches STATE (e.g. delivering, joined)",
    },
    timeout: { type: "string", value: "SECONDS", description: "give up waiting after this long (exit 9, TIMEOUT)" },
  },
  async run(ctx, args) {
    const command = register;
    const usage = (message: string) => new CliError("USAGE", message, { command: "register" });
    const target = joinTargetOf(args, command);
    const dir = stringFlag(args, "identity", command, true);
    const release = stringFlag(args, "release", command, true);
    const selfUpgrade = args.values["self-upgrade"] === true;
    const wait = stringFlag(args, "wait", command);
    if (wait !== undefined && !isJoinState(wait)) throw usage(`--wait takes one of ${JOIN_STATES.join(", ")}`);
    const timeoutSeconds = numberFlag(args, "timeout", command);
    if (timeoutSeconds !== undefined && wait === undefined) throw usage("--timeout goes with --wait");
    const threshold = numberFlag(args, "threshold", command);
    if (selfUpgrade && listFlag(args, "trusted-key").length === 0) {
      throw usage(
        "--self-upgrade needs at least one --trusted-key: the release is verified against keys this machine already trusts",
      );
    }
    const inventoryFile = stringFlag(args, "inventory", command);
    if (inventoryFile !== undefined && args.values["collect-inventory"] === true)
      throw usage("give --inventory or --collect-inventory, not both");

    // Everything read from disk is read before the network is touched, so a typo in a path
    // does not cost a registration.
    const trustedKeys = await trustedKeysOf(args);
    const mirrorCaFile = stringFlag(args, "mirror-ca", command);
    const mirrorCa = mirrorCaFile === undefined ? undefined : await readTextFile(mirrorCaFile, "mirror CA");
    let inventory: Inventory | undefined;
    if (inventoryFile !== undefined) {
      const value = await readJsonFile(inventoryFile, "inventory");
      if (typeof value !== "object" || value === null || Array.isArray(value))
        throw new CliError("FILE_ERROR", `the inventory ${inventoryFile} is not a JSON object`);
      inventory = value as Inventory;
    } else if (args.values["collect-inventory"] === true) {
      inventory = await collectInventory({ signal: ctx.signal });
    }

    const opened = await openIdentityDir(dir, { create: true, warn: (text) => ctx.out.warn(text) });
    const { identity } = opened;
    ctx.out.say(
      `${opened.created ? "created a new machine identity in" : "using the machine identity in"} ${dir} (key ${identity.keyFingerprint.slice(0, 23)}…)`,
    );

    const details = {
      ...target,
      identity,
      selfUpgrade,
      hostname: stringFlag(args, "hostname", command) ?? osHostname(),
      ...(stringFlag(args, "serial", command) !== undefined
        ? { systemSerial: stringFlag(args, "serial", command)! }
        : {}),
      ...(inventory ? { inventory } : {}),
      signal: ctx.signal,
    };
    let result = await registerMachine({ ...details, release });
    let sessionFile = await saveSession(dir, result.session);
    ctx.out.say(
      `${result.created ? "registered" : "already registered"} with the cluster at ${result.session.endpoint} as ${result.session.joinId}`,
    );
    ctx.out.say(`cluster CA ${result.session.caFingerprint}`);
    ctx.out.say("");
    for (const line of pairingBanner(result.registration.pairingCode)) ctx.out.say(`  ${line}`);
    ctx.out.say("");
    const report = stateReporter(ctx);
    report(result.registration);

    let upgraded: DownloadedRelease | undefined;
    const upgrade = result.registration.state === "needs-upgrade" ? result.registration.upgrade : undefined;
    if (upgrade) {
      if (!SAFE_RELEASE.test(upgrade.to))
        throw new StratumError("RESPONSE_INVALID", "the cluster names a release that is not a safe directory name");
      upgraded = await downloadUpgrade(ctx, {
        upgrade,
        destDir: join(dir, IDENTITY_FILES.release, upgrade.to),
        trustedKeys,
        ...(threshold !== undefined ? { threshold } : {}),
        ...(mirrorCa !== undefined ? { mirrorCa } : {}),
        session: result.session,
        identity,
      });
      // The same key on the cluster's release: the founder moves the registration to pending.
      ctx.out.say(`registering again on release ${upgrade.to}`);
      result = await registerMachine({ ...details, release: upgrade.to });
      sessionFile = await saveSession(dir, result.session);
      report(result.registration);
    }
    ctx.out.say(`join session saved to ${sessionFile}`);

    let registration = result.registration;
    let delivery: WrittenDelivery | undefined;
    if (wait !== undefined) {
      const outcome = await waitForState(ctx, {
        session: result.session,
        identity,
        dir,
        until: wait,
        ...(timeoutSeconds !== undefined ? { timeoutMs: timeoutSeconds * 1000 } : {}),
      });
      registration = outcome.registration;
      delivery = outcome.delivery;
    } else if (registration.delivery) {
      // Registering again while delivering answers the delivery: keep it, as a wait would.
      delivery = await writeDelivery(join(dir, IDENTITY_FILES.delivery), registration.delivery);
      ctx.out.say(`delivery for node ${registration.delivery.nodeId} written to ${delivery.dir} (files 0600)`);
    }

    const document = {
      joinId: result.session.joinId,
      state: registration.state,
      pairingCode: registration.pairingCode,
      created: result.created,
      endpoint: result.session.endpoint,
      caFingerprint: result.session.caFingerprint,
      keyFingerprint: identity.keyFingerprint,
      release: result.session.release,
      identity: { dir, created: opened.created },
      sessionFile,
      ...(upgraded
        ? {
            upgrade: {
              from: upgrade!.from,
              to: upgraded.release,
              dir: join(dir, IDENTITY_FILES.release, upgraded.release),
              files: upgraded.files.length,
              bytesFetched: upgraded.bytesFetched,
              signedBy: upgraded.signedBy,
            },
          }
        : {}),
      ...(delivery ? { delivery: { dir: delivery.dir, files: delivery.files } } : {}),
      registration: printable(registration),
    };
    ctx.out.result(
      document,
      wait !== undefined
        ? `done: ${registration.state}`
        : `done: ${registration.state}; run 'stratum-join status --identity ${dir}' to look again`,
    );
  },
};
