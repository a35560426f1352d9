// Sealing to the TPM and unsealing, against real software TPMs (swtpm) through tpm2-tools: the
// sealed file holds none of the secret's bytes, unseals on its own TPM to the secret, and
// cannot be unsealed by another TPM; each way a TPM cannot be used is a typed error.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TpmError, unsealSecret } from "../../src/node/index.js";
import { plaintextDocument, resolveTcti, sealToTpm } from "../../src/node/tpm.js";
import { startSwtpm, type Swtpm } from "./swtpm.js";

let tpm: Swtpm;
let other: Swtpm;
let dir: string;
beforeAll(async () => {
  [tpm, other] = await Promise.all([startSwtpm(), startSwtpm()]);
  dir = mkdtempSync(join(tmpdir(), "stratum-tpm-test-"));
});
afterAll(async () => {
  await Promise.all([tpm?.stop(), other?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const SECRET = "q2bH6uJ0oKfT1mYw3Zr8c1QnVx4s7pLd9eAiRgUhK0M=";

describe("sealing to the TPM", () => {
  it("seals in memory to a file without the secret's bytes, which this TPM unseals and another cannot", async () => {
    const text = await sealToTpm("openBaoUnsealKey", SECRET, { tcti: tpm.tcti });
    expect(text).not.toContain(SECRET);
    expect(Buffer.from(text).includes(Buffer.from(SECRET))).toBe(false);
    const document = JSON.parse(text) as Record<string, string>;
    expect(document).toMatchObject({ format: "stratum-join/tpm-sealed/v1", field: "openBaoUnsealKey" });
    for (const blob of [document.public!, document.private!])
      expect(Buffer.from(blob, "base64").includes(Buffer.from(SECRET))).toBe(false);
    const file = join(dir, "unseal.sealed");
    writeFileSync(file, text, { mode: 0o600 });

    const back = await unsealSecret(file, { tcti: tpm.tcti });
    expect(back.value).toBe(SECRET);
    expect(back).toMatchObject({ field: "openBaoUnsealKey", sealed: true });
    // The value is readable, never printed by accident.
    expect(inspect(back) + JSON.stringify(back)).not.toContain(SECRET);

    const error = await unsealSecret(file, { tcti: other.tcti }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TpmError);
    expect(error).toMatchObject({ code: "TPM_FAILED", reason: "foreign" });
    expect(String((error as Error).message)).not.toContain(SECRET);
  });

  it("many seals in a row do not run the TPM out of object slots (transient objects are flushed)", async () => {
    for (let i = 0; i < 6; i++) {
      const file = join(dir, `many-${i}.sealed`);
      writeFileSync(file, await sealToTpm("openBaoUnsealKey", `${SECRET}${i}`, { tcti: tpm.tcti }));
      expect((await unsealSecret(file, { tcti: tpm.tcti })).value).toBe(`${SECRET}${i}`);
    }
  });

  it("reaches the TPM of TPM2TOOLS_TCTI when no TCTI is given", async () => {
    const saved = process.env.TPM2TOOLS_TCTI;
    process.env.TPM2TOOLS_TCTI = tpm.tcti;
    try {
      expect(await resolveTcti()).toBe(tpm.tcti);
      const file = join(dir, "env.sealed");
      writeFileSync(file, await sealToTpm("openBaoUnsealKey", SECRET));
      expect((await unsealSecret(file)).value).toBe(SECRET);
    } finally {
      if (saved === undefined) delete process.env.TPM2TOOLS_TCTI;
      else process.env.TPM2TOOLS_TCTI = saved;
    }
  });

  it("without TPM2TOOLS_TCTI: the kernel's resource manager, or TPM_UNAVAILABLE (absent) when there is none", async () => {
    const saved = process.env.TPM2TOOLS_TCTI;
    delete process.env.TPM2TOOLS_TCTI;
    try {
      if (existsSync("/dev/tpmrm0")) expect(await resolveTcti()).toBe("device:/dev/tpmrm0");
      else
        await expect(sealToTpm("openBaoUnsealKey", SECRET)).rejects.toMatchObject({
          name: "TpmError",
          code: "TPM_UNAVAILABLE",
          reason: "absent",
        });
    } finally {
      if (saved !== undefined) process.env.TPM2TOOLS_TCTI = saved;
    }
  });

  it("a TPM that does not answer is TPM_UNAVAILABLE (unreachable); missing tpm2-tools is tools-missing", async () => {
    await expect(
      sealToTpm("openBaoUnsealKey", SECRET, { tcti: `swtpm:host=127.0.0.1,port=${tpm.port + 7}` }),
    ).rejects.toMatchObject({ code: "TPM_UNAVAILABLE", reason: "unreachable" });
    const path = process.env.PATH;
    process.env.PATH = dir;
    try {
      await expect(sealToTpm("openBaoUnsealKey", SECRET, { tcti: tpm.tcti })).rejects.toMatchObject({
        code: "TPM_UNAVAILABLE",
        reason: "tools-missing",
      });
    } finally {
      process.env.PATH = path;
    }
  });

  it("refuses a secret larger than a TPM seals, and a file that is not a sealed secret", async () => {
    await expect(sealToTpm("nodeKey", "x".repeat(129), { tcti: tpm.tcti })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
    const file = join(dir, "not-sealed.json");
    writeFileSync(file, '{"format":"something-else"}');
    await expect(unsealSecret(file, { tcti: tpm.tcti })).rejects.toMatchObject({ reason: "malformed" });
    await expect(unsealSecret(join(dir, "missing"), { tcti: tpm.tcti })).rejects.toMatchObject({
      code: "FILE_ERROR",
    });
  });

  it("reads the plaintext fallback as it is, marked not sealed", async () => {
    const file = join(dir, "plain.json");
    writeFileSync(file, plaintextDocument("openBaoUnsealKey", SECRET));
    const back = await unsealSecret(file);
    expect(back).toMatchObject({ field: "openBaoUnsealKey", sealed: false });
    expect(back.value).toBe(SECRET);
    expect(readFileSync(file, "utf8")).toContain("not sealed");
  });
});
