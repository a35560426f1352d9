#!/usr/bin/env node
// The API reports: one file per package entry under api/, written by API Extractor from the
// built .d.ts files, so a change of the public API shows up in review as a change of api/.
//
//   node scripts/api-report.mjs           check: exit 1 when a report differs from the API
//   node scripts/api-report.mjs --update  rewrite the reports in api/
//
// The config every entry shares is api-extractor.json.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CompilerState, Extractor, ExtractorConfig } from "@microsoft/api-extractor";
import { ensureBuilt } from "./packed-project.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const update = process.argv.includes("--update");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

// Report file name per entry: "@stratum/join/node" → api/join-node.api.md.
const entries = Object.entries(pkg.exports)
  .filter(([, target]) => typeof target === "object" && target.types)
  .map(([subpath, target]) => {
    const name = subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    const reportName = name.replace(/^@stratum\//, "").replace(/\//g, "-");
    return { name, reportName, types: join(root, target.types) };
  });

// Builds first unless dist/ was built from exactly the current sources (so the check never
// reads a stale build, and one `npm test` builds once).
await ensureBuilt();

const base = ExtractorConfig.loadFile(join(root, "api-extractor.json"));
const configs = entries.map((entry) =>
  ExtractorConfig.prepare({
    configObject: {
      ...base,
      mainEntryPointFilePath: entry.types,
      apiReport: { ...base.apiReport, reportFileName: entry.reportName },
    },
    configObjectFullPath: join(root, "api-extractor.json"),
    packageJsonFullPath: join(root, "package.json"),
  }),
);
// One TypeScript program for all entries (they share most of their .d.ts chunks): a sixth of the time.
const compilerState = CompilerState.create(configs[0], { additionalEntryPoints: entries.map((e) => e.types) });
let failed = false;
const changed = [];
for (const [i, entry] of entries.entries()) {
  const config = configs[i];
  const result = Extractor.invoke(config, {
    localBuild: update,
    compilerState,
    messageCallback(message) {
      // Said once below, with the command that fixes it.
      if (message.messageId === "console-api-report-not-copied" || message.messageId === "console-api-report-copied") {
        message.handled = true;
      }
      // The bundled compiler is newer than the project's; that is expected, not news.
      if (message.messageId === "console-compiler-version-notice" || message.text.startsWith("Analysis will use")) {
        message.handled = true;
      }
    },
  });
  if (result.apiReportChanged) {
    changed.push({ ...entry, expected: config.reportFilePath, actual: config.reportTempFilePath });
  }
  // A changed report fails the check only; any other error or warning fails both modes.
  const otherProblems = result.errorCount > 0 || (!result.succeeded && !result.apiReportChanged);
  if (otherProblems || (!update && result.apiReportChanged)) failed = true;
}
if (failed && changed.length === 0) console.error("api: API Extractor reported the problems above");

if (update) {
  for (const c of changed) console.log(`api: updated ${relative(root, c.expected)}`);
  if (changed.length === 0) console.log(`api: ${entries.length} reports, all up to date`);
} else if (changed.length > 0) {
  for (const c of changed) {
    console.error(`\napi: the public API of ${c.name} changed; its report ${relative(root, c.expected)} is stale:`);
    spawnSync("diff", ["-u", relative(root, c.expected), relative(root, c.actual)], { cwd: root, stdio: "inherit" });
  }
  console.error(
    "\napi: if the change is meant, run `npm run api:update`, commit api/ with it, and add a line to CHANGELOG.md.",
  );
} else if (!failed) {
  console.log(`api: ${entries.length} reports match the public API (${entries.map((e) => e.name).join(", ")})`);
}
process.exit(failed ? 1 : 0);
