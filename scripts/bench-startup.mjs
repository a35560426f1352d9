#!/usr/bin/env node
// What a user waits for before anything happens: Node starting, importing
// `@stratum/join/node`, and the CLI's `--help` and offline `code check`. Measured on the
// package as a user gets it (scripts/packed-project.mjs: built, packed and installed into a
// fresh project), each against a bare `node -e 0` started in the same round, so the machine's
// load cancels out of the differences the goals are about:
//   - importing @stratum/join/node adds at most 100 ms and 20 MiB of peak RSS;
//   - `stratum-join --help` and `stratum-join code check CODE` finish within 150 ms of a bare node;
//   - the README's stage 1, bundled by esbuild and by rolldown into one minified file, is at most
//     1.2 MB; its start (to the first thing it does: the join URL checked locally, here refused
//     as a typo so that no network is involved) is measured beside the rest.
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
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build as esbuild } from "esbuild";
import { rolldown } from "rolldown";
import { packedProject } from "./packed-project.mjs";

/** Goals as differences to a bare node, and the stage 1 bundle's size. */
const GOALS = { importMs: 100, importMiB: 20, cliMs: 150, bundleBytes: 1.2e6 };
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
const scratch = mkdtempSync(join(tmpdir(), "stratum-bench-startup-"));
const bundles = await stage1Bundles(scratch);
const cases = [
  bare,
  ...projectCases(project, ""),
  ...bundles.map((b) => ({
    name: `stage 1 bundled by ${b.bundler}, to its first check`,
    kind: "bundle",
    cwd: scratch,
    cmd: process.execPath,
    args: [b.file],
    env: { STRATUM_JOIN_URL: `stratum-join://127.0.0.1/${CODE.slice(0, -1)}A` },
    exit: 1,
  })),
  ...(baseline ? projectCases(baseline, " (baseline)") : []),
];

/**
 * The README's stage 1 (its first block under "Installer stage 1", the `// yours:` lines
 * supplied as the README test does), bundled into one minified file by esbuild and by rolldown.
 */
async function stage1Bundles(into) {
  const readme = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "..", "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("\n## Installer stage 1"));
  const code = /```ts\n([\s\S]*?)\n```/.exec(section)[1];
  const keyFile = join(into, "release-key.pem");
  writeFileSync(keyFile, "not read past the first check\n");
  const values = { MACHINE_DIR: join(into, "machine"), RELEASE_KEY_FILE: keyFile, INSTALLED_RELEASE: "0.5.0" };
  const source = code.replace(
    /^const (\w+) = .*; \/\/ yours:.*$/gm,
    (_, name) => `const ${name} = ${JSON.stringify(values[name])};`,
  );
  const work = mkdtempSync(join(project, "bench-bundle-"));
  try {
    writeFileSync(join(work, "stage-1.ts"), source);
    writeFileSync(
      join(work, "installer-ui.ts"),
      "export const show = (t: string) => console.log(t);\nexport const showPairingCode = show;\nexport const askForJoinUrl = async () => '';\n",
    );
    const entry = join(work, "stage-1.ts");
    const out = [];
    const esbuildFile = join(into, "stage-1.esbuild.mjs");
    await esbuild({
      entryPoints: [entry],
      absWorkingDir: project,
      bundle: true,
      platform: "node",
      format: "esm",
      minify: true,
      outfile: esbuildFile,
      logLevel: "silent",
    });
    out.push({ bundler: "esbuild", file: esbuildFile });
    const rolldownFile = join(into, "stage-1.rolldown.mjs");
    const bundle = await rolldown({ input: entry, cwd: project, platform: "node", logLevel: "silent" });
    await bundle.write({ file: rolldownFile, format: "esm", minify: true, codeSplitting: false });
    await bundle.close();
    out.push({ bundler: "rolldown", file: rolldownFile });
    return out.map((b) => ({ ...b, bytes: statSync(b.file).size }));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
const rssFile = join(scratch, "rss");

/** One run of a case: wall ms around the child, its CPU ms and its peak RSS in MiB. */
function measure(c) {
  const started = performance.now();
  const result = spawnSync(TIME, ["-o", rssFile, "-f", "%M %U %S", c.cmd, ...c.args], {
    cwd: c.cwd,
    env: { ...process.env, ...c.env },
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
  });
  const ms = performance.now() - started;
  if (result.status !== (c.exit ?? 0))
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
for (const b of bundles) log(`stage 1 bundled by ${b.bundler}: ${(b.bytes / 1e6).toFixed(2)} MB minified, one file`);
log();
log("Goals (Δ against node -e 0 in the same round, median of the rounds; the bundles' size):");
for (const b of bundles)
  log(
    `  ${b.bytes <= GOALS.bundleBytes ? "met " : "OVER"}  stage 1 bundled by ${b.bundler}: ${(b.bytes / 1e6).toFixed(2)} MB (goal ≤ ${GOALS.bundleBytes / 1e6} MB)`,
  );
for (const c of cases.filter((c) => c !== bare && !c.name.endsWith("(baseline)"))) {
  const s = samples.get(c);
  const dms = median(s.map((x) => x.dms));
  const dmib = median(s.map((x) => x.dmib));
  const checks =
    c.kind === "bundle"
      ? []
      : c.kind === "import"
        ? [
            [`Δ wall ${signed(dms, ms)}`, `≤ ${GOALS.importMs} ms`, dms <= GOALS.importMs],
            [`Δ RSS ${signed(dmib, mib)}`, `≤ ${GOALS.importMiB} MiB`, dmib <= GOALS.importMiB],
          ]
        : [[`Δ wall ${signed(dms, ms)}`, `≤ ${GOALS.cliMs} ms`, dms <= GOALS.cliMs]];
  for (const [what, goal, met] of checks) log(`  ${met ? "met " : "OVER"}  ${c.name}: ${what} (goal ${goal})`);
}
