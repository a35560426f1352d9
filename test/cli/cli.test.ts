// The stratum-join CLI, run in-process with captured output against a reference server on
// loopback (real TLS 1.3, real files in temp directories): every command, the --json shapes,
// the exit codes, Ctrl-C, and one run of the real entry as a process.
import { execFile } from "node:child_process";
import { connect as netConnect, createServer as createNetServer } from "node:net";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseJoinUrl } from "../../src/index.js";
import { parseJoinSession } from "../../src/node/index.js";
import { generateReleaseKeyPair } from "../../src/release/keys.js";
import { signReleaseDirectory } from "../../src/release/manifest.js";
import { COMMANDS, EXIT_CODE_TABLE, exitCodeForCode } from "../../src/cli/run.js";
import { COMMON_FLAGS } from "../../src/cli/args.js";
import { demoInventory } from "../helpers/inventory.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";
import { writeSecretsFile } from "../node/machine-secrets.js";
import { startSwtpm, type Swtpm } from "../node/swtpm.js";
import { insertJoinRow } from "../reference-server/helpers.js";
import { cli, type Run } from "./run-cli.js";
import { startMirroredRelease, type MirroredRelease } from "../release/helpers/mirrored-release.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "stratum-cli-"));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("code check (offline)", () => {
  it("accepts a valid code without echoing it", async () => {
    const run = await cli(["code", "check", "4f7k 2q9m abd"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("well formed");
    expect(run.stdout).not.toContain("4F7K");
    const json = await cli(["code", "check", "4F7K-2Q9M-ABD", "--json"]);
    expect(json.json).toEqual({ valid: true, selector: "4F" });
  });

  it("suggests the adjacent swap that makes a mistyped code valid (exit 3) to a person at a terminal only", async () => {
    // The suggestion is the real code: on a terminal, yes; in a pipe (a log), in --json, never.
    const tty = await cli(["code", "check", "4F7K-2Q9M-BAD"], { isTTY: true, env: { NO_COLOR: "1" } });
    expect(tty.code).toBe(3);
    expect(tty.stderr).toContain("did you mean 4F7K-2Q9M-ABD?");
    const piped = await cli(["code", "check", "4F7K-2Q9M-BAD"]);
    expect(piped.code).toBe(3);
    expect(piped.stderr).not.toContain("4F7K-2Q9M-ABD");
    expect(piped.stderr).toContain("run this on a terminal to see which");
    const debug = await cli(["code", "check", "4F7K-2Q9M-BAD"], { env: { STRATUM_DEBUG: "1" } });
    expect(debug.stderr).toContain("at "); // the stack trace is there, without the code
    expect(debug.stderr).not.toContain("4F7K-2Q9M-ABD");
    for (const isTTY of [false, true]) {
      const json = await cli(["--json", "code", "check", "4F7K-2Q9M-BAD"], { isTTY });
      expect(json.code).toBe(3);
      expect(json.json.error).toMatchObject({ code: "JOIN_CODE_MALFORMED", reason: "check", exitCode: 3 });
      expect(json.json.error.suggestion).toBeUndefined();
      expect(json.stdout + json.stderr).not.toContain("4F7K-2Q9M-ABD");
    }
  });

  it("names a bad character and its position (exit 3), and reads join URLs too", async () => {
    const run = await cli(["code", "check", "4F7U-2Q9M-ABD", "--json"]);
    expect(run.code).toBe(3);
    expect(run.json).toEqual({
      error: {
        code: "JOIN_CODE_MALFORMED",
        message: expect.stringContaining("position 4"),
        exitCode: 3,
        reason: "character",
        position: 4,
        character: "U",
      },
    });
    const url = await cli(["code", "check", "stratum-join://192.0.2.240/4F7K-2Q9M-ABD", "--json"]);
    expect(url.json).toEqual({ valid: true, selector: "4F", endpoint: "192.0.2.240:9444" });
    const badUrl = await cli(["code", "check", "https://192.0.2.240/4F7K-2Q9M-ABD", "--json"]);
    expect(badUrl.code).toBe(3);
  });
});

