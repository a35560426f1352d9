/**
 * Runs one downloadRelease in its own process, so a test can SIGKILL it mid-download.
 * argv[2]: JSON { url, ca, destDir, release, key, connections?, segmentBytes? }. Prints `progress <bytesDone>` lines, then `done`.
 */
import { downloadReleaseFrom, RELEASE_TEST_HOOKS } from "../../../src/transport/download/index.js";

const config = JSON.parse(process.argv[2] ?? "{}") as {
  url: string;
  ca: string;
  destDir: string;
  release: string;
  key: string;
  connections?: number;
  segmentBytes?: number;
};
await downloadReleaseFrom({
  upgrade: { to: config.release, source: config.url },
  mirror: { ca: config.ca },
  destDir: config.destDir,
  trustedKeys: [config.key],
  onProgress: (p) => process.stdout.write(`progress ${p.bytesDone}\n`),
  ...(config.connections === undefined ? {} : { connections: config.connections }),
  ...(config.segmentBytes === undefined ? {} : { [RELEASE_TEST_HOOKS]: { segmentBytes: config.segmentBytes } }),
});
process.stdout.write("done\n");
