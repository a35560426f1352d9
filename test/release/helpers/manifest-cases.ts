/**
 * Hostile manifests, shared by the verifier's unit table and the downloader's adversarial
 * table (where the mirror serves them). Each names the rule it must fail.
 */
import {
  RELEASE_MANIFEST_PAYLOAD_TYPE,
  generateReleaseKeyPair,
  type ReleaseKeyPair,
  type ReleaseVerificationRule,
} from "../../../src/release/index.js";
import { signDsseEnvelope } from "../../../src/release/manifest.js";

/** The keys a case may use: `a` and `b` trusted, `stranger` not. */
export interface CaseKeys {
  a: ReleaseKeyPair;
  b: ReleaseKeyPair;
  stranger: ReleaseKeyPair;
}

/** A hostile envelope and the rule it breaks. */
export interface ManifestCase {
  name: string;
  rule: ReleaseVerificationRule;
  /** Trusted keys (default a and b) and threshold (default 1). */
  trusted?: (keys: CaseKeys) => string[];
  threshold?: number;
  envelope: (keys: CaseKeys) => string | Buffer;
}

/** Three fresh key pairs. */
export function caseKeys(): CaseKeys {
  return { a: generateReleaseKeyPair(), b: generateReleaseKeyPair(), stranger: generateReleaseKeyPair() };
}

const SHA = "0".repeat(64);

/** A payload object: the release 0.6.0 with one file, overridable. */
export function payload(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema: 1,
    release: "0.6.0",
    createdAt: "2025-01-01T00:00:00.000Z",
    files: [{ path: "os/blobs/a", size: 3, sha256: SHA }],
    ...over,
  };
}

/** Signs a payload object (or raw text) with the given keys, as a manifest envelope. */
export function sign(
  body: Record<string, unknown> | string,
  keys: ReleaseKeyPair[],
  payloadType = RELEASE_MANIFEST_PAYLOAD_TYPE,
): string {
  const bytes = Buffer.from(typeof body === "string" ? body : JSON.stringify(body), "utf8");
  return JSON.stringify(
    signDsseEnvelope(
      payloadType,
      bytes,
      keys.map((k) => k.privateKeyPem),
    ),
  );
}

const withFiles = (files: unknown[]) => payload({ files });
const file = (path: string, size = 3) => ({ path, size, sha256: SHA });

