// What starting up loads, on the packed package as a user gets it: importing
// `@stratum/join/node` or `@stratum/join/server`, `stratum-join --help` and the offline
// `stratum-join code check` load none of the heavy dependencies (undici, @peculiar/x509, the
// OPAQUE WebAssembly, zod), and the CLI loads no command's action but the one that runs. Each
// child process is preloaded with a recorder of every module file it loads; the SDK's own
// files are mapped back to their sources through the package's source maps. How long startup
// takes is `npm run bench:startup`'s.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";

const run = promisify(execFile);
const RECORDER = fileURLToPath(new URL("./fixtures/record-loads.mjs", import.meta.url));

/** The dependencies that must load only when a call needs them, and what they bring along. */
const HEAVY = ["undici", "@peculiar/x509", "@serenity-kit/opaque", "zod", "tsyringe"];

let project: string;
let scratch: string;
beforeAll(async () => {
  project = ((await packedProject()) as { dir: string }).dir;
  scratch = mkdtempSync(join(tmpdir(), "stratum-loads-"));
}, 300_000);
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The package a file under node_modules belongs to (`@scope/name` or `name`). */
function packageOf(path: string): string | undefined {
  const at = path.lastIndexOf(`${sep}node_modules${sep}`);
  if (at < 0) return undefined;
  const [first, second] = path.slice(at + `${sep}node_modules${sep}`.length).split(sep);
  return first?.startsWith("@") ? `${first}/${second}` : first;
}

/** The SDK sources (`src/…`) a file of the packed package's `dist/` was built from. */
function sourcesOf(path: string): string[] {
  const map = JSON.parse(readFileSync(`${path}.map`, "utf8")) as { sources: string[] };
  const root = join(project, "node_modules", "@stratum", "join");
  return map.sources.map((source) =>
    relative(root, resolve(dirname(path), source))
      .split(sep)
      .join("/"),
  );
}

let recordings = 0;
/** Runs node with `args` in the project; returns the packages and the SDK sources it loaded. */
async function loads(args: string[]): Promise<{ packages: Set<string>; sources: Set<string> }> {
  const file = join(scratch, `loads-${recordings++}.txt`);
  await run(process.execPath, ["--import", RECORDER, ...args], {
    cwd: project,
    env: { ...process.env, STRATUM_RECORD_LOADS: file },
  });
  const paths = new Set(readFileSync(file, "utf8").split("\n").filter(Boolean));
  const packages = new Set<string>();
  const sources = new Set<string>();
  for (const path of paths) {
    const name = packageOf(path);
    if (name === undefined) continue;
    if (name !== "@stratum/join") packages.add(name);
    else if (path.endsWith(".js")) for (const source of sourcesOf(path)) sources.add(source);
  }
  return { packages, sources };
}

const cli = (...words: string[]) => [
  join(project, "node_modules", "@stratum", "join", "dist", "cli", "main.js"),
  ...words,
];
const heavyIn = (packages: Set<string>) => HEAVY.filter((name) => packages.has(name));
const actionsIn = (sources: Set<string>) => [...sources].filter((source) => source.startsWith("src/cli/actions/"));

describe("startup loads only what it uses", () => {
  it("the recorder sees what loads: ./validate loads zod, and ./node's sources are mapped", async () => {
    const validate = await loads(["--input-type=module", "-e", 'await import("@stratum/join/validate")']);
    expect(heavyIn(validate.packages)).toEqual(["zod"]);
    const node = await loads(["--input-type=module", "-e", 'await import("@stratum/join/node")']);
    expect(node.sources).toContain("src/node/join-calls.ts");
    expect(node.sources).toContain("src/protocol/pki.ts");
  });

  it("importing @stratum/join/node loads no heavy dependency, nor the downloader", async () => {
    const { packages, sources } = await loads(["--input-type=module", "-e", 'await import("@stratum/join/node")']);
    expect(heavyIn(packages), `loaded: ${[...packages].join(", ")}`).toEqual([]);
    for (const lazy of ["src/schemas/index.ts", "src/transport/download/download-release.ts"])
      expect(sources).not.toContain(lazy);
  });

  it("reading a join session and an identity loads none either", async () => {
    const { packages } = await loads([
      "--input-type=module",
      "-e",
      `import { loadMachineIdentity, parseJoinSession } from "@stratum/join/node";
       for (const call of [() => parseJoinSession("{}"), () => loadMachineIdentity({ certPem: "", keyPem: "" })]) {
         try { call(); } catch (error) { if (!error.code) throw error; }
       }`,
    ]);
    expect(heavyIn(packages)).toEqual([]);
  });

  it("importing @stratum/join/server loads neither the X.509 library nor the OPAQUE WebAssembly", async () => {
    const { packages } = await loads(["--input-type=module", "-e", 'await import("@stratum/join/server")']);
    expect(heavyIn(packages), `loaded: ${[...packages].join(", ")}`).toEqual([]);
  });

  it("stratum-join --help loads no heavy dependency and no command's action", async () => {
    const { packages, sources } = await loads(cli("--help"));
    expect(heavyIn(packages), `loaded: ${[...packages].join(", ")}`).toEqual([]);
    expect(packages.size, `loaded: ${[...packages].join(", ")}`).toBe(0);
    expect(actionsIn(sources)).toEqual([]);
    expect(sources).toContain("src/cli/commands/register.ts");
  });

  it("stratum-join code check loads its own action only: no joiner, downloader or admin client", async () => {
    const { packages, sources } = await loads(cli("code", "check", "4F7K-2Q9M-ABD"));
    expect(packages.size, `loaded: ${[...packages].join(", ")}`).toBe(0);
    expect(actionsIn(sources)).toEqual(["src/cli/actions/code.ts"]);
    for (const lazy of ["src/node/join-calls.ts", "src/transport/download/download-release.ts", "src/admin/index.ts"])
      expect(sources).not.toContain(lazy);
  });
});
