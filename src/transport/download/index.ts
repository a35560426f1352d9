/**
 * The release downloader, as `@stratum/join/node` and the CLI use it.
 *
 * Layout: `download-release.ts` (the whole download), `manifest-fetch.ts` (the envelope),
 * `file-download.ts` (one file, staged and renamed into place), `file-transfer.ts` (one
 * file's requests and answers), `answer.ts` (the rules an answer follows), `attempts.ts`
 * (retries), `session.ts` (what the requests share), `writer.ts` and `direct-io.ts` (writing
 * and hashing), `body.ts` (reading a body of any kind), `staging.ts` (the destination
 * directory), `progress.ts`, `options.ts`.
 * @module
 */
export { downloadReleaseFrom } from "./download-release.js";
export {
  RELEASE_TEST_HOOKS,
  type DownloadedRelease,
  type DownloadedReleaseFile,
  type DownloadReleaseOptions,
  type ReleaseRetryOptions,
  type ReleaseTestHooks,
} from "./options.js";
export type { ReleaseProgress } from "./progress.js";
export { DEFAULT_MIN_SPEED, type ReleaseMinSpeed } from "./speed.js";
