// A reference founder from the installed package alone: `stratum-join-reference-server
// --sample-release` in the fresh project (scripts/packed-project.mjs) serves a signed release,
// the README's stage 1 runs against it as shown (the key path it prints is the one trusted),
// and it stops cleanly on SIGTERM, saying so, also when npm started it and is the one stopped.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module of the scripts, without types
import { packedProject } from "../../scripts/packed-project.mjs";
import { supplyConstants } from "../readme/markdown.js";
import { startSnippet } from "../readme/processes.js";
import { readmeSnippets, writeSnippets } from "../readme/readme-snippets.js";

let project: string;
let scratch: string;
const started: ChildProcess[] = [];
beforeAll(async () => {
  project = ((await packedProject()) as { dir: string }).dir;
  scratch = mkdtempSync(join(tmpdir(), "stratum-founder-bin-"));
}, 300_000);
afterAll(() => {
  for (const child of started) if (child.exitCode === null) child.kill("SIGKILL");
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

interface Founder {
  child: ChildProcess;
  out: () => string;
  field: (label: string) => string;
  exited: Promise<number | null>;
}

/** Starts `command args` in the project and waits for its banner's last line. */
async function startFounder(command: string, args: string[]): Promise<Founder> {
  const child = spawn(command, args, { cwd: project, stdio: ["ignore", "pipe", "pipe"] });
  started.push(child);
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!/release key|admin token {5}(in|from)|cluster CA.*\n.*\n/.test(out) || !out.includes("admin API")) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the founder did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const field = (label: string) => new RegExp(`^ {2}${label} +(\\S+)`, "m").exec(out)?.[1] ?? "";
  return { child, out: () => out, field, exited };
}

/** True while something accepts TCP connections on `url`'s port. */
function listening(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

const LOOPBACK = ["--admin-addr", "127.0.0.1:0", "--join-addr", "127.0.0.1:0"];

describe("stratum-join-reference-server, from the installed package", () => {
  it("serves a signed sample release: the README's stage 1 runs against it as shown; SIGTERM stops it and says so", async () => {
    const dataDir = join(scratch, "founder");
    const bin = join(project, "node_modules", ".bin", "stratum-join-reference-server");
    const founder = await startFounder(bin, ["--sample-release", "--data-dir", dataDir, ...LOOPBACK]);
    const adminUrl = founder.field("admin API");
    const keyFile = founder.field("release key");
    expect(founder.out()).toContain("sample release  0.6.0");
    const token = founder.field("admin token");

    const mint = await fetch(`${adminUrl}/v1/admin/cluster/join-codes`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "{}",
    });
    const { url } = (await mint.json()) as { url: string };
    const work = mkdtempSync(join(project, "founder-stage-1-"));
    try {
      writeSnippets(work);
      const stage1 = readmeSnippets().find((s) => s.role === "stage-1")!;
      const values = {
        MACHINE_DIR: JSON.stringify(join(scratch, "machine")),
        RELEASE_KEY_FILE: JSON.stringify(keyFile),
        INSTALLED_RELEASE: JSON.stringify("0.5.0"),
      };
      writeFileSync(join(work, "run-stage-1.ts"), supplyConstants(stage1.code, values));
      const run = startSnippet("run-stage-1.ts", { cwd: work, env: { STRATUM_JOIN_URL: url } });
      expect(await run.exited(), run.stderr()).toBe(0);
      expect(run.lines.some((l) => /^release 0\.6\.0: \d+ of \d+ bytes$/.test(l))).toBe(true);
      expect(run.lines.at(-1)).toMatch(/^pending: reboot into the installed system/);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }

    founder.child.kill("SIGTERM");
    expect(await founder.exited).toBe(0);
    expect(founder.out()).toMatch(/SIGTERM: stopping\nstopped\n$/);
    expect(await listening(adminUrl)).toBe(false);
  }, 300_000);

  it("started by npm, it stops when npm is stopped: nothing is left holding the port", async () => {
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const founder = await startFounder(npm, [
      "exec",
      "--",
      "stratum-join-reference-server",
      "--data-dir",
      join(scratch, "under-npm"),
      ...LOOPBACK,
    ]);
    const adminUrl = founder.field("admin API");
    expect(await listening(adminUrl)).toBe(true);
    founder.child.kill("SIGTERM");
    const deadline = Date.now() + 10_000;
    while ((await listening(adminUrl)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await listening(adminUrl)).toBe(false);
  }, 120_000);
});
