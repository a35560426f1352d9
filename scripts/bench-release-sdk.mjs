// One SDK download-and-verify, in its own process, so its peak RSS is its own.
// argv[2]: JSON { url, ca, destDir, release, key, progress }. Prints `progress <bytesDone>` lines
// when asked, then one JSON line { seconds, bytesFetched, maxRssKiB }.
import { readFileSync } from "node:fs";
import { downloadRelease } from "../src/release/index.ts";

const config = JSON.parse(process.argv[2]);
const started = performance.now();
const result = await downloadRelease({
  upgrade: { to: config.release, source: config.url },
  mirror: { ca: readFileSync(config.ca, "utf8") },
  destDir: config.destDir,
  trustedKeys: [config.key],
  ...(config.progress ? { onProgress: (p) => process.stdout.write(`progress ${p.bytesDone}\n`) } : {}),
});
const seconds = (performance.now() - started) / 1000;
process.stdout.write(`${JSON.stringify({ seconds, bytesFetched: result.bytesFetched, maxRssKiB: process.resourceUsage().maxRSS })}\n`);