describe("help, usage and the reference", () => {
  it("--help works for every command, listing each of its flags", async () => {
    for (const command of COMMANDS) {
      const run = await cli([...command.path, "--help"]);
      expect(run.code, command.path.join(" ")).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: stratum-join ${command.path.join(" ")}`));
      const flags = Object.entries({ ...command.flags, ...COMMON_FLAGS }).filter(([, spec]) => !spec.hidden);
      for (const [flag] of flags) expect(run.stdout, `${command.path.join(" ")} --${flag}`).toContain(`--${flag}`);
      expect(run.stdout, command.path.join(" ")).toContain("Examples:");
      // `help <command>` says the same.
      expect((await cli(["help", ...command.path])).stdout).toBe(run.stdout);
    }
    for (const top of [["--help"], ["help"], ["admin", "--help"], ["release", "-h"], ["code", "--help"]]) {
      const run = await cli(top);
      expect(run.code, top.join(" ")).toBe(0);
      expect(run.stdout).toContain("Usage: stratum-join");
    }
  });

  it("usage errors exit 2, as JSON with --json", async () => {
    for (const args of [
      [],
      ["nope"],
      ["admin"],
      ["code", "check"],
      ["check", "--release"],
      ["register", "--bogus"],
      ["code", "check", "A", "B"],
      [
        "register",
        "--url",
        "stratum-join://127.0.0.1/4F7K-2Q9M-ABD",
        "--identity",
        join(tmp, "never"),
        "--release",
        "0.6.0",
        "--inventory",
        "x.json",
        "--collect-inventory",
      ],
      ["register", "--code", "4F7K-2Q9M-ABD", "--identity", tmp, "--release", "0.6.0"],
    ]) {
      const run = await cli(args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toContain("USAGE");
    }
    const run = await cli(["register", "--identity", tmp, "--json"]);
    expect(run.code).toBe(2);
    expect(run.json.error).toMatchObject({ code: "USAGE", exitCode: 2, message: expect.stringContaining("--url") });
    expect(run.stderr).toBe("");
  });

  it("--version prints the package's version", async () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    expect((await cli(["--version"])).stdout.trim()).toBe(pkg.version);
  });

  it("the exit-code table maps each code once", () => {
    const seen = new Set<string>();
    for (const row of EXIT_CODE_TABLE)
      for (const code of row.codes) {
        expect(seen.has(code), code).toBe(false);
        seen.add(code);
      }
    expect(exitCodeForCode("LISTENER_NOT_PROVEN")).toBe(4);
    expect(exitCodeForCode("PAIRING_MISMATCH")).toBe(10);
    expect(exitCodeForCode("SOMETHING_NEW")).toBe(1);
  });
});

describe("release keygen, sign, verify", () => {
  it("makes keys, signs a tiny release, verifies it, and refuses a tampered or foreign one (exit 11)", async () => {
    const dir = join(tmp, "rel");
    mkdirSync(join(dir, "os", "blobs"), { recursive: true });
    mkdirSync(join(dir, "sysext"), { recursive: true });
    writeFileSync(join(dir, "os", "blobs", "a"), "blob a\n");
    writeFileSync(join(dir, "sysext", "b"), "sysext b\n");
    const key = join(tmp, "release.key");

    const keygen = await cli(["release", "keygen", "--key", key, "--json"]);
    expect(keygen.code).toBe(0);
    expect(keygen.json).toEqual({
      keyid: expect.stringMatching(/^[0-9a-f]{64}$/),
      privateKeyFile: key,
      publicKeyFile: `${key}.pub`,
    });
    expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(statSync(`${key}.pub`).mode & 0o777).toBe(0o644);
    expect(keygen.stdout).not.toContain("PRIVATE KEY");
    // Never overwritten.
    const again = await cli(["release", "keygen", "--key", key, "--json"]);
    expect(again.json.error).toMatchObject({ code: "FILE_ERROR", exitCode: 15 });

    const sign = await cli(["release", "sign", dir, "--release", "0.6.0", "--key", key, "--json"]);
    expect(sign.code).toBe(0);
    expect(sign.json).toMatchObject({
      release: "0.6.0",
      files: 2,
      signedBy: [keygen.json.keyid],
      manifestPath: join(dir, "payload", "manifest.json"),
    });

    const verify = await cli(["release", "verify", dir, "--release", "0.6.0", "--trusted-key", `${key}.pub`, "--json"]);
    expect(verify.code).toBe(0);
    expect(verify.json).toMatchObject({ release: "0.6.0", files: 2, signedBy: [keygen.json.keyid] });
    expect(
      (await cli(["release", "verify", dir, "--release", "0.6.0", "--trusted-key", `${key}.pub`])).stdout,
    ).toContain("ok: release 0.6.0 verified");

    const rollback = await cli([
      "release",
      "verify",
      dir,
      "--release",
      "0.7.0",
      "--trusted-key",
      `${key}.pub`,
      "--json",
    ]);
    expect(rollback.code).toBe(11);
    expect(rollback.json.error).toMatchObject({ code: "RELEASE_UNVERIFIED", rule: "release" });

    const other = join(tmp, "other.key");
    await cli(["release", "keygen", "--key", other]);
    const foreign = await cli([
      "release",
      "verify",
      dir,
      "--release",
      "0.6.0",
      "--trusted-key",
      `${other}.pub`,
      "--json",
    ]);
    expect(foreign.code).toBe(11);
    expect(foreign.json.error).toMatchObject({ code: "RELEASE_UNVERIFIED", rule: "signature-threshold" });

    writeFileSync(join(dir, "sysext", "b"), "sysext B\n");
    const tampered = await cli([
      "release",
      "verify",
      dir,
      "--release",
      "0.6.0",
      "--trusted-key",
      `${key}.pub`,
      "--json",
    ]);
    expect(tampered.code).toBe(11);
    expect(tampered.json.error).toMatchObject({ code: "RELEASE_UNVERIFIED", rule: "hash", path: "sysext/b" });

    const missing = await cli([
      "release",
      "verify",
      dir,
      "--release",
      "0.6.0",
      "--trusted-key",
      join(tmp, "nope.pub"),
      "--json",
    ]);
    expect(missing.json.error).toMatchObject({ code: "FILE_ERROR", exitCode: 15 });
  });
});

describe("against a reference server", () => {
  let h: TestServer;
  let admin: string[];
  let url: string;
  let formatted: string;
  let canonical: string;
  /** Every output of every joiner command, to prove none carries the code or the token. */
  const outputs: string[] = [];
  const joiner = async (args: string[], options: Parameters<typeof cli>[1] = {}): Promise<Run> => {
    const run = await cli(args, options);
    outputs.push(run.stdout, run.stderr);
    return run;
  };
  const inventoryFile = () => {
    const file = join(tmp, "inventory.json");
    writeFileSync(file, JSON.stringify(demoInventory));
    return file;
  };

  let tpm: Swtpm;
  beforeAll(async () => {
    [h, tpm] = await Promise.all([startTestServer({ timing: { tickMs: 100 } }), startSwtpm()]);
    admin = ["--api", h.server.adminUrl];
  });
  afterAll(async () => {
    await tpm?.stop();
    const all = outputs.join("\n");
    if (canonical) {
      expect(all).not.toContain(canonical);
      expect(all).not.toContain(formatted);
    }
    expect(all).not.toContain(h.server.adminToken);
    await h?.dispose();
  });

  it("admin mint prints the code once, marked secret, and never the token (token from STRATUM_TOKEN)", async () => {
    const run = await cli(["admin", "mint", ...admin, "--endpoint", h.server.joinEndpoint, "--json"], {
      env: { STRATUM_TOKEN: h.server.adminToken },
    });
    expect(run.code).toBe(0);
    expect(run.json).toMatchObject({
      secret: ["code", "url"],
      notice: expect.stringContaining("shown only now"),
      joinCode: { id: expect.any(String), state: "live" },
    });
    url = run.json.url;
    ({ formatted, code: canonical } = parseJoinUrl(url).code);
    expect(run.json.code).toBe(formatted);
    expect(run.stdout + run.stderr).not.toContain(h.server.adminToken);
    const human = await cli(["admin", "mint", ...admin, "--endpoint", h.server.joinEndpoint], {
      env: { STRATUM_API: h.server.adminUrl, STRATUM_TOKEN: h.server.adminToken },
    });
    expect(human.stdout).toContain("SECRET, shown only now");
    // admin codes lists ids and selectors, never a code.
    const codes = await cli(["admin", "codes", ...admin, "--token", h.server.adminToken, "--json"]);
    expect(codes.json.items.length).toBe(2);
    expect(codes.stdout).not.toContain(formatted);
    expect(codes.stdout).not.toContain(h.server.adminToken);
  });

  it("admin: a wrong token exits 12, a missing one 2, an unknown join 14", async () => {
    const wrong = await cli(["admin", "joins", ...admin, "--token", "not-the-token", "--json"]);
    expect(wrong.code).toBe(12);
    expect(wrong.json.error).toMatchObject({ code: "UNAUTHORIZED", status: 401 });
    expect((await cli(["admin", "joins", ...admin])).code).toBe(2);
    const tokenFile = join(tmp, "token");
    writeFileSync(tokenFile, `${h.server.adminToken}\n`, { mode: 0o600 });
    const unknown = await cli(["admin", "joins", "nj-doesnotexist", ...admin, "--token-file", tokenFile, "--json"]);
    expect(unknown.code).toBe(14);
    expect(unknown.json.error).toMatchObject({ code: "NOT_FOUND" });
    expect((await cli(["admin", "reject", "nj-x", ...admin, "--token-file", tokenFile])).code).toBe(2); // --reason is required
  });

  it("check: the listener proves the code; another release is refused with the cluster's (exit 6)", async () => {
    const ok = await joiner(["check", "--url", url, "--release", "0.6.0", "--json"]);
    expect(ok.code).toBe(0);
    expect(ok.json).toMatchObject({
      clusterRelease: "0.6.0",
      caFingerprint: h.server.caFingerprint,
      endpoint: h.server.joinEndpoint,
    });
    const human = await joiner(["check", "--release", "0.6.0"], { env: { STRATUM_JOIN_URL: url } });
    expect(human.stdout).toContain("proved the code");
    const old = await joiner(["check", "--url", url, "--release", "0.3.0", "--json"]);
    expect(old.code).toBe(6);
    expect(old.json.error).toMatchObject({
      code: "RELEASE_MISMATCH",
      status: 409,
      details: { clusterRelease: "0.6.0", isoPath: expect.stringContaining("0.6.0") },
    });
    const oldHuman = await joiner(["check", "--url", url, "--release", "0.3.0"]);
    expect(oldHuman.stderr).toContain("clusterRelease: 0.6.0");
  });

  it("a well-formed but wrong code exits 4; a revoked code exits 5", async () => {
    const { endpoint } = parseJoinUrl(url);
    const wrong = await joiner([
      "check",
      "--endpoint",
      endpoint,
      "--code",
      "4F7K-2Q9M-ABD",
      "--release",
      "0.6.0",
      "--json",
    ]);
    expect(wrong.code).toBe(4);
    expect(wrong.json.error.code).toMatch(/^(LISTENER_NOT_PROVEN|JOIN_CODE_INVALID)$/);
    const minted = await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint });
    await h.admin.revokeJoinCode(minted.joinCode.id);
    const revoked = await joiner(["check", "--url", minted.url, "--release", "0.6.0", "--json"]);
    expect(revoked.code).toBe(5);
    expect(revoked.json.error).toMatchObject({ code: "JOIN_CODE_REVOKED", status: 401 });
  });

  it("register → admin joins → approve (pairing code checked) → register --wait delivering → delivery written → status", async () => {
    const dir = join(tmp, "machine-1");
    const inventory = inventoryFile();
    const first = await joiner([
      "register",
      "--url",
      url,
      "--identity",
      dir,
      "--release",
      "0.6.0",
      "--inventory",
      inventory,
      "--hostname",
      "node-2",
      "--json",
    ]);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.json).toMatchObject({
      state: "pending",
      created: true,
      identity: { dir, created: true },
      caFingerprint: h.server.caFingerprint,
      sessionFile: join(dir, "session.json"),
    });
    const { joinId, pairingCode } = first.json;
    expect(pairingCode).toMatch(/^[0-9A-Z]{3}-[0-9A-Z]{3}$/);
    // The identity: DIR 0700, key 0600, cert 0644; the session saved and valid.
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, "key.pem")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "cert.pem")).mode & 0o777).toBe(0o644);
    const session = parseJoinSession(readFileSync(join(dir, "session.json"), "utf8"));
    expect(session).toMatchObject({ joinId, pairingCode, caFingerprint: h.server.caFingerprint, release: "0.6.0" });
    // With --json the person still sees the pairing code, large, on stderr.
    expect(first.stderr).toContain([...pairingCode].join(" "));
    expect(first.stderr).toMatch(/┏━+┓/);
    expect(first.stdout).not.toContain("PRIVATE KEY");

    const joins = await cli(["admin", "joins", ...admin, "--token", h.server.adminToken, "--json"]);
    const listed = joins.json.items.find((j: { id: string }) => j.id === joinId);
    expect(listed).toMatchObject({
      pairingCode,
      state: "pending",
      hostname: "node-2",
      keyFingerprint: first.json.keyFingerprint,
    });
    const pendingOnly = await cli([
      "admin",
      "joins",
      ...admin,
      "--token",
      h.server.adminToken,
      "--state",
      "joined",
      "--json",
    ]);
    expect(pendingOnly.json.items).toEqual([]);
    const table = await cli(["admin", "joins", ...admin, "--token", h.server.adminToken]);
    expect(table.stdout).toMatch(new RegExp(`${joinId}\\s+pending\\s+${pairingCode}`));

    // Approving with the wrong pairing code is refused before anything is approved.
    const otherCode = pairingCode === "000-000" ? "111-111" : "000-000";
    const mismatch = await cli([
      "admin",
      "approve",
      joinId,
      ...admin,
      "--token",
      h.server.adminToken,
      "--pairing-code",
      otherCode,
      "--json",
    ]);
    expect(mismatch.code).toBe(10);
    expect(mismatch.json.error.code).toBe("PAIRING_MISMATCH");
    // The join's own code is never printed (it would be the one to copy), in JSON or for a person.
    expect(mismatch.stdout + mismatch.stderr).not.toContain(pairingCode);
    const told = await cli([
      "admin",
      "approve",
      joinId,
      ...admin,
      "--token",
      h.server.adminToken,
      "--pairing-code",
      otherCode,
    ]);
    expect(told.code).toBe(10);
    expect(told.stderr).toContain("does not match");
    expect(told.stderr).toContain("on the machine's own screen");
    expect(told.stdout + told.stderr).not.toContain(pairingCode);
    expect((await h.admin.getNodeJoin(joinId)).state).toBe("pending");
    // A refused assignment: exit 13 with the field.
    const badFile = join(tmp, "bad-assignment.json");
    writeFileSync(badFile, JSON.stringify({ role: "compute" }));
    const refused = await cli([
      "admin",
      "approve",
      joinId,
      ...admin,
      "--token",
      h.server.adminToken,
      "--assignment",
      badFile,
      "--json",
    ]);
    expect(refused.code).toBe(13);
    expect(refused.json.error.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: expect.stringContaining("role") })]),
    );

    const assignment = join(tmp, "assignment.json");
    writeFileSync(assignment, JSON.stringify({ role: "hybrid" }));
    const approve = await cli([
      "admin",
      "approve",
      joinId,
      ...admin,
      "--token",
      h.server.adminToken,
      "--assignment",
      assignment,
      "--pairing-code",
      pairingCode.toLowerCase(),
      "--json",
    ]);
    expect(approve.code, approve.stdout).toBe(0);
    expect(["approved", "delivering"]).toContain(approve.json.state);

    // The same identity registers again (same registration) and waits for its delivery.
    const wait = await joiner(
      [
        "register",
        "--url",
        url,
        "--identity",
        dir,
        "--release",
        "0.6.0",
        "--wait",
        "delivering",
        "--timeout",
        "20",
        "--secrets",
        writeSecretsFile(join(tmp, "machine-1-homes")),
      ],
      { env: { TPM2TOOLS_TCTI: tpm.tcti } },
    );
    expect(wait.code, wait.stderr).toBe(0);
    expect(wait.stdout).toContain("already registered");
    expect(wait.stdout).toContain("state delivering");
    expect(wait.stdout).toContain("using the machine identity in");
    const delivery = join(dir, "delivery");
    expect(readFileSync(join(delivery, "node.key"), "utf8")).toContain("PRIVATE KEY");
    for (const name of ["node.yaml", "bundle.json", "node.key"])
      expect(statSync(join(delivery, name)).mode & 0o777).toBe(0o600);
    expect(wait.stdout).not.toContain("PRIVATE KEY");

    const status = await joiner(["status", "--identity", dir, "--json"]);
    expect(status.code).toBe(0);
    expect(status.json).toMatchObject({
      joinId,
      state: "delivering",
      pairingCode,
      delivery: { nodeId: expect.any(String) },
    });
    expect(status.stdout).not.toContain("PRIVATE KEY");
    const human = await joiner(["status", "--identity", dir]);
    expect(human.stdout).toContain(`${joinId} at ${session.endpoint}: state delivering`);
  });

  it("register --json: with --wait, stdout is still one document and the states go to stderr", async () => {
    const dir = join(tmp, "machine-json");
    const run = await joiner([
      "register",
      "--url",
      url,
      "--identity",
      dir,
      "--release",
      "0.6.0",
      "--wait",
      "pending",
      "--json",
    ]);
    expect(run.code).toBe(0);
    expect(run.json).toMatchObject({ state: "pending", registration: { state: "pending" } });
    expect(run.stderr).toContain("state pending");
  });

  it("Ctrl-C stops a wait cleanly (exit 130); --timeout while the cluster answers is still waiting (exit 18), not the network", async () => {
    const dir = join(tmp, "machine-abort");
    const controller = new AbortController();
    const started = Date.now();
    // Ctrl-C once the wait has begun (the session is saved just before it).
    const aborted = await joiner(
      ["register", "--url", url, "--identity", dir, "--release", "0.6.0", "--wait", "joined", "--json"],
      { signal: controller.signal, onStderr: (text) => text.includes("join session saved") && controller.abort() },
    );
    expect(aborted.code).toBe(130);
    expect(aborted.json).toEqual({ error: { code: "ABORTED", message: "interrupted", exitCode: 130 } });
    expect(Date.now() - started).toBeLessThan(10_000);
    // The session was saved before the wait: the machine picks up where it stopped.
    expect(existsSync(join(dir, "session.json"))).toBe(true);

    const timedOut = await joiner([
      "register",
      "--url",
      url,
      "--identity",
      dir,
      "--release",
      "0.6.0",
      "--wait",
      "joined",
      "--timeout",
      "1",
      "--json",
    ]);
    expect(timedOut.code).toBe(18);
    expect(timedOut.json.error.code).toBe("STILL_WAITING");
    expect(timedOut.json.error.registration).toMatchObject({ state: "pending" });
  });

  it("a rejected machine: status shows why, register again exits 7", async () => {
    const dir = join(tmp, "machine-rejected");
    const first = await joiner(["register", "--url", url, "--identity", dir, "--release", "0.6.0", "--json"]);
    expect(first.code).toBe(0);
    const reject = await cli([
      "admin",
      "reject",
      first.json.joinId,
      ...admin,
      "--token",
      h.server.adminToken,
      "--reason",
      "unknown serial",
      "--json",
    ]);
    expect(reject.code).toBe(0);
    expect(reject.json).toMatchObject({ state: "rejected", reason: "unknown serial" });
    const status = await joiner(["status", "--identity", dir]);
    expect(status.stdout).toContain("rejected: unknown serial");
    const again = await joiner(["register", "--url", url, "--identity", dir, "--release", "0.6.0", "--json"]);
    expect(again.code).toBe(7);
    expect(again.json.error).toMatchObject({ code: "REGISTRATION_REJECTED", status: 409 });
  });

  it("status without a registration, or with a broken identity, exits 15", async () => {
    const empty = join(tmp, "machine-empty");
    mkdirSync(empty);
    const none = await joiner(["status", "--identity", empty, "--json"]);
    expect(none.code).toBe(15);
    expect(none.json.error.code).toBe("JOIN_SESSION_MISSING");
    const half = join(tmp, "machine-half");
    mkdirSync(half);
    writeFileSync(join(half, "key.pem"), "x", { mode: 0o600 });
    const incomplete = await joiner(["register", "--url", url, "--identity", half, "--release", "0.6.0", "--json"]);
    expect(incomplete.code).toBe(15);
    expect(incomplete.json.error).toMatchObject({
      code: "FILE_ERROR",
      message: expect.stringContaining("no cert.pem"),
    });
  });

  it("admin fail: a running join fails with the reason; another state exits 13, no reason 2", async () => {
    // Last in this block: a running join holds the one-at-a-time queue until it is failed.
    const joinId = insertJoinRow(h.server, { state: "installing" });
    const token = ["--token", h.server.adminToken];
    expect((await cli(["admin", "fail", joinId, ...admin, ...token])).code).toBe(2); // --reason is required
    const failed = await cli(["admin", "fail", joinId, ...admin, ...token, "--reason", "powered off", "--json"]);
    expect(failed.code, failed.stdout).toBe(0);
    expect(failed.json).toMatchObject({
      id: joinId,
      state: "failed",
      failedStep: "operator",
      failedError: "powered off",
    });
    const again = await cli(["admin", "fail", joinId, ...admin, ...token, "--reason", "twice"]);
    expect(again.code).toBe(13);
    expect(again.stderr).toContain("JOIN_STATE_CONFLICT");
  });
});

describe("self-upgrade against a reference server that serves its release", () => {
  let h: TestServer;
  let releases: string;
  let pub: string;
  let url: string;
  beforeAll(async () => {
    releases = mkdtempSync(join(tmpdir(), "stratum-cli-releases-"));
    const dir = join(releases, "0.6.0");
    mkdirSync(join(dir, "os", "blobs"), { recursive: true });
    mkdirSync(join(dir, "sysext"), { recursive: true });
    writeFileSync(join(dir, "os", "blobs", "a"), Buffer.alloc(300_000, 7));
    writeFileSync(join(dir, "sysext", "b"), "sysext b\n");
    const keys = generateReleaseKeyPair();
    await signReleaseDirectory(dir, { release: "0.6.0", keys: [keys.privateKeyPem] });
    pub = join(releases, "release.pub");
    writeFileSync(pub, keys.publicKeyPem);
    h = await startTestServer({ releaseDir: releases, timing: { tickMs: 100 } });
    url = (await h.admin.mintJoinCode({ endpoint: h.server.joinEndpoint })).url;
  });
  afterAll(async () => {
    await h?.dispose();
    rmSync(releases, { recursive: true, force: true });
  });

  it("refuses --self-upgrade without a trusted key (exit 2)", async () => {
    const run = await cli([
      "register",
      "--url",
      url,
      "--identity",
      join(tmp, "up-0"),
      "--release",
      "0.5.0",
      "--self-upgrade",
    ]);
    expect(run.code).toBe(2);
    expect(existsSync(join(tmp, "up-0"))).toBe(false);
  });

  it("downloads the founder's release with a progress bar on a TTY, then registers again on it: pending", async () => {
    const dir = join(tmp, "up-1");
    const run = await cli(
      [
        "register",
        "--url",
        url,
        "--identity",
        dir,
        "--release",
        "0.5.0",
        "--self-upgrade",
        "--trusted-key",
        pub,
        "--json",
      ],
      { isTTY: true },
    );
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.json).toMatchObject({
      state: "pending",
      release: "0.6.0",
      upgrade: { from: "0.5.0", to: "0.6.0", dir: join(dir, "release", "0.6.0"), files: 2 },
    });
    expect(readFileSync(join(dir, "release", "0.6.0", "os", "blobs", "a")).length).toBe(300_000);
    expect(existsSync(join(dir, "release", "0.6.0", "payload", "manifest.json"))).toBe(true);
    expect(run.stderr).toContain("state needs-upgrade");
    expect(run.stderr).toContain("release 0.6.0 [");
    expect(run.stderr).toContain("state pending");
    expect(parseJoinSession(readFileSync(join(dir, "session.json"), "utf8")).release).toBe("0.6.0");
    const listed = await h.admin.getNodeJoin(run.json.joinId);
    expect(listed).toMatchObject({ state: "pending", release: "0.6.0" });
    // The downloaded release verifies with the CLI as well.
    const verify = await cli([
      "release",
      "verify",
      join(dir, "release", "0.6.0"),
      "--release",
      "0.6.0",
      "--trusted-key",
      pub,
    ]);
    expect(verify.code).toBe(0);
  });

  it("a release signed by a key this machine does not trust is refused (exit 11) and stays needs-upgrade", async () => {
    const dir = join(tmp, "up-2");
    const other = join(tmp, "untrusted.key");
    await cli(["release", "keygen", "--key", other]);
    const run = await cli([
      "register",
      "--url",
      url,
      "--identity",
      dir,
      "--release",
      "0.5.0",
      "--self-upgrade",
      "--trusted-key",
      `${other}.pub`,
      "--json",
    ]);
    expect(run.code).toBe(11);
    expect(run.json.error).toMatchObject({ code: "RELEASE_UNVERIFIED", rule: "signature-threshold" });
    const join_ = await h.admin.getNodeJoin(parseJoinSession(readFileSync(join(dir, "session.json"), "utf8")).joinId);
    expect(join_).toMatchObject({ state: "needs-upgrade", failedStep: "upgrade/download" });
    // Without a TTY, no progress bar is drawn.
    expect(run.stderr).not.toContain("[█");

    // release download picks the registration's upgrade up, with the right key this time.
    const download = await cli(["release", "download", "--identity", dir, "--trusted-key", pub, "--json"]);
    expect(download.code, download.stdout + download.stderr).toBe(0);
    expect(download.json).toMatchObject({
      release: "0.6.0",
      dir: join(dir, "release", "0.6.0"),
      files: 2,
      source: expect.stringContaining("founder"),
    });
    expect(readFileSync(join(dir, "release", "0.6.0", "sysext", "b"), "utf8")).toBe("sysext b\n");
  });

  it("release download from a mirror refuses plain HTTP (exit 2) and needs --dest", async () => {
    const http = await cli([
      "release",
      "download",
      "--source",
      "http://mirror.example/0.6.0/",
      "--release",
      "0.6.0",
      "--dest",
      join(tmp, "mirror"),
      "--trusted-key",
      pub,
      "--json",
    ]);
    expect(http.code).toBe(2);
    expect(http.json.error).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("HTTPS") });
    expect(
      (
        await cli([
          "release",
          "download",
          "--source",
          "https://mirror.example/0.6.0/",
          "--release",
          "0.6.0",
          "--trusted-key",
          pub,
        ])
      ).code,
    ).toBe(2);
  });
});

describe("release download --proxy", () => {
  const PASSWORD = "pr0xy-secret";
  let env: MirroredRelease;
  let pub: string;
  beforeAll(async () => {
    env = await startMirroredRelease({ "os/blobs/a": 200_000 });
    pub = join(tmp, "proxy-release.pub");
    writeFileSync(pub, env.fx.keys[0]!.publicKeyPem);
    writeFileSync(join(tmp, "proxy-mirror-ca.pem"), env.mirror.caPem);
  });
  afterAll(async () => {
    await env?.close();
  });

  /** A CONNECT proxy in a few lines: records each request head, refuses with `refuse` or tunnels. */
  async function connectProxy(refuse?: number): Promise<{ url: string; heads: string[]; close(): Promise<void> }> {
    const heads: string[] = [];
    const server = createNetServer((client) => {
      client.once("data", (first) => {
        const head = first.toString("latin1");
        heads.push(head);
        if (refuse) {
          client.end(`HTTP/1.1 ${refuse} Refused\r\nContent-Length: 0\r\n\r\n`);
          return;
        }
        const [host, port] = /^CONNECT (\S+):(\d+) /.exec(head)!.slice(1);
        const upstream = netConnect(Number(port), host!, () => {
          client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
          upstream.pipe(client).on("error", () => {});
          client.pipe(upstream).on("error", () => {});
        });
        upstream.on("error", () => client.destroy());
        client.on("error", () => upstream.destroy());
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    return {
      url: `http://127.0.0.1:${port}`,
      heads,
      close: () => new Promise((r) => server.close(() => r())),
    };
  }

  const args = (dest: string, proxy: string) => [
    "release",
    "download",
    "--source",
    env.mirror.url,
    "--release",
    env.fx.release,
    "--dest",
    dest,
    "--trusted-key",
    pub,
    "--mirror-ca",
    join(tmp, "proxy-mirror-ca.pem"),
    "--proxy",
    proxy,
    "--json",
  ];

  it("goes through the proxy it names, with the URL's credentials as Proxy-Authorization", async () => {
    const proxy = await connectProxy();
    try {
      const withCredentials = proxy.url.replace("http://", `http://joiner:${PASSWORD}@`);
      const run = await cli(args(join(tmp, "via-proxy"), withCredentials));
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.json.source).toContain(`through the proxy ${proxy.url}`);
      expect(proxy.heads).toHaveLength(2);
      for (const head of proxy.heads) {
        expect(head).toMatch(new RegExp(`^CONNECT 127\\.0\\.0\\.1:${env.mirror.port} HTTP/1\\.1\r\n`));
        expect(head).toContain(`Proxy-Authorization: Basic ${Buffer.from(`joiner:${PASSWORD}`).toString("base64")}`);
      }
      expect(run.stdout + run.stderr).not.toContain(PASSWORD);
      expect(readFileSync(join(tmp, "via-proxy", "os", "blobs", "a")).equals(env.fx.contents.get("os/blobs/a")!)).toBe(
        true,
      );
    } finally {
      await proxy.close();
    }
  });

  it("a proxy that refuses: exit 16, reason proxy with its status, no credentials printed", async () => {
    const proxy = await connectProxy(407);
    try {
      const run = await cli(args(join(tmp, "refused"), proxy.url.replace("http://", `http://joiner:${PASSWORD}@`)));
      expect(run.code).toBe(16);
      expect(run.json.error).toMatchObject({ code: "RELEASE_DOWNLOAD_FAILED", reason: "proxy", status: 407 });
      expect(run.json.error.message).toContain(proxy.url);
      expect(run.stdout + run.stderr).not.toContain(PASSWORD);
      expect(proxy.heads).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });
});

describe("the real entry as a process", () => {
  const exec = promisify(execFile);
  it("node --import tsx src/cli/main.ts code check 4F7K-2Q9M-ABD exits 0", async () => {
    const { stdout } = await exec(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "code", "check", "4F7K-2Q9M-ABD"],
      { cwd: root },
    );
    expect(stdout).toContain("ok: the join code is well formed");
    expect(readFileSync(join(root, "src/cli/main.ts"), "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
  });

  it("exits with the error's code, the JSON error on stdout", async () => {
    const failed = await exec(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "code", "check", "4F7K-2Q9M-BAD", "--json"],
      { cwd: root },
    ).catch((e: { code: number; stdout: string }) => e);
    expect((failed as { code: number }).code).toBe(3);
    expect(JSON.parse((failed as { stdout: string }).stdout).error).toMatchObject({ code: "JOIN_CODE_MALFORMED" });
    // The suggested fix is the real code: not in --json.
    expect((failed as { stdout: string }).stdout).not.toContain("4F7K-2Q9M-ABD");
  });
});
