/**
 * Steps the joiner commands share: the join target from the flags, waiting for a state while printing each change, and the self-upgrade
 * download with its progress bar.
 * @module
 */

import { join } from "node:path";
import { isFinalState } from "../core/join-states.js";
import { RegistrationEndedError, StratumError, TimeoutError } from "../errors/index.js";
import { writeDelivery, type WrittenDelivery } from "../node/delivery.js";
import type { MachineIdentity } from "../node/identity.js";
import type { JoinTarget } from "../node/joiner.js";
import type { JoinSession } from "../node/join-session.js";
import { reportProgress, watchRegistration } from "../node/registration.js";
import { downloadRelease } from "../node/self-upgrade.js";
import type { DownloadedRelease, DownloadReleaseOptions, ReleaseProgress } from "../release/download/index.js";
import type { JoinState, Registration } from "../types.js";
import {
  CliError,
  listFlag,
  stringFlag,
  type CommandContext,
  type CommandSpec,
  type FlagSpec,
  type ParsedArgs,
} from "./args.js";
import { IDENTITY_FILES, readTextFile } from "./files.js";
import { formatBytes } from "./output.js";

/** A release name safe as a directory name: it comes from the cluster and becomes `DIR/release/<version>`. */
export const SAFE_RELEASE = /^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$/;

/** The flags that name the join listener and the code. */
export const TARGET_FLAGS: Readonly<Record<string, FlagSpec>> = {
  url: {
    type: "string",
    value: "URL",
    env: "STRATUM_JOIN_URL",
    description:
      "the join URL stratum-join://HOST[:PORT]/XXXX-XXXX-XXX (secret: prefer the env var, argv is visible to other local users)",
  },
  endpoint: { type: "string", value: "HOST[:PORT]", description: "the join listener, instead of --url (with --code)" },
  code: { type: "string", value: "CODE", description: "the join code, instead of --url (with --endpoint)" },
};

/** The join target the flags name: `--url` (or `STRATUM_JOIN_URL`), or `--endpoint` with `--code`. */
export function joinTargetOf(args: ParsedArgs, command: CommandSpec): JoinTarget {
  const endpoint = stringFlag(args, "endpoint", command);
  const code = stringFlag(args, "code", command);
  // An explicit --endpoint/--code wins over a STRATUM_JOIN_URL left in the environment.
  if (endpoint !== undefined || code !== undefined) {
    if (endpoint === undefined || code === undefined)
      throw new CliError("USAGE", "--endpoint and --code go together", { command: command.path.join(" ") });
    return { endpoint, code };
  }
  const url = stringFlag(args, "url", command);
  if (url === undefined)
    throw new CliError("USAGE", "--url is required (or set STRATUM_JOIN_URL, or give --endpoint and --code)", {
      command: command.path.join(" "),
    });
  return { url };
}

/** The trusted release keys of `--trusted-key FILE` (PEM), read from disk. */
export async function trustedKeysOf(args: ParsedArgs): Promise<string[]> {
  return Promise.all(listFlag(args, "trusted-key").map((file) => readTextFile(file, "trusted release key")));
}

/** One line about a registration's state, for a person. */
export function describeState(view: Registration): string {
  const extra = (() => {
    switch (view.state) {
      case "needs-upgrade":
        return view.upgrade
          ? `must upgrade itself from ${view.upgrade.from} to ${view.upgrade.to} first`
          : "must upgrade itself first";
      case "pending":
        return `waiting for an operator to approve it (pairing code ${view.pairingCode})`;
      case "approved":
        return view.waitReason ? `approved; ${view.waitReason}` : "approved";
      case "delivering":
        return "approved; the delivery is ready";
      case "installing":
        return "installing";
      case "joined":
        return "joined the cluster";
      case "failed":
        return `failed${view.failedStep ? ` at ${view.failedStep}` : ""}${view.failedError ? `: ${view.failedError}` : ""} (an operator may retry it)`;
      case "rejected":
        return `rejected${view.reason ? `: ${view.reason}` : ""}`;
      case "expired":
        return "expired: register again with a live join code";
      default:
        return "";
    }
  })();
  return `state ${view.state}${extra ? ` — ${extra}` : ""}`;
}

/** Prints each view whose state (or wait reason) differs from the last one printed. */
export function stateReporter(ctx: CommandContext): (view: Registration) => void {
  let last = "";
  return (view) => {
    const key = `${view.state}|${view.waitReason ?? ""}|${view.failedStep ?? ""}`;
    if (key === last) return;
    last = key;
    ctx.out.say(`${new Date().toISOString().slice(11, 19)}  ${describeState(view)}`);
  };
}

/** What {@link waitForState} did. */
export interface WaitOutcome {
  registration: Registration;
  /** Where the delivery was written, when one passed by. */
  delivery?: WrittenDelivery;
}

