/**
 * The CLI's exit codes: one per kind of outcome a script branches on, mapped from the error
 * `code` the SDK throws. A script that needs more than the kind reads `error.code` from the
 * `--json` document; the exit code says what to do next (fix the input, retry later, stop
 * because someone may be on the line).
 * @module
 */

import { isAbortError, StratumApiError, StratumError } from "../errors/index.js";

/** One row of the exit-code table: the exit code, what it means for a script, and the error codes mapped to it. */
export interface ExitCodeRow {
  /** The process exit code. */
  exit: number;
  /** What it means, and what to do about it. */
  meaning: string;
  /** A few words for the list in `stratum-join --help`. */
  summary: string;
  /** The error `code`s that exit with it (`*` rows are described in `meaning`). */
  codes: readonly string[];
}

/**
 * The table, as `stratum-join help exit-codes` and docs/cli.md show it. Order matters only for
 * reading; a code appears in one row. `130` (interrupted) is not an error code: the run was
 * stopped by Ctrl-C (SIGINT).
 */
export const EXIT_CODE_TABLE: readonly ExitCodeRow[] = [
  { exit: 0, summary: "success", meaning: "success", codes: [] },
  {
    exit: 1,
    summary: "unexpected: a bug or a server fault; report it",
    meaning:
      "unexpected: a bug, a server error, an answer that does not match the API (report it, with the request id)",
    codes: [
      "INTERNAL",
      "RESPONSE_INVALID",
      "RESPONSE_TOO_LARGE",
      "UNEXPECTED",
      "UNSUPPORTED_MEDIA_TYPE",
      "HTTP_5xx",
      "any code not listed here",
    ],
  },
  {
    exit: 2,
    summary: "usage: a wrong command, flag or argument",
    meaning: "usage: an unknown command or flag, a missing or malformed argument",
    codes: ["USAGE", "INVALID_ARGUMENT"],
  },
  {
    exit: 3,
    summary: "a malformed join code, join URL or pairing code; fix the typo",
    meaning: "a join code, join URL or pairing code is malformed (caught locally, nothing was sent); fix the typo",
    codes: ["JOIN_CODE_MALFORMED", "JOIN_URL_MALFORMED", "PAIRING_CODE_MALFORMED"],
  },
  {
    exit: 4,
    summary: "the join code is not accepted by this listener",
    meaning: "the join code is not accepted: mistyped (but well formed), or this is not the cluster's join listener",
    codes: ["LISTENER_NOT_PROVEN", "JOIN_CODE_INVALID"],
  },
  {
    exit: 5,
    summary: "the join code is over; ask for a new one",
    meaning: "the join code is over: expired, revoked, or made stale by a CA rotation; ask for a new one",
    codes: ["JOIN_CODE_EXPIRED", "JOIN_CODE_REVOKED", "JOIN_CODE_STALE"],
  },
  {
    exit: 6,
    summary: "the cluster does not take this machine's release",
    meaning: "the machine's release is not one the cluster takes (see details.clusterRelease, details.isoPath)",
    codes: ["RELEASE_MISMATCH"],
  },
  {
    exit: 7,
    summary: "the registration is over (rejected, or ended)",
    meaning: "the registration is over: rejected (see the reason), or ended in a state not waited for",
    codes: ["REGISTRATION_REJECTED", "REGISTRATION_ENDED"],
  },
  {
    exit: 8,
    summary: "retry later: rate limited or busy",
    meaning:
      "retry later (after retryAfter seconds when given): rate limited, a cluster upgrade in progress, the founder busy or its disk full",
    codes: [
      "RATE_LIMITED",
      "UPGRADE_IN_PROGRESS",
      "RELEASE_BUSY",
      "JOIN_PAKE_RESTART",
      "JOIN_CODE_BUSY",
      "STORAGE_UNAVAILABLE",
    ],
  },
  {
    exit: 9,
    summary: "the network: no answer, a timeout, TLS failed",
    meaning: "the network: no answer, a timeout, TLS failed; retry when the network is back",
    codes: ["NETWORK", "TIMEOUT", "TLS_FAILED", "CONNECTION_CHANGED"],
  },
  {
    exit: 10,
    summary: "possible attack: do not retry blindly, do not approve",
    meaning:
      "possible attack: the listener or the channel is not who it claims (a relay between the machine and the cluster, or an unproven listener refusing as a cluster's never does); do not retry blindly, do not approve",
    codes: [
      "LISTENER_CERTIFICATE",
      "BINDING_MISMATCH",
      "PAIRING_MISMATCH",
      "JOIN_BINDING_FAILED",
      "CONNECTION_INTERCEPTED",
      "REFUSAL_UNPROVEN",
    ],
  },
  {
    exit: 11,
    summary: "the release failed verification: never install it",
    meaning: "the release failed verification (signature, release, path, size or hash): never install it",
    codes: ["RELEASE_UNVERIFIED"],
  },
  {
    exit: 12,
    summary: "the admin token is wrong or lacks the permission",
    meaning: "the admin token is wrong, expired, or lacks the permission (no token at all is a usage error, 2)",
    codes: ["UNAUTHORIZED", "FORBIDDEN"],
  },
  {
    exit: 13,
    summary: "refused as it stands: fix the input or wait",
    meaning:
      "the request was refused as it stands: fix the input (see error.errors, or the secrets with no destination in error.fields) or wait for another state",
    codes: [
      "INVALID_INPUT",
      "JOIN_APPROVAL_REFUSED",
      "JOIN_STATE_CONFLICT",
      "RANGE_NOT_SATISFIABLE",
      "NO_UPGRADE",
      "SECRET_DESTINATION_MISSING",
      "SECRET_DESTINATION_INVALID",
    ],
  },
  {
    exit: 14,
    summary: "not found",
    meaning: "not found: no such join code, join or member (or not this key's registration)",
    codes: ["NOT_FOUND"],
  },
  {
    exit: 15,
    summary: "a local file or directory cannot be used",
    meaning:
      "local state: the machine directory, session file, delivery directory, a secret's destination, the TPM or another file cannot be used",
    codes: [
      "IDENTITY_INVALID",
      "IDENTITY_MISMATCH",
      "JOIN_SESSION_INVALID",
      "JOIN_SESSION_MISSING",
      "DELIVERY_WRITE_FAILED",
      "SECRET_DESTINATION_FAILED",
      "TPM_UNAVAILABLE",
      "TPM_FAILED",
      "INVENTORY_FAILED",
      "INVENTORY_UNSUPPORTED",
      "FILE_ERROR",
    ],
  },
  {
    exit: 16,
    summary: "the release download failed; run again to resume",
    meaning:
      "the release download failed (retries exhausted, refused, disk full); the .partial files stay, run again to resume",
    codes: ["RELEASE_DOWNLOAD_FAILED"],
  },
  {
    exit: 17,
    summary: "this JavaScript runtime cannot do it; run it on Node",
    meaning:
      "this JavaScript runtime lacks what the command needs (Deno: the TLS exporter a join code's proof is bound to); run it on Node 20.19+ (or Bun)",
    codes: ["RUNTIME_UNSUPPORTED"],
  },
  {
    exit: 18,
    summary: "still waiting: the wait ran out while the cluster answers",
    meaning:
      "still waiting: --timeout ran out while the cluster answered; the registration is where it was (see error.registration, e.g. pending, waiting for an operator); run the same command again to go on waiting",
    codes: ["STILL_WAITING"],
  },
  {
    exit: 130,
    summary: "interrupted (Ctrl-C)",
    meaning: "interrupted (Ctrl-C): waits and downloads stop cleanly; a download resumes on the next run",
    codes: ["ABORTED"],
  },
];

