// writeDelivery's destinations, each against real files and real processes: an env file keeps
// its other lines, a command gets the secret on stdin and nowhere else, a failing destination
// leaves no partial secret and keeps the old delivery, a plan that cannot work writes nothing,
// an empty secret needs no home, and a newer founder's fields reach the installer through the
// real parser (over TLS, from a listener) without being dropped, printed or written.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { concealSecrets, setDeliveryStepHook } from "../../src/node/delivery.js";
import {
  createMachineIdentity,
  getRegistration,
  writeDelivery,
  type SecretDestinations,
} from "../../src/node/index.js";
import { upsertEnvLine } from "../../src/node/env-file.js";
import type { Delivery } from "../../src/types.js";
import { startFakeListener, type FakeListener } from "./fake-listener.js";
import { filesUnder } from "./machine-secrets.js";

let root: string;
let dir: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "stratum-delivery-test-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
beforeEach(() => {
  dir = join(root, `case-${++n}`);
  mkdirSync(dir);
});

const SECRETS = {
  adminPassword: "admin-9f8e7d6c5b4a3210",
  openBaoToken: "hvs.0123456789abcdefabcd",
  openBaoNodeToken: "hvs.fedcba9876543210dcba",
  postgresPassword: "pg-aa11bb22cc33dd44ee55",
  dnsEncryptionKey: "0f".repeat(32),
};

/** A delivery as the joiner holds it (concealed), with the given secrets and extra bundle fields. */
function delivery(bundle: Record<string, unknown> = SECRETS, extra: Record<string, unknown> = {}): Delivery {
  return concealSecrets({
    nodeId: "n-test0001",
    nodeYaml: "node_id: n-test0001\n",
    bundle: { role: "hybrid", nodes: [{ nodeId: "n-test0001", role: "hybrid" }], region: "eu-1", ...bundle },
    ...extra,
  } as Delivery);
}

/** Files destinations for every secret of SECRETS, under `dir/etc`. */
function files(): SecretDestinations {
  return Object.fromEntries(Object.keys(SECRETS).map((field) => [field, { file: join(dir, "etc", field) }]));
}

describe("an env line destination", () => {
  it("upserts NAME=value, keeping every other line, into a file made 0600", async () => {
    const env = join(dir, "controlplane.env");
    writeFileSync(
      env,
      "# kept\nSTRATUM_REGION=eu-1\nexport STRATUM_IAM_ADMIN_PASSWORD=old\nOTHER=1\nSTRATUM_IAM_ADMIN_PASSWORD=dup",
      {
        mode: 0o644,
      },
    );
    await writeDelivery(join(dir, "delivery"), delivery(), {
      secrets: {
        ...files(),
        adminPassword: { env, name: "STRATUM_IAM_ADMIN_PASSWORD" },
        openBaoToken: { env, name: "STRATUM_OPENBAO_TOKEN" },
      },
    });
    expect(readFileSync(env, "utf8")).toBe(
      `# kept\nSTRATUM_REGION=eu-1\nSTRATUM_IAM_ADMIN_PASSWORD=${SECRETS.adminPassword}\nOTHER=1\nSTRATUM_OPENBAO_TOKEN=${SECRETS.openBaoToken}\n`,
    );
    expect(statSync(env).mode & 0o777).toBe(0o600);
    const fresh = join(dir, "etc", "new", "axdnsd.env");
    await writeDelivery(join(dir, "delivery"), delivery(), {
      secrets: { ...files(), dnsEncryptionKey: { env: fresh, name: "ENCRYPTION_KEY" } },
    });
    expect(readFileSync(fresh, "utf8")).toBe(`ENCRYPTION_KEY=${SECRETS.dnsEncryptionKey}\n`);
    expect(statSync(fresh).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "etc", "new")).mode & 0o777).toBe(0o700);
  });

  it("upsertEnvLine: appends when absent, adds the missing last newline, keeps blank lines", () => {
    expect(upsertEnvLine("", "A", "1")).toBe("A=1\n");
    expect(upsertEnvLine("B=2", "A", "1")).toBe("B=2\nA=1\n");
    expect(upsertEnvLine("B=2\n\nA = 0\n", "A", "1")).toBe("B=2\n\nA=1\n");
    expect(upsertEnvLine("AB=2\n", "A", "1")).toBe("AB=2\nA=1\n");
  });
});

