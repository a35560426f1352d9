#!/usr/bin/env node
// What a user waits for before anything happens: Node starting, importing
// `@stratum/join/node`, and the CLI's `--help` and offline `code check`. Measured on the
// package as a user gets it (scripts/packed-project.mjs: built, packed and installed into a
// fresh project), each against a bare `node -e 0` started in the same round, so the machine's
// load cancels out of the differences the goals are about:
//   - importing @stratum/join/node adds at most 100 ms and 20 MiB of peak RSS;
//   - `stratum-join --help` and `stratum-join code check CODE` finish within 150 ms of a bare node.
// Rounds are interleaved (every case once per round, in a rotating order); the first round
// only warms the file cache. Wall time is taken around each child; peak RSS and CPU time (user
// + system, 10 ms resolution) are GNU time's for the child (`/usr/bin/time`, Debian package
// `time`). On a shared machine the wall times swing with the load; CPU time much less, so it
// says what a quiet machine would take.
//
// Env: BENCH_RUNS (rounds, default 15), BENCH_BASELINE (the directory of another packed
// project, e.g. one made by `node scripts/packed-project.mjs` in a checkout of an older commit:
// its import and CLI are measured in the same rounds, marked "baseline").
// Run with: npm run bench:startup
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { packedProject } from "./packed-project.mjs";

/** Goals of the issue "Fast where users measure it", item 2, as differences to a bare node. */
const GOALS = { importMs: 100, importMiB: 20, cliMs: 150 };
const CODE = "4F7K-2Q9M-ABD";
const TIME = "/usr/bin/time";

const rounds = Number(process.env.BENCH_RUNS ?? 15);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error("BENCH_RUNS must be a whole number of at least 1");
if (!existsSync(TIME) || spawnSync(TIME, ["-f", "%M", "true"]).status !== 0) {
  throw new Error(`${TIME} (GNU time, Debian package "time") is needed to read a child's peak RSS`);
}

function log(line = "") {
  process.stdout.write(`${line}\n`);
}

const { dir: project } = await packedProject();
const baseline = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined;
if (baseline && !existsSync(join(baseline, "node_modules", "@stratum", "join")))
  throw new Error(`BENCH_BASELINE ${baseline} is not a project with @stratum/join installed`);

/** The cases of one project: import, help, code check. */
function projectCases(dir, label) {
  const bin = join(dir, "node_modules", ".bin", "stratum-join");
  return [
    {
      name: `import @stratum/join/node${label}`,
      kind: "import",
      cwd: dir,
      cmd: process.execPath,
      args: ["--input-type=module", "-e", 'await import("@stratum/join/node")'],
    },
    { name: `stratum-join --help${label}`, kind: "cli", cwd: dir, cmd: bin, args: ["--help"] },
    { name: `stratum-join code check${label}`, kind: "cli", cwd: dir, cmd: bin, args: ["code", "check", CODE] },
  ];
}
const bare = { name: "node -e 0", kind: "bare", cwd: project, cmd: process.execPath, args: ["-e", "0"] };
const cases = [bare, ...projectCases(project, ""), ...(baseline ? projectCases(baseline, " (baseline)") : [])];

const scratch = mkdtempSync(join(tmpdir(), "stratum-bench-startup-"));
const rssFile = join(scratch, "rss");

/** One run of a case: wall ms around the child, its CPU ms and its peak RSS in MiB. */
function measure(c) {
  const started = performance.now();
  const result = spawnSync(TIME, ["-o", rssFile, "-f", "%M %U %S", c.cmd, ...c.args], {
    cwd: c.cwd,
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
  });
  const ms = performance.now() - started;
  if (result.status !== 0)
    throw new Error(`${c.name} failed (exit ${result.status}):\n${result.stdout}${result.stderr}`);
  const [kib, user, system] = readFileSync(rssFile, "utf8").trim().split("\n").pop().split(" ").map(Number);
  return { ms, cpu: (user + system) * 1000, mib: kib / 1024 };
}

const samples = new Map(cases.map((c) => [c, []]));
const loadBefore = loadavg();
try {
  for (let round = 0; round <= rounds; round++) {
    // A rotating order, so no case always runs right after the same one.
    const order = cases.map((_, i) => cases[(i + round) % cases.length]);
    const results = new Map(order.map((c) => [c, measure(c)]));
    if (round === 0) continue; // warms the file cache
    const base = results.get(bare);
    for (const [c, r] of results)
      samples.get(c).push({ ...r, dms: r.ms - base.ms, dcpu: r.cpu - base.cpu, dmib: r.mib - base.mib });
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
const loadAfter = loadavg();

const best = (values) => Math.min(...values);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const ms = (v) => `${v.toFixed(0)} ms`;
const mib = (v) => `${v.toFixed(1)} MiB`;
const signed = (v, unit) => `${v >= 0 ? "+" : ""}${unit(v)}`;

log(`startup of @stratum/join (${project})${baseline ? `, baseline ${baseline}` : ""}`);
log(
  `node ${process.version}; ${rounds} interleaved rounds after one warm-up; load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} before, ${loadAfter.map((l) => l.toFixed(2)).join(" ")} after`,
);
log();
log(
  "| | wall best | wall median | Δ wall best / median | CPU median | Δ CPU median | peak RSS median | Δ RSS median |",
);
log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const c of cases) {
  const s = samples.get(c);
  const of = (key) => s.map((x) => x[key]);
  const delta = (text) => (c === bare ? "" : text);
  log(
    `| ${c.name} | ${ms(best(of("ms")))} | ${ms(median(of("ms")))} | ${delta(`${signed(best(of("dms")), ms)} / ${signed(median(of("dms")), ms)}`)} | ${ms(median(of("cpu")))} | ${delta(signed(median(of("dcpu")), ms))} | ${mib(median(of("mib")))} | ${delta(signed(median(of("dmib")), mib))} |`,
  );
}
log();
log("Goals (Δ against node -e 0 in the same round, median of the rounds):");
for (const c of cases.filter((c) => c !== bare && !c.name.endsWith("(baseline)"))) {
  const s = samples.get(c);
  const dms = median(s.map((x) => x.dms));
  const dmib = median(s.map((x) => x.dmib));
  const checks =
    c.kind === "import"
      ? [
          [`Δ wall ${signed(dms, ms)}`, `≤ ${GOALS.importMs} ms`, dms <= GOALS.importMs],
          [`Δ RSS ${signed(dmib, mib)}`, `≤ ${GOALS.importMiB} MiB`, dmib <= GOALS.importMiB],
        ]
      : [[`Δ wall ${signed(dms, ms)}`, `≤ ${GOALS.cliMs} ms`, dms <= GOALS.cliMs]];
  for (const [what, goal, met] of checks) log(`  ${met ? "met " : "OVER"}  ${c.name}: ${what} (goal ${goal})`);
}
