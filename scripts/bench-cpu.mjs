// CPU accounting for the benchmarks (Linux /proc): what a command, a server's processes and a
// SHA-256 cost in user + system seconds, so a benchmark can print where the cores went next to
// the wall times it compares.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

const TICKS = (() => {
  const out = spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" });
  const ticks = Number(out.stdout?.trim());
  return Number.isFinite(ticks) && ticks > 0 ? ticks : 100;
})();

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces). */
function statFields(text) {
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

/**
 * Runs `cmd args` to completion as `spawnSync` would, through `sh`, and measures it: wall
 * seconds, and the CPU seconds (user + system) of the command and its children, read from the
 * shell's own /proc entry once it has waited for them. → { status, stdout, stderr, seconds, cpu }
 */
export function runMeasured(cmd, args, options = {}) {
  const started = performance.now();
  const result = spawnSync("sh", ["-c", '"$@"; s=$?; cat /proc/$$/stat >&3; exit $s', "sh", cmd, ...args], {
    ...options,
    stdio: ["ignore", "pipe", "pipe", "pipe"],
  });
  const seconds = (performance.now() - started) / 1000;
  const fields = statFields(result.output[3]?.toString() ?? "");
  // cutime and cstime: fields 16 and 17 of stat(5), 14 and 15 after the name
  const cpu = (Number(fields[13]) + Number(fields[14])) / TICKS;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, seconds, cpu };
}

/** CPU seconds (user + system) used so far by `pid` and its direct children (nginx's workers). */
export function processGroupCpu(pid) {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fields;
    try {
      fields = statFields(readFileSync(`/proc/${entry}/stat`, "utf8"));
    } catch {
      continue; // gone meanwhile
    }
    // ppid is field 4 of stat(5), 1 after the name; utime and stime 14 and 15, 11 and 12 after it
    if (Number(entry) === pid || Number(fields[1]) === pid) total += Number(fields[11]) + Number(fields[12]);
  }
  return total / TICKS;
}

/** CPU seconds this process takes to SHA-256 `bytes` (node:crypto, 4 MiB updates, as the SDK's writer does). */
export function sha256CpuSeconds(bytes) {
  const chunk = Buffer.alloc(4 * 1024 * 1024, 1);
  const sample = Math.min(bytes, 256 * 1024 * 1024);
  const hash = createHash("sha256");
  const before = process.cpuUsage();
  for (let done = 0; done < sample; done += chunk.length) hash.update(chunk);
  hash.digest();
  const used = process.cpuUsage(before);
  return ((used.user + used.system) / 1e6) * (bytes / sample);
}