describe("a command destination", () => {
  it("gets the secret on stdin only: never in its argv or its environment", async () => {
    const seen = join(dir, "seen.json");
    const script = `const fs = require("fs"); fs.writeFileSync(${JSON.stringify(seen)}, JSON.stringify({ argv: process.argv, env: process.env, stdin: fs.readFileSync(0, "utf8") }))`;
    await writeDelivery(join(dir, "delivery"), delivery(), {
      secrets: {
        ...files(),
        postgresPassword: { command: [process.execPath, "-e", script, "secret", "create", "pg", "-"] },
      },
    });
    const { argv, env, stdin } = JSON.parse(readFileSync(seen, "utf8")) as {
      argv: string[];
      env: object;
      stdin: string;
    };
    expect(stdin).toBe(SECRETS.postgresPassword);
    expect(JSON.stringify(argv)).not.toContain(SECRETS.postgresPassword);
    expect(JSON.stringify(env)).not.toContain(SECRETS.postgresPassword);
  });

  it("a command that fails: SECRET_DESTINATION_FAILED naming the field and what was placed, never the secret; the old delivery is kept", async () => {
    const target = join(dir, "delivery");
    await writeDelivery(target, delivery({ ...SECRETS, nodeKey: "-----BEGIN PRIVATE KEY-----\nOLD\n" }), {
      secrets: files(),
    });
    const before = readFileSync(join(target, "node.key"), "utf8");
    const echo = `process.stderr.write("refused: " + require("fs").readFileSync(0, "utf8") + "\\n"); process.exit(3)`;
    const error = (await writeDelivery(target, delivery({ ...SECRETS, nodeKey: "NEW" }), {
      secrets: { ...files(), postgresPassword: { command: [process.execPath, "-e", echo] } },
    }).catch((e: unknown) => e)) as Record<string, unknown> & Error;
    expect(error).toMatchObject({
      name: "SecretDestinationError",
      code: "SECRET_DESTINATION_FAILED",
      fields: ["postgresPassword"],
    });
    expect(error.message).toMatch(/exited 3 \(refused: \[secret\]\)/);
    expect(`${error.message}${JSON.stringify(error)}${inspect(error)}`).not.toContain(SECRETS.postgresPassword);
    // Secrets go in the bundle's order: these were in their homes before the command failed.
    expect(error.placed).toEqual(["adminPassword", "openBaoToken", "openBaoNodeToken"]);
    expect(readFileSync(join(target, "node.key"), "utf8")).toBe(before);
    expect(readdirSync(dir)).not.toContainEqual(expect.stringMatching(/staging|old/));
    // A later destination's failure lists the ones already in their homes.
    const later = await writeDelivery(target, delivery(), {
      secrets: { ...files(), dnsEncryptionKey: { command: [process.execPath, "-e", "process.exit(1)"] } },
    }).catch((e: unknown) => e);
    expect(later).toMatchObject({
      fields: ["dnsEncryptionKey"],
      placed: ["adminPassword", "openBaoToken", "openBaoNodeToken", "postgresPassword"],
    });
  });
});

