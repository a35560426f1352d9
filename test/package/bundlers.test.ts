// The Node-only entries in a browser build: both bundlers a console team uses stop the build,
// with a message that names the entry to import instead. Measured on the packed package
// installed in a fresh project (scripts/packed-project.mjs), as a user meets it.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build as esbuild } from "esbuild";
import { build as vite } from "vite";
import { beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";

let project: string;
beforeAll(async () => {
  project = ((await packedProject()) as { dir: string }).dir;
  mkdirSync(join(project, "bundlers"), { recursive: true });
}, 300_000);

function entry(name: string, source: string): string {
  const path = join(project, "bundlers", name);
  writeFileSync(path, source);
  return path;
}

async function esbuildError(file: string): Promise<string> {
  try {
    await esbuild({
      entryPoints: [file],
      absWorkingDir: project,
      bundle: true,
      platform: "browser",
      write: false,
      logLevel: "silent",
    });
  } catch (error) {
    return ((error as { errors?: { text: string }[] }).errors ?? []).map((e) => e.text).join("\n") || String(error);
  }
  return "";
}

async function viteError(file: string): Promise<string> {
  try {
    await vite({
      configFile: false,
      root: project,
      logLevel: "silent",
      build: { write: false, rollupOptions: { input: file } },
    });
  } catch (error) {
    return String((error as Error).message ?? error);
  }
  return "";
}

describe.each([
  ["node", "registerMachine"],
  ["release", "verifyReleaseDirectory"],
  ["server", "createClusterCa"],
])("a browser build importing @stratum/join/%s", (subpath, name) => {
  const source = `import { ${name} } from "@stratum/join/${subpath}";\nconsole.log(${name});\n`;

  it("fails under esbuild, naming the entry to use", async () => {
    const message = await esbuildError(entry(`${subpath}-esbuild.js`, source));
    expect(message).toContain(`@stratum/join/${subpath} is Node-only`);
    expect(message).toContain("in a browser, import @stratum/join (the browser-safe root entry) instead");
  });

  it("fails under Vite, naming the entry to use", async () => {
    const message = await viteError(entry(`${subpath}-vite.js`, source));
    expect(message).toContain(`@stratum/join/${subpath} is Node-only`);
    expect(message).toContain("in a browser, import @stratum/join (the browser-safe root entry) instead");
  });
});

describe("the browser-safe entries in a browser build", () => {
  it("build under both bundlers", async () => {
    const file = entry(
      "root.js",
      `import { parseJoinCode } from "@stratum/join";\nconsole.log(parseJoinCode("4F7K-2Q9M-ABD").formatted);\n`,
    );
    expect(await esbuildError(file)).toBe("");
    expect(await viteError(file)).toBe("");
  });
});