/** Exit code of a successful run. */
export const EXIT_OK = 0;
/** Exit code of anything not in the table. */
export const EXIT_UNEXPECTED = 1;
/** Exit code of a usage error. */
export const EXIT_USAGE = 2;
/** Exit code of a run stopped by Ctrl-C. */
export const EXIT_INTERRUPTED = 130;
/** Exit code of a run stopped by SIGTERM (128 + 15, as a shell reports a process it killed). */
export const EXIT_TERMINATED = 143;

/** True for the exit code of a run stopped by a signal (Ctrl-C or SIGTERM). */
export function isInterruption(exitCode: number): boolean {
  return exitCode === EXIT_INTERRUPTED || exitCode === EXIT_TERMINATED;
}

/**
 * The exit code of a run its signal stopped: SIGTERM's when the signal's reason says so
 * (`{ exitCode: 143 }`, as the executable aborts on SIGTERM), else Ctrl-C's.
 */
function interruptedExitCode(signal: AbortSignal | undefined): number {
  const code = (signal?.reason as { exitCode?: unknown } | undefined)?.exitCode;
  return code === EXIT_TERMINATED ? EXIT_TERMINATED : EXIT_INTERRUPTED;
}

const BY_CODE = new Map<string, number>();
for (const row of EXIT_CODE_TABLE)
  for (const code of row.codes) if (/^[A-Z_]+$/.test(code)) BY_CODE.set(code, row.exit);

/**
 * When the body was not a problem document the code is `HTTP_<status>`; the status still
 * says which kind of refusal it was.
 */
function byStatus(status: number): number {
  if (status === 401 || status === 403) return 12;
  if (status === 404) return 14;
  if (status === 429 || status === 503) return 8;
  if (status === 400 || status === 409 || status === 422) return 13;
  return EXIT_UNEXPECTED;
}

/** The exit code of an error `code` (as found in the table; `1` for any other). */
export function exitCodeForCode(code: string): number {
  return BY_CODE.get(code) ?? EXIT_UNEXPECTED;
}

/**
 * The exit code for whatever a command threw. An abort (Ctrl-C) is 130 whatever the error's
 * shape, since waits re-throw the signal's reason as it is.
 */
export function exitCodeFor(error: unknown, signal?: AbortSignal): number {
  if (signal?.aborted || isAbortError(error)) return interruptedExitCode(signal);
  if (!StratumError.is(error)) return EXIT_UNEXPECTED;
  const known = BY_CODE.get(error.code);
  if (known !== undefined) return known;
  if (error instanceof StratumApiError || (error as { status?: unknown }).status !== undefined) {
    const status = (error as { status?: unknown }).status;
    if (typeof status === "number") return byStatus(status);
  }
  return EXIT_UNEXPECTED;
}