describe("a file destination", () => {
  it("is written 0600, durably; a write that fails leaves no partial secret and what a crash left beside it is swept", async () => {
    const path = join(dir, "etc", "secrets", "openbao-node.token");
    mkdirSync(join(dir, "etc", "secrets"), { recursive: true });
    writeFileSync(join(dir, "etc", "secrets", ".openbao-node.token.tmp-0123456789ab"), SECRETS.openBaoNodeToken);
    await writeDelivery(join(dir, "delivery"), delivery(), {
      secrets: { ...files(), openBaoNodeToken: { file: path } },
    });
    expect(readFileSync(path, "utf8")).toBe(SECRETS.openBaoNodeToken);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, "etc", "secrets"))).toEqual(["openbao-node.token"]);

    writeFileSync(join(dir, "a-file"), "x");
    const error = await writeDelivery(join(dir, "delivery"), delivery(), {
      secrets: { ...files(), openBaoToken: { file: join(dir, "a-file", "token") } },
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "SECRET_DESTINATION_FAILED", fields: ["openBaoToken"] });
    expect((error as Error).message).toMatch(/EEXIST|ENOTDIR/);
    // The token is where the first write put it, and nowhere near the destination that failed.
    const holders = filesUnder(dir).filter((f) => readFileSync(f, "utf8").includes(SECRETS.openBaoToken));
    expect(holders).toEqual([join(dir, "etc", "openBaoToken")]);
  });

  it("a callback gets the secret and its field; its throw is the destination's failure", async () => {
    const got: string[] = [];
    await writeDelivery(join(dir, "delivery"), delivery(), {
      secrets: { ...files(), adminPassword: (secret, { field }) => void got.push(`${field}=${secret}`) },
    });
    expect(got).toEqual([`adminPassword=${SECRETS.adminPassword}`]);
    await expect(
      writeDelivery(join(dir, "delivery"), delivery(), {
        secrets: {
          ...files(),
          adminPassword: () => {
            throw new Error("vault sealed");
          },
        },
      }),
    ).rejects.toMatchObject({ code: "SECRET_DESTINATION_FAILED", fields: ["adminPassword"] });
  });
});

describe("a plan that cannot work", () => {
  const cases: Array<[string, (d: string) => SecretDestinations, RegExp]> = [
    ["a relative path", () => ({ adminPassword: { file: "etc/admin" } }), /absolute/],
    [
      "the unseal key to a plaintext file",
      (d) => ({ openBaoUnsealKey: { file: join(d, "key") } }),
      /never written in plaintext/,
    ],
    [
      "the unseal key as an env line",
      (d) => ({ openBaoUnsealKey: { env: join(d, "e"), name: "K" } }),
      /never written in plaintext/,
    ],
    ["an env name that is not one", (d) => ({ adminPassword: { env: join(d, "e"), name: "A-B" } }), /variable name/],
    [
      "two fields on one file",
      (d) => ({ adminPassword: { file: join(d, "x") }, openBaoToken: { file: join(d, "x") } }),
      /as the destination of/,
    ],
    [
      "one env line twice",
      (d) => ({ adminPassword: { env: join(d, "e"), name: "A" }, openBaoToken: { env: join(d, "e"), name: "A" } }),
      /as the destination of/,
    ],
    [
      "a file inside the delivery directory",
      (d) => ({ adminPassword: { file: join(d, "delivery", "admin") } }),
      /inside the delivery directory/,
    ],
    ["a public field", (d) => ({ region: { file: join(d, "region") } }), /public field/],
    ["two kinds at once", (d) => ({ adminPassword: { file: join(d, "a"), tpm: join(d, "b") } as never }), /not one of/],
    ["an empty command", () => ({ adminPassword: { command: [] } }), /not a command/],
    [
      "a fallback of another name",
      (d) => ({ openBaoUnsealKey: { tpm: join(d, "s"), withoutTpm: "file" as never } }),
      /withoutTpm/,
    ],
  ];
  it.each(cases)("%s: SECRET_DESTINATION_INVALID naming the field, nothing written", async (_name, make, why) => {
    const bundle = { ...SECRETS, openBaoUnsealKey: "unseal-key-base64=" };
    const error = await writeDelivery(join(dir, "delivery"), delivery(bundle), {
      secrets: { ...files(), openBaoUnsealKey: { tpm: join(dir, "sealed") }, ...make(dir) },
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "SECRET_DESTINATION_INVALID" });
    expect((error as Error).message).toMatch(why);
    expect(filesUnder(dir)).toEqual([]);
  });

  it("a value an env line cannot carry is refused before anything is written", async () => {
    const error = await writeDelivery(join(dir, "delivery"), delivery({ ...SECRETS, adminPassword: "two\nlines" }), {
      secrets: { ...files(), adminPassword: { env: join(dir, "e"), name: "A" } },
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "SECRET_DESTINATION_INVALID", fields: ["adminPassword"] });
    expect((error as Error).message).not.toContain("two");
    expect(filesUnder(dir)).toEqual([]);
  });
});

