/**
 * `collectInventory`: what a joining Linux machine reports about itself.
 * @module
 */

import path from "node:path";
import { abortReason, throwIfAborted } from "../../core/retry.js";
import { StratumError } from "../../errors/index.js";
import { collectDisks, runLsblk } from "./disks.js";
import { collectNics, runIp } from "./nics.js";
import { defaultRunCommand, isDirectory, recordedRunCommand, type RunCommand, type SourceContext } from "./source.js";
import { collectCpu, collectMemoryBytes, isNtpSynchronized, isUefi, readOsDiskLayout } from "./system.js";
import type { Inventory } from "./types.js";

/** Options of {@link collectInventory}. */
export interface CollectInventoryOptions {
  /** Aborts the collection; the abort is re-thrown as the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * A directory standing in for `/`, holding `sys/`, `proc/` (and optionally `dev/disk/by-id`,
   * `run/udev/data`, `etc/stratum/install.json`, `run/systemd/timesync/synchronized`) plus the
   * recorded outputs `lsblk.json`, `ip-addr.json`, `ip-route.json` and `timedatectl-ntp.txt`. Default `/`, the live system. With any other root the
   * real tools are never run, and Node's own view of the network is not used.
   */
  root?: string | undefined;
  /**
   * Runs `lsblk`, `ip` and `timedatectl`. Default: the real tools on the live system, the recordings under
   * any other root. Rejecting means "tool not available" and triggers the /sys and /proc
   * fallback, so a replacement can simulate a missing tool.
   */
  runCommand?: RunCommand | undefined;
  /** The install record to read `osDiskLayout` from. Default `<root>/etc/stratum/install.json`. */
  installRecord?: string | undefined;
}

/**
 * Collects the inventory of this Linux machine (or of a recorded root) from /sys, /proc and,
 * where present, `lsblk` and `ip`, whose absence only makes some fields fall back to /sys and
 * /proc or stay unknown; it never fails the call. An absent optional field means "not known
 * here", an empty array "none". `clock.ntpSynchronized` says whether NTP synchronises the
 * clock, where the system says so (systemd); the clock's offset from the founder's is added at
 * registration.
 *
 * @throws {StratumError} `INVENTORY_UNSUPPORTED` off Linux (for the live system) or when the
 *   root holds no `sys/` and `proc/`; `INVENTORY_FAILED` for an unexpected failure, with
 *   the cause attached. An abort through `signal` is re-thrown as the signal's reason.
 */
export async function collectInventory(options: CollectInventoryOptions = {}): Promise<Inventory> {
  const { signal } = options;
  throwIfAborted(signal);
  const root = path.resolve(options.root ?? "/");
  const live = root === path.parse(root).root;
  // A recorded root is plain files, readable anywhere; only the live system must be Linux.
  if (live && process.platform !== "linux") {
    throw new StratumError("INVENTORY_UNSUPPORTED", `the machine inventory needs Linux, not ${process.platform}`);
  }
  if (!(await isDirectory(path.join(root, "sys"))) || !(await isDirectory(path.join(root, "proc")))) {
    throw new StratumError("INVENTORY_UNSUPPORTED", `no sys/ and proc/ under ${root}`);
  }
  const ctx: SourceContext = {
    root,
    live,
    signal,
    run: options.runCommand ?? (live ? defaultRunCommand : recordedRunCommand(root)),
  };

  try {
    // The tools run concurrently: together they are most of the wall time.
    const [lsblk, [ipAddr, ipRoute]] = await Promise.all([runLsblk(ctx), runIp(ctx)]);
    const [disks, nics, cpu, memoryBytes, uefi, osDiskLayout, ntpSynchronized] = await Promise.all([
      collectDisks(ctx, lsblk),
      collectNics(ctx, ipAddr, ipRoute),
      collectCpu(ctx),
      collectMemoryBytes(ctx),
      isUefi(ctx),
      readOsDiskLayout(options.installRecord ?? path.join(root, "etc/stratum/install.json")),
      isNtpSynchronized(ctx),
    ]);
    throwIfAborted(signal);
    const inventory: Inventory = { uefi, disks, nics, cpu };
    if (memoryBytes !== undefined) inventory.memoryBytes = memoryBytes;
    if (osDiskLayout !== undefined) inventory.osDiskLayout = osDiskLayout;
    // The offset from the founder's clock is measured at the PAKE and added by registerMachine.
    if (ntpSynchronized !== undefined) inventory.clock = { ntpSynchronized };
    return inventory;
  } catch (error) {
    if (signal?.aborted) throw abortReason(signal);
    if (StratumError.is(error)) throw error;
    throw new StratumError("INVENTORY_FAILED", "collecting the machine inventory failed", { cause: error });
  }
}
