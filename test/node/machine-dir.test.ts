// The machine directory: the layout and modes on disk, a half-written identity refused rather
// than replaced, a file where the directory should be, the session's round trip, and writes that
// a kill -9 never leaves torn.
import { spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdentityError, StratumError } from "../../src/errors/index.js";
import { openMachineDirectory, parseJoinSession, type JoinSession } from "../../src/node/index.js";
import { createClusterCa } from "../../src/server/ca.js";

let tmp: string;
let caPem: string;
let caFp: string;
beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "stratum-machine-dir-"));
  const ca = await createClusterCa();
  caPem = ca.certPem;
  caFp = ca.fingerprint;
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
const fresh = () => join(tmp, `m${++n}`);
const mode = (path: string) => statSync(path).mode & 0o777;

/** A join session as registerMachine makes it, pinned to `keyFingerprint`. */
function sessionFor(keyFingerprint: string, joinId = "nj-test0001"): JoinSession {
  return {
    version: 1,
    endpoint: "127.0.0.1:9444",
    caPem,
    caFingerprint: caFp,
    joinId,
    keyFingerprint,
    pairingCode: "4F7-K2Q",
    release: "0.6.0",
  };
}

/** The error `promise` rejects with (fails when it resolves). */
async function failure(promise: Promise<unknown>): Promise<StratumError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(StratumError.is(error), String(error)).toBe(true);
  return error as StratumError;
}