describe("sealing first", () => {
  it("every seal comes before any other step: a TPM that fails stops the write before any destination gets its secret", async () => {
    const handed: string[] = [];
    const error = await writeDelivery(join(dir, "delivery"), delivery(), {
      secrets: {
        ...files(),
        // First in the bundle's order, so it would be placed before the sealed one.
        adminPassword: (secret) => void handed.push(secret),
        openBaoToken: { tpm: join(dir, "token.sealed") },
      },
      tpm: { tcti: "swtpm:host=127.0.0.1,port=1" },
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "TpmError", code: "TPM_UNAVAILABLE" });
    expect(handed).toEqual([]);
    expect(filesUnder(dir)).toEqual([]);
  });
});

describe("secrets a cluster does not hand out", () => {
  it("an absent or empty secret needs no destination, and one named for it is left alone", async () => {
    const env = join(dir, "controlplane.env");
    writeFileSync(env, "STRATUM_IAM_ADMIN_PASSWORD=kept\n");
    const { adminPassword: _a, ...rest } = SECRETS;
    const written = await writeDelivery(
      join(dir, "delivery"),
      delivery({ ...rest, openBaoUnsealKey: "", openBaoToken: "" }),
      {
        secrets: {
          postgresPassword: { file: join(dir, "pg") },
          openBaoNodeToken: { file: join(dir, "node-token") },
          dnsEncryptionKey: { file: join(dir, "dns") },
          adminPassword: { env, name: "STRATUM_IAM_ADMIN_PASSWORD" },
          openBaoUnsealKey: { tpm: join(dir, "sealed") },
        },
      },
    );
    expect(readFileSync(env, "utf8")).toBe("STRATUM_IAM_ADMIN_PASSWORD=kept\n");
    expect(existsSync(join(dir, "sealed"))).toBe(false);
    expect(Object.keys(written.secrets).sort()).toEqual(["dnsEncryptionKey", "openBaoNodeToken", "postgresPassword"]);
  });
});

describe("what an older SDK or a crash left", () => {
  it("is removed: staging and old copies beside the delivery, and the delivery's secrets/ directory", async () => {
    const target = join(dir, "delivery");
    for (const leftover of [
      join(target, "secrets"),
      join(dir, ".delivery.staging-aaaaaaaaaaaa", "secrets"),
      join(dir, ".delivery.old-bbbbbbbbbbbb", "secrets"),
    ]) {
      mkdirSync(leftover, { recursive: true });
      writeFileSync(join(leftover, "admin-password"), SECRETS.adminPassword);
    }
    writeFileSync(join(target, "node.yaml"), "old");
    await writeDelivery(target, delivery(), { secrets: { ...files(), adminPassword: { file: join(dir, "admin") } } });
    expect(readdirSync(dir).sort()).toEqual(["admin", "delivery", "etc"]);
    expect(readdirSync(target).sort()).toEqual(["bundle.json", "node.yaml"]);
    const holders = filesUnder(dir).filter((f) => readFileSync(f, "utf8").includes(SECRETS.adminPassword));
    expect(holders).toEqual([join(dir, "admin")]);
  });
});

