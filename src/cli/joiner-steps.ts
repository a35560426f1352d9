/**
 * Steps the joiner commands share: the join target from the flags, a state in words, and the
 * self-upgrade download with its progress bar. Waiting for a state is in watch.ts.
 * @module
 */

import type { MachineIdentity } from "../node/identity.js";
import type { JoinTarget } from "../node/join-calls.js";
import type { JoinSession } from "../node/join-session.js";
import { reportProgress } from "../node/registration.js";
import { downloadRelease } from "../node/self-upgrade.js";
import type { DownloadedRelease, DownloadReleaseOptions, ReleaseProgress } from "../transport/download/index.js";
import { StratumApiError, StratumError } from "../errors/index.js";
import type { Registration } from "../types.js";
import { CliError } from "../errors/cli.js";
import {
  listFlag,
  stringFlag,
  type CommandContext,
  type FlagSpec,
  type ParsedArgs,
  type TARGET_FLAGS,
} from "./args.js";
import { readTextFile } from "./files.js";
import { formatBytes } from "./output.js";
import { printable, printableView, type Style } from "./style.js";

/** A release name safe as a directory name: it comes from the cluster and becomes `DIR/release/<version>`. */
export { SAFE_RELEASE_NAME as SAFE_RELEASE } from "../node/machine-dir.js";

/** The join target the flags name: `--url` (or `STRATUM_JOIN_URL`), or `--endpoint` with `--code`. */
export function joinTargetOf(args: ParsedArgs<typeof TARGET_FLAGS>): JoinTarget {
  const command = args.command;
  const endpoint = stringFlag(args, "endpoint");
  const code = stringFlag(args, "code");
  // An explicit --endpoint/--code wins over a STRATUM_JOIN_URL left in the environment.
  if (endpoint !== undefined || code !== undefined) {
    if (endpoint === undefined || code === undefined)
      throw new CliError("USAGE", "--endpoint and --code go together", { command: command.path.join(" ") });
    return { endpoint, code };
  }
  const url = stringFlag(args, "url");
  if (url === undefined)
    throw new CliError("USAGE", "--url is required (or set STRATUM_JOIN_URL, or give --endpoint and --code)", {
      command: command.path.join(" "),
    });
  return { url };
}

/**
 * The `onRetry` of `register` and `check`: one warning per wait, saying why (the founder busy,
 * or the listener unreachable) and for how long, so a person sees the machine is not stuck.
 */
export function retryNotice(ctx: CommandContext): (error: StratumError, delayMs: number) => void {
  return (error, delayMs) => {
    const seconds = Math.max(1, Math.ceil(delayMs / 1000));
    // A refusal says what it waits for (only its code and numbers, never the listener's text).
    if (error instanceof StratumApiError) ctx.out.say(busyLine(error, delayMs));
    else
      ctx.out.warn(`the join listener cannot be reached (${printable(causeOf(error))}); trying again in ${seconds} s`);
  };
}

/**
 * What a refusal that is waited out means, for a person at the machine: one line per wait,
 * with what it waits for. Only what the code and the numbers say is repeated, never the
 * listener's free text: a refusal of the first message (the KE1) comes before the listener
 * proved it holds the code (docs/protocol.md#nothing-before-proof).
 */
export function busyLine(error: StratumApiError, delayMs: number): string {
  const wait = `trying again in ${Math.max(1, Math.round(delayMs / 1000))} s`;
  const waiting = error.details?.waiting;
  const max = error.details?.maxWaiting;
  switch (error.code) {
    case "RATE_LIMITED":
      return typeof waiting === "number" && typeof max === "number"
        ? `the cluster turned the registration away for now: ${waiting} registrations already wait for an operator's decision, the most it keeps (${max}); approving, rejecting or expiring one frees a slot; ${wait}`
        : `the join listener is rate limiting this address (RATE_LIMITED); ${wait}`;
    case "JOIN_CODE_BUSY":
      return `the join code is busy: other machines are proving it right now (JOIN_CODE_BUSY); ${wait}`;
    case "UPGRADE_IN_PROGRESS":
      return `the cluster is upgrading (UPGRADE_IN_PROGRESS); ${wait}`;
    case "STORAGE_UNAVAILABLE":
      return `the founder cannot save anything: its disk is full (STORAGE_UNAVAILABLE); ${wait}`;
    default:
      return `the join listener is busy (${error.status} ${printable(error.code)}); ${wait}`;
  }
}

/** The transport's reason for a person: `ECONNREFUSED`, `503 UPGRADE_IN_PROGRESS`, `TIMEOUT`. */
export function causeOf(error: unknown): string {
  if (error instanceof StratumApiError) return `${error.status} ${error.code}`;
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return StratumError.is(error) ? error.code : "error";
}

/** The `--trusted-key FILE` flag (repeatable) of the commands that verify a release. */
type TrustedKeyFlags = { readonly "trusted-key": FlagSpec & { type: "string"; multiple: true } };

