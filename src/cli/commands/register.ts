/**
 * `stratum-join register`: the installer's stage 1 in one command. Creates (or loads) the
 * machine identity, registers with the join code, shows the pairing code, upgrades itself
 * when the cluster runs a newer release, saves the join session, and optionally waits for a
 * state, writing the delivery when it arrives.
 *
 * Declarations only (words, flags, help), read by `--help` and the parser; what the command
 * does is `src/cli/actions/register.ts`, loaded only when it runs.
 * @module
 */

import { JOIN_STATES } from "../../core/join-states.js";
import { defineFlags, SECRETS_FLAG, TARGET_FLAGS, type CommandSpec } from "../args.js";

const registerFlags = defineFlags({
  ...TARGET_FLAGS,
  identity: {
    type: "string",
    value: "DIR",
    description: "the machine directory: identity, session.json, release/, delivery/",
    required: true,
  },
  release: { type: "string", value: "VERSION", description: "the release this machine runs", required: true },
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
  proxy: {
    type: "string",
    value: "URL",
    description:
      "the HTTP proxy to reach a release mirror through, http://[user:password@]host[:port] (default: HTTPS_PROXY and NO_PROXY; never used for the founder)",
  },
  inventory: {
    type: "string",
    value: "FILE",
    description:
      "send this hardware inventory, JSON (the API's Inventory), instead of the one collected from this machine",
  },
  "no-inventory": {
    type: "boolean",
    description:
      "send no hardware inventory, only the clock's offset (the approval then needs an assignment naming the NICs; the default approval is refused)",
  },
  // The old spelling, from when collecting was not the default: scripts that pass it keep working.
  "collect-inventory": {
    type: "boolean",
    hidden: true,
    description: "collect the inventory of this Linux machine (the default)",
  },
  hostname: { type: "string", value: "NAME", description: "the host name to register (default: this machine's)" },
  serial: { type: "string", value: "SERIAL", description: "the system serial number to register" },
  wait: {
    type: "string",
    value: "STATE",
    description: "wait until the registration reaches STATE (e.g. delivering, joined)",
  },
  timeout: {
    type: "string",
    value: "SECONDS",
    description:
      "give up waiting after this long: exit 18 (STILL_WAITING) while the cluster answers, 9 (TIMEOUT) while it does not",
  },
  secrets: SECRETS_FLAG,
});

/** `register`. */
export const register: CommandSpec<typeof registerFlags> = {
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
    "On Linux the machine's inventory (NICs, disks, CPU, memory, from /sys, /proc, lsblk and",
    "ip) is collected and sent with the registration: the default approval reads the NICs and",
    "disks from it. --inventory FILE sends a file instead, --no-inventory no hardware (the",
    "clock's offset from the founder's is always reported).",
    "",
    "With --wait STATE the command waits until the registration reaches STATE, printing each",
    "state as it changes; a delivery that arrives on the way is written: its public files and",
    "the node key to DIR/delivery (0600), each secret where --secrets FILE says (JSON, field →",
    "destination), the OpenBao unseal key sealed to this machine's TPM. A delivery with a",
    "secret --secrets names no destination for is refused before anything is written (exit",
    "13). A final state other than STATE (rejected, expired) exits 7. Ctrl-C stops the wait",
    "(exit 130); running register again picks the same registration up.",
    "",
    `States: ${JOIN_STATES.join(", ")}.`,
  ].join("\n"),
  flags: registerFlags,
  examples: [
    {
      comment: "register with the code in the environment, and wait for the delivery",
      command:
        "stratum-join register --identity /var/lib/stratum-join --release 0.6.0 --wait delivering --secrets secrets.json",
    },
    {
      comment: "an older installer: upgrade to the cluster's release first",
      command:
        "stratum-join register --identity /var/lib/stratum-join --release 0.5.0 --self-upgrade --trusted-key release.pub",
    },
    {
      comment: "in a script: one JSON document, the state in it",
      command: "stratum-join register --identity /var/lib/stratum-join --release 0.6.0 --json | jq -r .state",
    },
  ],
  result:
    "{joinId, state, pairingCode, created, endpoint, caFingerprint, keyFingerprint, release, clockOffsetSeconds, identity: {dir, created}, sessionFile, upgrade?: {from, to, dir, files, bytesFetched, signedBy}, delivery?: {dir, files, secrets}, registration}",
  load: async () => (await import("../actions/register.js")).runRegister,
};