describe("openMachineDirectory", () => {
  it("creates the identity with its modes (dir 0700, key.pem 0600, cert.pem 0644) and opens it again", async () => {
    const dir = fresh();
    const made = await openMachineDirectory(dir, { create: true });
    expect(made.created).toBe(true);
    expect(made.dir).toBe(dir);
    expect(mode(dir)).toBe(0o700);
    expect(mode(join(dir, "key.pem"))).toBe(0o600);
    expect(mode(join(dir, "cert.pem"))).toBe(0o644);
    expect(readFileSync(join(dir, "key.pem"), "utf8")).toBe(made.identity.keyPem);
    // No temporary file is left behind by the durable writes.
    expect(readdirSync(dir).sort()).toEqual(["cert.pem", "key.pem"]);

    const again = await openMachineDirectory(dir);
    expect(again.created).toBe(false);
    expect(again.identity.keyFingerprint).toBe(made.identity.keyFingerprint);
    const alsoWithCreate = await openMachineDirectory(dir, { create: true });
    expect(alsoWithCreate.created).toBe(false);
    expect(alsoWithCreate.identity.keyFingerprint).toBe(made.identity.keyFingerprint);
  });

  it("names the paths of the layout: session.json, release/<version>, delivery", async () => {
    const dir = fresh();
    const machine = await openMachineDirectory(dir, { create: true });
    expect(machine.sessionFile).toBe(join(dir, "session.json"));
    expect(machine.deliveryDir).toBe(join(dir, "delivery"));
    expect(machine.releaseDir("0.6.0")).toBe(join(dir, "release", "0.6.0"));
    for (const unsafe of ["../etc", "a/b", ".hidden", "", "x".repeat(65)]) {
      expect(() => machine.releaseDir(unsafe), unsafe).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
  });

  it("resolves a relative directory to an absolute one", async () => {
    const machine = await openMachineDirectory(relative(process.cwd(), join(tmp, "rel")), { create: true });
    expect(machine.dir).toBe(join(tmp, "rel"));
    expect(machine.releaseDir("0.6.0")).toBe(join(tmp, "rel", "release", "0.6.0"));
  });

  it("creates the identity in an existing empty directory", async () => {
    const dir = fresh();
    mkdirSync(dir);
    const machine = await openMachineDirectory(dir, { create: true });
    expect(machine.created).toBe(true);
    expect(existsSync(join(dir, "cert.pem"))).toBe(true);
  });

  it("without create, refuses a directory with no identity (IDENTITY_INVALID) and makes nothing", async () => {
    const empty = fresh();
    mkdirSync(empty);
    const error = await failure(openMachineDirectory(empty));
    expect(error).toBeInstanceOf(IdentityError);
    expect(error.code).toBe("IDENTITY_INVALID");
    expect(error.message).toContain("holds no machine identity");
    expect(readdirSync(empty)).toEqual([]);
    const missing = fresh();
    expect((await failure(openMachineDirectory(missing))).code).toBe("IDENTITY_INVALID");
    expect(existsSync(missing)).toBe(false);
  });

  it("refuses half an identity (FILE_ERROR) and never replaces it, even with create", async () => {
    for (const [present, absent] of [
      ["key.pem", "cert.pem"],
      ["cert.pem", "key.pem"],
    ] as const) {
      const dir = fresh();
      mkdirSync(dir);
      writeFileSync(join(dir, present), "kept as it is", { mode: 0o600 });
      const error = await failure(openMachineDirectory(dir, { create: true }));
      expect(error.code).toBe("FILE_ERROR");
      expect(error.message).toContain(`${present} but no ${absent}`);
      expect(readFileSync(join(dir, present), "utf8")).toBe("kept as it is");
      expect(existsSync(join(dir, absent))).toBe(false);
    }
  });

  it("says a file given as the directory is not a directory (FILE_ERROR), for every call", async () => {
    const file = join(tmp, "a-file");
    writeFileSync(file, "x");
    for (const create of [true, false]) {
      const error = await failure(openMachineDirectory(file, { create }));
      expect(error.code).toBe("FILE_ERROR");
      expect(error.message).toContain("is not a directory");
      expect(error.message).not.toMatch(/EEXIST|ENOTDIR/);
    }
    expect(readFileSync(file, "utf8")).toBe("x");
  });

  it("refuses files that are not a key and its certificate (IDENTITY_INVALID), never quoting the key", async () => {
    const a = await openMachineDirectory(fresh(), { create: true });
    const b = await openMachineDirectory(fresh(), { create: true });
    // b's key with a's certificate.
    writeFileSync(join(a.dir, "key.pem"), b.identity.keyPem, { mode: 0o600 });
    const error = await failure(openMachineDirectory(a.dir));
    expect(error.code).toBe("IDENTITY_INVALID");
    expect(error.message).not.toContain("PRIVATE KEY");
  });

  it("tightens a key.pem readable by others to 0600, and says so", async () => {
    const dir = fresh();
    await openMachineDirectory(dir, { create: true });
    chmodSync(join(dir, "key.pem"), 0o644);
    const warnings: string[] = [];
    await openMachineDirectory(dir, { onWarning: (message) => warnings.push(message) });
    expect(mode(join(dir, "key.pem"))).toBe(0o600);
    expect(warnings).toEqual([expect.stringContaining("readable by others (mode 0644)")]);
  });
});

describe("the join session in the machine directory", () => {
  it("round-trips: saved 0644, read back equal, in a new opening of the directory", async () => {
    const dir = fresh();
    const machine = await openMachineDirectory(dir, { create: true });
    const session = sessionFor(machine.identity.keyFingerprint);
    expect(await machine.saveSession(session)).toBe(join(dir, "session.json"));
    expect(mode(join(dir, "session.json"))).toBe(0o644);
    const reopened = await openMachineDirectory(dir);
    expect(await reopened.readSession()).toEqual(session);
    // Replaced, not appended to.
    await reopened.saveSession({ ...session, release: "0.6.1" });
    expect((await machine.readSession()).release).toBe("0.6.1");
    expect(readdirSync(dir).sort()).toEqual(["cert.pem", "key.pem", "session.json"]);
  });

  it("JOIN_SESSION_MISSING before a session is saved; JOIN_SESSION_INVALID for a broken or tampered one", async () => {
    const machine = await openMachineDirectory(fresh(), { create: true });
    expect((await failure(machine.readSession())).code).toBe("JOIN_SESSION_MISSING");
    writeFileSync(machine.sessionFile, "{ not json");
    expect((await failure(machine.readSession())).code).toBe("JOIN_SESSION_INVALID");
    const other = await createClusterCa();
    const tampered = { ...sessionFor(machine.identity.keyFingerprint), caPem: other.certPem };
    writeFileSync(machine.sessionFile, JSON.stringify(tampered));
    expect((await failure(machine.readSession())).code).toBe("JOIN_SESSION_INVALID");
  });

  it("refuses a session pinned to another key (IDENTITY_MISMATCH), saving or reading", async () => {
    const machine = await openMachineDirectory(fresh(), { create: true });
    const other = await openMachineDirectory(fresh(), { create: true });
    const foreign = sessionFor(other.identity.keyFingerprint);
    expect((await failure(machine.saveSession(foreign))).code).toBe("IDENTITY_MISMATCH");
    expect(existsSync(machine.sessionFile)).toBe(false);
    writeFileSync(machine.sessionFile, JSON.stringify(foreign));
    expect((await failure(machine.readSession())).code).toBe("IDENTITY_MISMATCH");
  });

  it("a process killed while saving sessions leaves one whole session, never a torn file", async () => {
    const dir = fresh();
    const machine = await openMachineDirectory(dir, { create: true });
    const first = sessionFor(machine.identity.keyFingerprint, "nj-first000");
    await machine.saveSession(first);
    // A child that saves two sessions in turn as fast as it can, killed with SIGKILL once it
    // has written a few dozen: whatever instant the kill lands, the file is one session.
    const script = `
      import { openMachineDirectory } from ${JSON.stringify(new URL("../../src/node/index.ts", import.meta.url).href)};
      const machine = await openMachineDirectory(process.argv[1]);
      const saved = await machine.readSession();
      for (let i = 0; ; i++) {
        await machine.saveSession({ ...saved, joinId: i % 2 ? "nj-first000" : "nj-second00", release: "0.6." + i });
        if (i === 20) process.stdout.write("busy\\n");
      }`;
    for (let round = 0; round < 2; round++) {
      const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script, dir], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        child.stdout.once("data", () => resolve());
        child.once("exit", (code) => reject(new Error(`the writer exited (${code}) before it was killed: ${stderr}`)));
      });
      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));
      const text = readFileSync(join(dir, "session.json"), "utf8");
      const session = parseJoinSession(text);
      expect(["nj-first000", "nj-second00"]).toContain(session.joinId);
      expect(await machine.readSession()).toEqual(session);
    }
    // Stray temporary files may be left by a kill, but only as hidden names no reader takes for the session.
    for (const name of readdirSync(dir))
      expect(["cert.pem", "key.pem", "session.json"].includes(name) || name.startsWith(".")).toBe(true);
  }, 60_000);
});