/** The trusted release keys of `--trusted-key FILE` (PEM), read from disk. */
export async function trustedKeysOf(args: ParsedArgs<TrustedKeyFlags>): Promise<string[]> {
  return Promise.all(listFlag(args, "trusted-key").map((file) => readTextFile(file, "trusted release key")));
}

/**
 * One line about a registration's state, for a person; the state in its colour where `style`
 * paints. The view's strings (reasons, failed steps) are the founder's, made printable.
 */
export function describeState(unsafeView: Registration, style?: Style): string {
  const view = printableView(unsafeView);
  const extra = (() => {
    switch (view.state) {
      case "needs-upgrade":
        return view.upgrade
          ? `must upgrade itself from ${view.upgrade.from} to ${view.upgrade.to} first`
          : "must upgrade itself first";
      case "pending":
        // waitReason is what follows "waiting for" (spec: Registration.waitReason).
        return view.waitReason
          ? `not approvable now (pairing code ${view.pairingCode}): waiting for ${view.waitReason}`
          : `waiting for approval (pairing code ${view.pairingCode})`;
      case "approved":
        return view.waitReason ? `waiting for ${view.waitReason}` : "";
      case "delivering":
        return "the delivery is ready";
      case "installing":
        return "";
      case "joined":
        return "joined the cluster";
      case "failed":
        return `${failureOf(view)} (an operator may retry it)`;
      case "rejected":
        return `rejected${view.reason ? `: ${view.reason}` : ""}`;
      case "expired":
        return "expired: register again with a live join code";
      default:
        return "";
    }
  })();
  return `state ${style ? style.state(view.state) : view.state}${extra ? ` — ${extra}` : ""}`;
}

/**
 * A failure in words: by the step that failed, or, for the founder's own step names, by who
 * ended it (`operator`: an operator failed it, `stalled`: the founder, after the machine went
 * silent); "failed at operator" says nothing to a person.
 */
export function failureOf(view: Pick<Registration, "failedStep" | "failedError">): string {
  const error = view.failedError ? `: ${view.failedError}` : "";
  if (view.failedStep === "operator") return `failed by an operator${error}`;
  if (view.failedStep === "stalled") return `failed by the founder${error}`;
  return `failed${view.failedStep ? ` at step ${view.failedStep}` : ""}${error}`;
}

/** A progress line for the download. */
function progressLine(release: string, p: ReleaseProgress, style: Style): string {
  const ratio = p.bytesTotal > 0 ? Math.min(1, p.bytesDone / p.bytesTotal) : 1;
  const width = 24;
  const filled = Math.round(ratio * width);
  return `release ${release} [${style.cyan("█".repeat(filled))}${style.dim("░".repeat(width - filled))}] ${String(Math.floor(ratio * 100)).padStart(3)}%  ${formatBytes(p.bytesDone)}/${formatBytes(p.bytesTotal)}  ${p.filesDone}/${p.filesTotal} files  ${formatBytes(p.bytesPerSecond)}/s`;
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
    threshold?: number | undefined;
    mirrorCa?: string | undefined;
    /** `--proxy`: the HTTP proxy to reach a mirror through (never the founder). */
    proxy?: string | undefined;
    session?: JoinSession | undefined;
    identity?: MachineIdentity | undefined;
  },
): Promise<DownloadedRelease> {
  const { upgrade } = options;
  const from = upgrade.source
    ? `the mirror ${printable(upgrade.source)}`
    : upgrade.served
      ? "the founder"
      : "the source";
  ctx.out.say(`downloading release ${printable(upgrade.to)} from ${from} into ${options.destDir}`);
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
      ...(options.mirrorCa !== undefined || options.proxy !== undefined
        ? {
            mirror: {
              ...(options.mirrorCa !== undefined ? { ca: options.mirrorCa } : {}),
              ...(options.proxy !== undefined ? { proxy: options.proxy } : {}),
            },
          }
        : {}),
      ...(options.session ? { session: options.session } : {}),
      ...(options.identity ? { identity: options.identity } : {}),
      signal: ctx.signal,
      onProgress: (p) => ctx.out.progress(progressLine(printable(upgrade.to), p, ctx.out.errStyle)),
    });
    ctx.out.clearProgress();
    const total = downloaded.files.reduce((sum, f) => sum + f.size, 0);
    ctx.out.say(
      `release ${printable(downloaded.release)} verified: ${downloaded.files.length} files, ${formatBytes(total)} (${formatBytes(downloaded.bytesFetched)} fetched), signed by ${downloaded.signedBy.map((k) => k.slice(0, 16)).join(", ")}`,
    );
    await step("done");
    return downloaded;
  } catch (error) {
    ctx.out.clearProgress();
    if (!ctx.signal.aborted) await step("failed", (error as Error).message);
    throw error;
  }
}
