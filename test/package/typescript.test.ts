// The README's snippets compile in a user's project whatever its tsconfig: strict with
// `exactOptionalPropertyTypes` and `noUncheckedIndexedAccess` (both on in TypeScript 7's
// `tsc --init`), under each module resolution a project picks (`bundler`, `node16`,
// `nodenext`), on the oldest TypeScript the package supports, this repository's, and
// TypeScript 7. On the packed package in a fresh project (scripts/packed-project.mjs), the
// compilers from scripts/toolchains.mjs. The package's own declaration files are checked too
// (`skipLibCheck` off, under `nodenext`: what they declare does not change with the resolution,
// and checking every declaration of the project takes a TypeScript 5 about 15 s); errors inside
// other packages' declarations are not this package's.
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { toolchains, TOOLCHAIN_VERSIONS } from "../../scripts/toolchains.mjs";
import { runToEnd } from "../readme/processes.js";
import { atReadmeLines, FRAGMENT_CONTEXT_FILE, readmeSnippets, writeSnippets } from "../readme/readme-snippets.js";

const RESOLUTIONS = {
  bundler: { module: "esnext", moduleResolution: "bundler" },
  node16: { module: "node16", moduleResolution: "node16" },
  nodenext: { module: "nodenext", moduleResolution: "nodenext" },
} as const;

let project: string;
let compilers: Record<string, string>;
beforeAll(async () => {
  project = ((await packedProject()) as { dir: string }).dir;
  const tools = (await toolchains()) as { tsc: { oldest: string; "7": string } };
  const versions = TOOLCHAIN_VERSIONS as Record<string, string>;
  compilers = {
    [`TypeScript ${versions["typescript-oldest"]} (the oldest supported)`]: tools.tsc.oldest,
    "TypeScript 5.9 (this repository's)": join(project, "node_modules", "typescript", "bin", "tsc"),
    [`TypeScript ${versions["typescript-7"]}`]: tools.tsc[7],
  };
}, 600_000);

/** A project directory with the snippets and a tsconfig for `resolution`; tsc's errors there. */
async function compile(tsc: string, resolution: keyof typeof RESOLUTIONS): Promise<{ code: number; errors: string[] }> {
  const snippets = readmeSnippets();
  const dir = join(project, `tsconfig-${resolution}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(dir);
  try {
    writeSnippets(dir, snippets);
    const compilerOptions = {
      ...RESOLUTIONS[resolution],
      target: "es2022",
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      skipLibCheck: resolution !== "nodenext",
      noEmit: true,
      // The fragments are snippets that continue another; each is its own module.
      moduleDetection: "force",
    };
    const files = [...snippets.map((s) => s.file), "installer-ui.ts", "console-ui.ts", FRAGMENT_CONTEXT_FILE];
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files }, null, 2));
    const run = await runToEnd(process.execPath, [tsc, "-p", "tsconfig.json", "--pretty", "false"], { cwd: dir });
    // Errors of other packages' declarations (@types/node's under TypeScript 7, say) are theirs.
    const lines = atReadmeLines(run.output, snippets).filter((line) => /error TS\d+/.test(line));
    const errors = lines.filter((line) => !/^\.\.\/node_modules\/(?!@stratum\/join\/)/.test(line));
    // A compiler that failed without a single error line is a failure too.
    if (run.code !== 0 && lines.length === 0) errors.push(run.output);
    return { code: run.code, errors };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("the README's snippets under every tsconfig", () => {
  for (const resolution of Object.keys(RESOLUTIONS) as Array<keyof typeof RESOLUTIONS>) {
    it(`compile with exactOptionalPropertyTypes and noUncheckedIndexedAccess, module resolution ${resolution}, on each TypeScript`, async () => {
      for (const [name, tsc] of Object.entries(compilers)) {
        const { errors } = await compile(tsc, resolution);
        expect(errors, `${name}, ${resolution}`).toEqual([]);
      }
    }, 300_000);
  }
});

describe("the public type tests (test/types/) on the packed package", () => {
  it("compile with strict and exactOptionalPropertyTypes on each TypeScript", async () => {
    const sources = new URL("../types/", import.meta.url);
    const dir = join(project, `type-tests-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
    mkdirSync(dir);
    try {
      const files = readdirSync(sources).filter((name) => name.endsWith(".test-d.ts"));
      expect(files.length).toBeGreaterThan(0);
      for (const name of files) copyFileSync(new URL(name, sources), join(dir, name));
      const compilerOptions = {
        ...RESOLUTIONS.nodenext,
        target: "es2022",
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        skipLibCheck: true,
        noEmit: true,
      };
      writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files }, null, 2));
      for (const [name, tsc] of Object.entries(compilers)) {
        const run = await runToEnd(process.execPath, [tsc, "-p", "tsconfig.json", "--pretty", "false"], { cwd: dir });
        const errors = run.output.split("\n").filter((line) => /error TS\d+/.test(line));
        expect(errors, name).toEqual([]);
        expect(run.code, `${name}: ${run.output}`).toBe(0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
