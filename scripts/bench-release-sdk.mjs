// One SDK download-and-verify, in its own process, so its peak RSS is its own.
// argv[2]: JSON { url, ca, destDir, release, key, progress }. Prints `progress <bytesDone>` lines
// when asked, then one JSON line { seconds, bytesFetched, maxRssKiB }.
import { readFileSync } from "node:fs";
import { downloadReleaseFrom } from "../src/release/download/index.ts";

const config = JSON.parse(process.argv[2]);
// BENCH_MEM=1: where the peak RSS goes (V8 heap, Buffers outside it, the rest), on stderr.
const peak = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
const sampler = process.env.BENCH_MEM
  ? setInterval(() => {
      for (const [key, value] of Object.entries(process.memoryUsage()))
        if (key in peak) peak[key] = Math.max(peak[key], value);
    }, 50)
  : undefined;
const started = performance.now();
const result = await downloadReleaseFrom({
  upgrade: { to: config.release, source: config.url },
  mirror: { ca: readFileSync(config.ca, "utf8") },
  destDir: config.destDir,
  trustedKeys: [config.key],
  ...(config.progress ? { onProgress: (p) => process.stdout.write(`progress ${p.bytesDone}\n`) } : {}),
});
const seconds = (performance.now() - started) / 1000;
if (sampler) {
  clearInterval(sampler);
  const mib = (n) => `${(n / 1048576).toFixed(0)} MiB`;
  process.stderr.write(
    `memory peaks: ${Object.entries(peak)
      .map(([k, v]) => `${k} ${mib(v)}`)
      .join(", ")}\n`,
  );
}
process.stdout.write(
  `${JSON.stringify({ seconds, bytesFetched: result.bytesFetched, maxRssKiB: process.resourceUsage().maxRSS })}\n`,
);
