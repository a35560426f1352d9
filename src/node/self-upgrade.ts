/**
 * The joiner's self-upgrade: the release download of `src/transport/`, told where to fetch from
 * by the registration (`upgrade.source`: a mirror; `upgrade.served`: the founder, over
 * connections pinned to the session's CA and the machine's key).
 *
 * The downloader, its HTTP/1.1 reader and the founder source are loaded by the first download,
 * not when the joiner is imported: most programs that import `@stratum/join/node` never upgrade.
 * @module
 */
import type { DownloadedRelease, DownloadReleaseOptions } from "../transport/download/index.js";
import { ReleaseArgumentError } from "../errors/index.js";
import type { MachineIdentity } from "./identity.js";
import type { JoinSession } from "./join-session.js";

/** Options of {@link downloadRelease}: those of the release downloader, plus the join session and identity for a served release. */
export interface JoinerDownloadReleaseOptions extends DownloadReleaseOptions {
  /** The join session: needed when the founder serves the release (`upgrade.served`). */
  session?: JoinSession | undefined;
  /** The machine identity the registration is pinned to: needed with `session`. */
  identity?: MachineIdentity | undefined;
}

/**
 * Downloads and verifies the release the registration's `upgrade` names into `destDir`: the
 * signed manifest first (against `trustedKeys`, the OS's own release keys), then every file,
 * hashed as it streams, resumable from `.partial` files. From `upgrade.source` (a mirror) or,
 * when `upgrade.served`, from the founder over connections pinned to `session` and `identity`.
 * @throws ReleaseArgumentError when the release is served but no session or identity is given;
 *   otherwise as the release downloader (`ReleaseVerificationError` naming the rule,
 *   `ReleaseDownloadError`, StratumApiError, the signal's reason)
 */
export async function downloadRelease(options: JoinerDownloadReleaseOptions): Promise<DownloadedRelease> {
  const { session, identity, ...rest } = options;
  const { downloadReleaseFrom } = await import("../transport/download/index.js");
  if (rest.source || !rest.upgrade.served) return downloadReleaseFrom(rest);
  if (!session || !identity) {
    throw new ReleaseArgumentError(
      "the founder serves this release: pass the join session and the machine identity the registration is pinned to",
    );
  }
  const { founderReleaseSource } = await import("./founder-source.js");
  return downloadReleaseFrom({ ...rest, source: founderReleaseSource(session, identity) });
}