describe("an older SDK's delivery, replaced", () => {
  it("loses its secrets/ before it is moved aside: a crash at the swap leaves no secret in the old copy", async () => {
    const target = join(dir, "delivery");
    mkdirSync(join(target, "secrets"), { recursive: true });
    writeFileSync(join(target, "secrets", "admin-password"), SECRETS.adminPassword);
    writeFileSync(join(target, "node.key"), "OLD KEY");
    // The process stops right after the old delivery was moved aside (as a crash would).
    setDeliveryStepHook((step) => {
      if (step === "old-moved") throw new Error("crash");
    });
    try {
      await expect(
        writeDelivery(target, delivery(), { secrets: { ...files(), adminPassword: { file: join(dir, "admin") } } }),
      ).rejects.toThrow("crash");
    } finally {
      setDeliveryStepHook(undefined);
    }
    const old = readdirSync(dir).filter((name) => name.startsWith(".delivery.old-"));
    expect(old).toHaveLength(1);
    const inOld = filesUnder(join(dir, old[0]!)).filter((f) => /admin-password|node\.key/.test(f));
    expect(inOld).toEqual([]);
  });
});

describe("a newer founder's fields", () => {
  let listener: FakeListener;
  beforeAll(async () => {
    listener = await startFakeListener();
  });
  afterAll(async () => listener?.close());

  it("reach the installer through the parser, concealed, refused without a destination and written only where named", async () => {
    const identity = await createMachineIdentity();
    const session = listener.sessionFor(identity, "delivering");
    const bundle = {
      role: "hybrid",
      nodes: [
        {
          nodeId: "n-new00001",
          role: "hybrid",
          rackPower: "pdu-2",
          networks: { storage: { ip: "10.0.0.2", vlan: 12 } },
        },
      ],
      vips: { api: "192.0.2.240", ingress: "192.0.2.250" },
      ...SECRETS,
      cephClientKey: "AQB-ceph-client-key-0123456789==",
    };
    listener.behave.view = () => ({
      status: 200,
      body: {
        joinId: session.joinId,
        state: "delivering",
        pairingCode: session.pairingCode,
        delivery: {
          nodeId: "n-new00001",
          nodeYaml: "node_id: n-new00001\n",
          bundle,
          installToken: "it-77665544332211",
        },
      },
    });
    const view = await getRegistration(session, identity);
    const got = view.delivery!;
    // Nothing dropped: the bundle's, a node's, a VIP's and the delivery's own new fields.
    expect((got.bundle as Record<string, unknown>).cephClientKey).toBe(bundle.cephClientKey);
    expect((got as unknown as Record<string, unknown>).installToken).toBe("it-77665544332211");
    expect(got.bundle.nodes[0]).toMatchObject({ rackPower: "pdu-2", networks: { storage: { vlan: 12 } } });
    expect(got.bundle.vips).toMatchObject({ ingress: "192.0.2.250" });
    // The unknown top-level fields may be secrets: never printed or serialised by accident.
    const shown = `${inspect(view, { depth: 10 })}${JSON.stringify(view)}`;
    expect(shown).not.toContain(bundle.cephClientKey);
    expect(shown).not.toContain("it-77665544332211");

    const error = await writeDelivery(join(dir, "delivery"), got, { secrets: files() }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: "SECRET_DESTINATION_MISSING",
      fields: ["cephClientKey", "delivery.installToken"],
    });
    expect(filesUnder(dir)).toEqual([]);

    const written = await writeDelivery(join(dir, "delivery"), got, {
      secrets: {
        ...files(),
        cephClientKey: { file: join(dir, "ceph.key") },
        "delivery.installToken": { file: join(dir, "install.token") },
      },
    });
    expect(written.unknownFields.sort()).toEqual(["cephClientKey", "delivery.installToken"]);
    expect(readFileSync(join(dir, "ceph.key"), "utf8")).toBe(bundle.cephClientKey);
    expect(readFileSync(join(dir, "install.token"), "utf8")).toBe("it-77665544332211");
    const publicBundle = JSON.parse(readFileSync(written.files.bundle!, "utf8")) as { bundle: Record<string, unknown> };
    expect(publicBundle.bundle).not.toHaveProperty("cephClientKey");
    expect(publicBundle.bundle.nodes).toEqual(bundle.nodes);
    expect(publicBundle.bundle.vips).toEqual(bundle.vips);
    const holders = filesUnder(dir).filter((f) => readFileSync(f, "utf8").includes(bundle.cephClientKey));
    expect(holders).toEqual([join(dir, "ceph.key")]);
  });
});
