#!/usr/bin/env node
// Fails when generated/ is not what `npm run generate` writes from openapi.yaml now.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const scratch = mkdtempSync(join(tmpdir(), "stratum-generated-"));
try {
  execFileSync(process.execPath, [join(root, "scripts/generate.mjs"), scratch], { stdio: "inherit" });
  const committed = join(root, "generated");
  const want = readdirSync(scratch).sort();
  const have = readdirSync(committed).sort();
  const stale = [];
  for (const name of new Set([...want, ...have])) {
    const a = want.includes(name) ? readFileSync(join(scratch, name), "utf8") : null;
    const b = have.includes(name) ? readFileSync(join(committed, name), "utf8") : null;
    if (a !== b) stale.push(name);
  }
  if (stale.length) {
    console.error(
      `generated/ is stale against openapi.yaml (${stale.join(", ")}): run \`npm run generate\` and commit.`,
    );
    process.exit(1);
  }
  console.log(`generated/ is in sync with openapi.yaml (${want.length} files).`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