/** The table. */
export const MANIFEST_CASES: ManifestCase[] = [
  // envelope
  {
    name: "oversized envelope (unsigned: the cap comes first)",
    rule: "envelope-size",
    envelope: () => JSON.stringify({ payloadType: "x", payload: "A".repeat(4 * 1024 * 1024 + 4), signatures: [] }),
  },
  {
    name: "oversized envelope (validly signed)",
    rule: "envelope-size",
    envelope: (k) =>
      sign(
        payload({ files: Array.from({ length: 40_000 }, (_, i) => file(`os/blobs/${String(i).padStart(40, "0")}`)) }),
        [k.a],
      ),
  },
  { name: "not JSON", rule: "envelope-parse", envelope: () => "{ not json" },
  {
    name: "envelope with an extra field",
    rule: "envelope-parse",
    envelope: (k) => JSON.stringify({ ...JSON.parse(sign(payload(), [k.a])), extra: 1 }),
  },
  {
    name: "payload not canonical base64",
    rule: "envelope-parse",
    envelope: (k) => JSON.stringify({ ...JSON.parse(sign(payload(), [k.a])), payload: "e30" }),
  },
  // signatures
  {
    name: "no signature",
    rule: "signature-threshold",
    envelope: () =>
      JSON.stringify({
        payloadType: RELEASE_MANIFEST_PAYLOAD_TYPE,
        payload: Buffer.from(JSON.stringify(payload())).toString("base64"),
        signatures: [],
      }),
  },
  { name: "unknown key", rule: "signature-threshold", envelope: (k) => sign(payload(), [k.stranger]) },
  {
    name: "unknown key claiming a trusted keyid",
    rule: "signature-threshold",
    envelope: (k) => {
      const env = JSON.parse(sign(payload(), [k.stranger]));
      env.signatures[0].keyid = k.a.keyid;
      return JSON.stringify(env);
    },
  },
  {
    name: "one short of the threshold",
    rule: "signature-threshold",
    threshold: 2,
    envelope: (k) => sign(payload(), [k.a, k.stranger]),
  },
  {
    name: "the same key counted twice",
    rule: "signature-threshold",
    threshold: 2,
    envelope: (k) => {
      const env = JSON.parse(sign(payload(), [k.a]));
      env.signatures.push({ keyid: k.b.keyid, sig: env.signatures[0].sig });
      return JSON.stringify(env);
    },
  },
  {
    name: "payload changed after signing",
    rule: "signature-threshold",
    envelope: (k) => {
      const env = JSON.parse(sign(payload(), [k.a]));
      env.payload = Buffer.from(JSON.stringify(payload({ files: [file("os/blobs/a", 4)] }))).toString("base64");
      return JSON.stringify(env);
    },
  },
  {
    name: "payloadType changed after signing",
    rule: "signature-threshold",
    envelope: (k) => {
      const env = JSON.parse(sign(payload(), [k.a], "application/vnd.in-toto+json"));
      env.payloadType = RELEASE_MANIFEST_PAYLOAD_TYPE;
      return JSON.stringify(env);
    },
  },
  {
    name: "a signature of garbage",
    rule: "signature-threshold",
    envelope: (k) => {
      const env = JSON.parse(sign(payload(), [k.a]));
      env.signatures[0].sig = Buffer.alloc(64, 1).toString("base64");
      return JSON.stringify(env);
    },
  },
  // payloadType, parse
  {
    name: "wrong payloadType (validly signed)",
    rule: "payload-type",
    envelope: (k) => sign(payload(), [k.a], "application/vnd.in-toto+json"),
  },
  { name: "payload not JSON", rule: "payload-parse", envelope: (k) => sign("not json", [k.a]) },
  {
    name: "payload with an extra field",
    rule: "payload-parse",
    envelope: (k) => sign(payload({ extra: true }), [k.a]),
  },
  { name: "schema 2", rule: "payload-parse", envelope: (k) => sign(payload({ schema: 2 }), [k.a]) },
  {
    name: "size as a string",
    rule: "payload-parse",
    envelope: (k) => sign(withFiles([{ path: "os/blobs/a", size: "3", sha256: SHA }]), [k.a]),
  },
  {
    name: "negative size",
    rule: "payload-parse",
    envelope: (k) => sign(withFiles([{ path: "os/blobs/a", size: -1, sha256: SHA }]), [k.a]),
  },
  {
    name: "upper-case sha256",
    rule: "payload-parse",
    envelope: (k) => sign(withFiles([{ path: "os/blobs/a", size: 3, sha256: "A".repeat(64) }]), [k.a]),
  },
  {
    name: "createdAt not a time",
    rule: "payload-parse",
    envelope: (k) => sign(payload({ createdAt: "yesterday" }), [k.a]),
  },
  // release
  {
    name: "rollback: a valid manifest of an older release",
    rule: "release",
    envelope: (k) => sign(payload({ release: "0.5.0" }), [k.a]),
  },
  {
    name: "mix-and-match: a valid manifest of another release",
    rule: "release",
    envelope: (k) => sign(payload({ release: "0.7.0" }), [k.a, k.b]),
  },
  // paths
  ...(
    [
      ["../", "os/blobs/../../etc/passwd"],
      ["leading ..", "../os/blobs/a"],
      ["absolute", "/etc/passwd"],
      ["absolute inside", "/os/blobs/a"],
      ["backslash", "os\\blobs\\a"],
      ["backslash in a name", "os/blobs/..\\..\\x"],
      ["NUL", "os/blobs/a\u0000.raw"],
      ["control character", "os/blobs/a\nb"],
      ["outside os/blobs and sysext", "etc/shadow"],
      ["payload/ is not for files", "payload/other.json"],
      ["a prefix lookalike", "os/blobsx/a"],
      ["the root itself", "sysext/"],
      ["empty segment", "os/blobs//a"],
      [". segment", "os/blobs/./a"],
      ["reserved .partial suffix", "sysext/a.partial"],
    ] as const
  ).map(([name, path]): ManifestCase => ({
    name: `path: ${name}`,
    rule: "path",
    envelope: (k) => sign(withFiles([file(path)]), [k.a]),
  })),
  {
    name: "path: duplicate",
    rule: "path",
    envelope: (k) => sign(withFiles([file("os/blobs/a"), file("os/blobs/a")]), [k.a]),
  },
  {
    name: "path: a file that is another's directory",
    rule: "path",
    envelope: (k) => sign(withFiles([file("sysext/a"), file("sysext/a/b")]), [k.a]),
  },
  // sizes
  {
    name: "size: a huge declared size",
    rule: "size",
    envelope: (k) => sign(withFiles([file("os/blobs/a", 2 ** 60)]), [k.a]),
  },
  {
    name: "size: above the per-file cap",
    rule: "size",
    envelope: (k) => sign(withFiles([file("os/blobs/a", 64 * 1024 ** 3 + 1)]), [k.a]),
  },
  {
    name: "size: total above the cap",
    rule: "size",
    envelope: (k) => sign(withFiles(Array.from({ length: 5 }, (_, i) => file(`os/blobs/${i}`, 60 * 1024 ** 3))), [k.a]),
  },
  // order: the earlier rule wins
  {
    name: "order: unsigned and wrong release -> signatures first",
    rule: "signature-threshold",
    envelope: (k) => sign(payload({ release: "0.5.0" }), [k.stranger]),
  },
  {
    name: "order: wrong release and bad path -> release first",
    rule: "release",
    envelope: (k) => sign(payload({ release: "0.5.0", files: [file("../x")] }), [k.a]),
  },
  {
    name: "order: bad path and huge size -> path first",
    rule: "path",
    envelope: (k) => sign(withFiles([file("os/blobs/a", 2 ** 60), file("../x")]), [k.a]),
  },
];
