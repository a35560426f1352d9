// What the README says near its top about module systems, held on the packed package: every
// entry loads with require() from a CommonJS file (Node's require(esm), which needs an ES module
// graph without top-level await), a CommonJS TypeScript project (`"type": "commonjs"`, module
// nodenext) type-checks, builds and runs with the package, and a README snippet with top-level
// await is refused there with TS1309, the error the README names with its fix.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";
import { codeBlocks, SCRIPT_LANGS } from "./markdown.js";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const ENTRIES = ["", "/validate", "/node", "/release", "/server", "/testing"];

let project: string;
let dir: string;
beforeAll(async () => {
  project = ((await packedProject()) as { dir: string }).dir;
  // A CommonJS corner of the ESM test project: the nearest package.json decides a file's kind.
  dir = join(project, `commonjs-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ type: "commonjs" }, null, 2)}\n`);
}, 600_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function tsc(args: string[]): Promise<{ code: number; output: string }> {
  const bin = join(project, "node_modules", "typescript", "bin", "tsc");
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { cwd: dir });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

function tsconfig(name: string, options: Record<string, unknown>, files: string[]): void {
  const compilerOptions = {
    strict: true,
    module: "nodenext",
    moduleResolution: "nodenext",
    target: "es2022",
    ...options,
  };
  writeFileSync(join(dir, name), `${JSON.stringify({ compilerOptions, files }, null, 2)}\n`);
}

// tsc on a loaded, shared machine takes tens of seconds.
describe("require() of the package (Node's require(esm))", { timeout: 240_000 }, () => {
  it("every entry loads from a .cjs file, sharing one class per error with the others", async () => {
    writeFileSync(
      join(dir, "entries.cjs"),
      `const root = require("@stratum/join");
       for (const entry of ${JSON.stringify(ENTRIES)}) {
         const m = require("@stratum/join" + entry);
         console.log(entry || "/", Object.keys(m).length);
       }
       const node = require("@stratum/join/node");
       console.log("code", root.parseJoinCode("4f7k 2q9m abd").formatted);
       console.log("shared", node.StratumError === root.StratumError);`,
    );
    const { stdout, stderr } = await run(process.execPath, [join(dir, "entries.cjs")], { cwd: dir });
    const lines = stdout.trim().split("\n");
    for (const line of lines.slice(0, ENTRIES.length)) expect(Number(line.split(" ")[1]), line).toBeGreaterThan(0);
    expect(lines.slice(ENTRIES.length)).toEqual(["code 4F7K-2Q9M-ABD", "shared true"]);
    // Not even a warning: a package whose graph had top-level await would throw ERR_REQUIRE_ASYNC_MODULE.
    expect(stderr).toBe("");
  });

  it("a CommonJS TypeScript project (module nodenext) type-checks, builds and runs with it", async () => {
    writeFileSync(
      join(dir, "main.ts"),
      `import { parseJoinCode, StratumError } from "@stratum/join";
       import node = require("@stratum/join/node");
       async function main(): Promise<void> {
         const code: string = parseJoinCode("4F7K-2Q9M-ABD").formatted;
         const error = await node.openMachineDirectory(__dirname + "/no-such-dir").catch((e: unknown) => e);
         console.log(code, StratumError.is(error) ? error.code : "not an SDK error", typeof require);
       }
       void main();`,
    );
    tsconfig("tsconfig.json", { outDir: "out", types: ["node"] }, ["main.ts"]);
    const built = await tsc(["-p", "tsconfig.json"]);
    expect(built.output).toBe("");
    expect(built.code).toBe(0);
    // The emitted file is CommonJS (require calls), and runs.
    expect(readFileSync(join(dir, "out", "main.js"), "utf8")).toMatch(/require\("@stratum\/join"\)/);
    const { stdout, stderr } = await run(process.execPath, [join(dir, "out", "main.js")], { cwd: dir });
    expect(stdout.trim()).toBe("4F7K-2Q9M-ABD IDENTITY_INVALID function");
    expect(stderr).toBe("");
  });

  it("a README snippet with top-level await is refused in a CommonJS project with TS1309, as the README says", async () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const installer = codeBlocks(readme).find(
      (block) => SCRIPT_LANGS.includes(block.lang) && block.section.startsWith("Installer stage 1"),
    );
    expect(installer?.code).toMatch(/^const \w+ = await /m);
    // The fix the README gives: `npm pkg set type=module`, or an .mts file.
    expect(readme).toContain("`npm pkg set type=module`");
    writeFileSync(
      join(dir, "snippet.ts"),
      "export {};\nconst answer = await Promise.resolve(42);\nconsole.log(answer);\n",
    );
    tsconfig("tsconfig.tla.json", { noEmit: true }, ["snippet.ts"]);
    const refused = await tsc(["-p", "tsconfig.tla.json"]);
    expect(refused.output).toContain("TS1309");
    writeFileSync(join(dir, "snippet.mts"), readFileSync(join(dir, "snippet.ts")));
    tsconfig("tsconfig.mts.json", { noEmit: true }, ["snippet.mts"]);
    expect(await tsc(["-p", "tsconfig.mts.json"])).toEqual({ code: 0, output: "" });
  });
});
