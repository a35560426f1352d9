/**
 * What the tests of "what a joined machine keeps" share: a reference server whose bundles carry
 * every secret (the OpenBao unseal key included), a `--secrets` file that follows the seed's
 * homes under a test's own stand-in for /etc, and the scan that finds each secret's bytes in
 * every file under some directories.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { sensitiveFields } from "../../generated/sensitive.js";
import type { ReferenceServerConfig } from "../../examples/reference-server/config.js";
import type { Delivery } from "../../src/types.js";
import { type TestServer, startTestServer } from "../helpers/reference-server.js";

/**
 * The one way these tests start a founder: a cluster whose OpenBao runs as a raft, so that its
 * bundles carry `openBaoUnsealKey` (a single-instance cluster's are empty of it). The setting
 * that says so goes here, and only here.
 */
export function startUnsealingHarness(config: Partial<ReferenceServerConfig> = {}): Promise<TestServer> {
  return startTestServer({ openBaoMode: "raft", ...config });
}

/** The seed's homes for each secret, under `etc` (the test's /etc) and `state` (its /var/lib/stratum-join). */
export function seedHomes(etc: string, state: string, podman: string[]) {
  return {
    adminPassword: [
      { env: join(etc, "controlplane.env"), name: "STRATUM_IAM_ADMIN_PASSWORD" },
      { file: join(etc, "bootstrap-credentials.txt") },
    ],
    openBaoToken: { env: join(etc, "controlplane.env"), name: "STRATUM_OPENBAO_TOKEN" },
    openBaoNodeToken: { file: join(etc, "secrets", "openbao-node.token") },
    dnsEncryptionKey: { env: join(etc, "axdnsd.env"), name: "ENCRYPTION_KEY" },
    postgresPassword: { command: [...podman, "secret", "create", "stratum-postgres", "-"] },
    openBaoUnsealKey: { tpm: join(state, "openbao-unseal.sealed") },
  };
}

/**
 * A stand-in for podman that keeps what `podman secret create NAME -` receives on stdin in
 * `store/NAME` (0600), and refuses anything else: the tests' machines have no podman.
 */
export function fakePodman(path: string, store: string): string {
  writeFileSync(
    path,
    `#!/bin/sh
set -eu
[ "$1" = secret ] && [ "$2" = create ] && [ "$4" = - ] || { echo "unexpected: $*" >&2; exit 2; }
mkdir -p ${JSON.stringify(store)}
umask 077
cat > ${JSON.stringify(store)}/"$3"
`,
    { mode: 0o755 },
  );
  return path;
}

/** Every secret of a delivery by name: each sensitive field, and each line of the node key's body. */
export function secretsOf(delivery: Delivery): Record<string, string> {
  const bundle = delivery.bundle as unknown as Record<string, unknown>;
  const secrets: Record<string, string> = {};
  for (const field of sensitiveFields.Bundle) {
    const value = bundle[field];
    if (typeof value === "string" && value !== "") secrets[field] = value;
  }
  // The key as some file would hold it with its newlines escaped: each line of its body.
  (bundle.nodeKey as string | undefined)
    ?.split("\n")
    .filter((line) => line !== "" && !line.startsWith("-----"))
    .forEach((line, i) => (secrets[`nodeKey line ${i + 1}`] = line));
  return secrets;
}

/** Every regular file under `roots`, recursively (symlinks not followed). */
export function filesUnder(...roots: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const info = lstatSync(path);
      if (info.isDirectory()) walk(path);
      else if (info.isFile()) out.push(path);
    }
  };
  for (const root of roots) walk(root);
  return out.sort();
}

/** For each secret, the files under `roots` that hold its bytes. */
export function whereSecretsAre(secrets: Record<string, string>, ...roots: string[]): Record<string, string[]> {
  const found: Record<string, string[]> = Object.fromEntries(Object.keys(secrets).map((name) => [name, []]));
  for (const file of filesUnder(...roots)) {
    const bytes = readFileSync(file);
    for (const [name, value] of Object.entries(secrets)) if (bytes.includes(value)) found[name]!.push(file);
  }
  return found;
}

/** The seed's homes under `dir`: `dir/etc`, `dir/var`, podman's stand-in `dir/podman` keeping its secrets in `dir/podman-secrets`. */
export function seedHomesIn(dir: string): ReturnType<typeof seedHomes> {
  mkdirSync(dir, { recursive: true });
  const podman = fakePodman(join(dir, "podman"), join(dir, "podman-secrets"));
  return seedHomes(join(dir, "etc"), join(dir, "var"), [podman]);
}

/**
 * Writes `dir/secrets.json`, the `--secrets` file of {@link seedHomesIn}, and returns its path.
 * Short names, so the lines the CLI prints about them stay as short as a real machine's.
 */
export function writeSecretsFile(dir: string): string {
  const file = join(dir, "secrets.json");
  writeFileSync(file, JSON.stringify(seedHomesIn(dir), null, 2));
  return file;
}

/** The files that hold each secret of {@link seedHomesIn}`(dir)`, and no others: the unseal key none. */
export function seedHomeFiles(dir: string, deliveryDir: string): Record<string, string[]> {
  const etc = join(dir, "etc");
  const controlplane = join(etc, "controlplane.env");
  return {
    adminPassword: [join(etc, "bootstrap-credentials.txt"), controlplane],
    openBaoToken: [controlplane],
    openBaoNodeToken: [join(etc, "secrets", "openbao-node.token")],
    dnsEncryptionKey: [join(etc, "axdnsd.env")],
    postgresPassword: [join(dir, "podman-secrets", "stratum-postgres")],
    openBaoUnsealKey: [],
    nodeKey: [join(deliveryDir, "node.key")],
  };
}

/** A machine directory after `joined`: the identity, the session, the public files and the node key. */
export const JOINED_MACHINE_FILES = [
  "cert.pem",
  "delivery/bundle.json",
  "delivery/ca.pem",
  "delivery/node.crt",
  "delivery/node.key",
  "delivery/node.yaml",
  "key.pem",
  "session.json",
];

/**
 * Asserts that every file under `roots` holding a secret's bytes is that secret's home in
 * `homes` (a line of the node key's body: the node key's), and that each home is 0600.
 */
export function expectEachSecretAtHome(
  secrets: Record<string, string>,
  homes: Record<string, string[]>,
  ...roots: string[]
): void {
  for (const [name, files] of Object.entries(whereSecretsAre(secrets, ...roots)))
    expect(files, name).toEqual(homes[name] ?? homes[name.replace(/ line \d+$/, "")]);
  for (const file of new Set(Object.values(homes).flat())) expect(statSync(file).mode & 0o777, file).toBe(0o600);
}
