/**
 * Runs one downloadRelease in its own process, so a test can SIGKILL it mid-download.
 * argv[2]: JSON { url, ca, destDir, release, key }. Prints `progress <bytesDone>` lines, then `done`.
 */
import { downloadReleaseFrom } from "../../../src/release/download/index.js";

const config = JSON.parse(process.argv[2] ?? "{}") as {
  url: string;
  ca: string;
  destDir: string;
  release: string;
  key: string;
};
await downloadReleaseFrom({
  upgrade: { to: config.release, source: config.url },
  mirror: { ca: config.ca },
  destDir: config.destDir,
  trustedKeys: [config.key],
  onProgress: (p) => process.stdout.write(`progress ${p.bytesDone}\n`),
});
process.stdout.write("done\n");