/**
 * Watches the registration until `until`, printing each change. The first view that carries
 * a delivery has it written to `DIR/delivery` (all files 0600), whatever state is awaited: a
 * machine waiting for `joined` must still keep what it was delivered.
 * @throws RegistrationEndedError in a final state other than `until`; TimeoutError after
 *   `timeoutMs`; the signal's reason on Ctrl-C
 */
export async function waitForState(
  ctx: CommandContext,
  options: { session: JoinSession; identity: MachineIdentity; dir: string; until: JoinState; timeoutMs?: number },
): Promise<WaitOutcome> {
  const timeout = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
  const signal = timeout ? AbortSignal.any([ctx.signal, timeout]) : ctx.signal;
  const report = stateReporter(ctx);
  let delivery: WrittenDelivery | undefined;
  try {
    for await (const view of watchRegistration(options.session, options.identity, {
      signal,
      onRetry: (error, delayMs) =>
        ctx.out.say(
          `listener unreachable or busy (${(error as { code?: string }).code ?? "error"}); retrying in ${Math.ceil(delayMs / 1000)} s`,
        ),
    })) {
      report(view);
      if (view.delivery && !delivery) {
        delivery = await writeDelivery(join(options.dir, IDENTITY_FILES.delivery), view.delivery);
        ctx.out.say(`delivery for node ${view.delivery.nodeId} written to ${delivery.dir} (files 0600)`);
      }
      if (view.state === options.until) return { registration: view, ...(delivery ? { delivery } : {}) };
      if (isFinalState(view.state)) throw new RegistrationEndedError(view);
    }
    throw new StratumError("REGISTRATION_ENDED", "the registration's watch ended without a view");
  } catch (error) {
    if (timeout?.aborted && !ctx.signal.aborted) {
      throw new TimeoutError(
        `the registration did not reach ${options.until} within ${Math.round(options.timeoutMs! / 1000)} s`,
      );
    }
    throw error;
  }
}

/** A progress line for the download. */
function progressLine(release: string, p: ReleaseProgress): string {
  const ratio = p.bytesTotal > 0 ? Math.min(1, p.bytesDone / p.bytesTotal) : 1;
  const width = 24;
  const filled = Math.round(ratio * width);
  return `release ${release} [${"█".repeat(filled)}${"░".repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%  ${formatBytes(p.bytesDone)}/${formatBytes(p.bytesTotal)}  ${p.filesDone}/${p.filesTotal} files  ${formatBytes(p.bytesPerSecond)}/s`;
}

/**
 * Downloads and verifies the release `upgrade` names into `destDir`, from its mirror or from
 * the founder (with the session and identity), drawing a progress bar on a terminal. With a
 * session, the upgrade is also reported to the founder as step `upgrade/download` (best
 * effort: a report that fails does not fail the download, but a failed download is reported
 * so the console shows why the machine is stuck).
 */
export async function downloadUpgrade(
  ctx: CommandContext,
  options: {
    upgrade: DownloadReleaseOptions["upgrade"];
    destDir: string;
    trustedKeys: readonly string[];
    threshold?: number;
    mirrorCa?: string;
    session?: JoinSession;
    identity?: MachineIdentity;
  },
): Promise<DownloadedRelease> {
  const { upgrade } = options;
  const from = upgrade.source ? `the mirror ${upgrade.source}` : upgrade.served ? "the founder" : "the source";
  ctx.out.say(`downloading release ${upgrade.to} from ${from} into ${options.destDir}`);
  const step = (status: "running" | "done" | "failed", message?: string) =>
    options.session && options.identity
      ? reportProgress(options.session, options.identity, {
          steps: [
            {
              name: "upgrade/download",
              title: "Downloading the cluster's release",
              status,
              at: new Date().toISOString(),
              ...(message ? { message } : {}),
            },
          ],
          signal: ctx.signal,
        }).then(
          () => undefined,
          () => undefined,
        )
      : Promise.resolve();
  await step("running");
  try {
    const downloaded = await downloadRelease({
      upgrade,
      destDir: options.destDir,
      trustedKeys: options.trustedKeys,
      ...(options.threshold !== undefined ? { threshold: options.threshold } : {}),
      ...(options.mirrorCa !== undefined ? { mirror: { ca: options.mirrorCa } } : {}),
      ...(options.session ? { session: options.session } : {}),
      ...(options.identity ? { identity: options.identity } : {}),
      signal: ctx.signal,
      onProgress: (p) => ctx.out.progress(progressLine(upgrade.to, p)),
    });
    ctx.out.clearProgress();
    const total = downloaded.files.reduce((sum, f) => sum + f.size, 0);
    ctx.out.say(
      `release ${downloaded.release} verified: ${downloaded.files.length} files, ${formatBytes(total)} (${formatBytes(downloaded.bytesFetched)} fetched), signed by ${downloaded.signedBy.map((k) => k.slice(0, 16)).join(", ")}`,
    );
    await step("done");
    return downloaded;
  } catch (error) {
    ctx.out.clearProgress();
    if (!ctx.signal.aborted) await step("failed", (error as Error).message);
    throw error;
  }
}
