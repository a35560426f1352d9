// The rule-bearing source files `npm run test:mutation` mutates, each with the test files that
// hold its rules. Adding a file is one line. Only these tests run against the mutants: a file's
// score says how well its own tests pin its rules, not whether some end-to-end test happens to
// trip over a mutant (and the run stays minutes, not hours).

/** @type {Readonly<Record<string, readonly string[]>>} */
export const MUTATION_TARGETS = Object.freeze({
  "src/core/join-code.ts": ["test/core/join-code.test.ts"],
  "src/core/pairing.ts": ["test/core/pairing.test.ts"],
  "src/release/manifest-rules.ts": ["test/release/manifest-rules.test.ts", "test/release/verify.test.ts"],
  "src/release/verify.ts": [
    "test/release/verify-rules.test.ts",
    "test/release/verify.test.ts",
    "test/release/manifest.test.ts",
  ],
  "src/release/dsse.ts": ["test/release/verify-rules.test.ts", "test/release/manifest.test.ts"],
  "src/transport/http1/chunked.ts": ["test/release/http1-framing.test.ts", "test/release/http1.test.ts"],
  "src/transport/http1/head.ts": ["test/release/http1-framing.test.ts", "test/release/http1.test.ts"],
  "src/transport/http1/fields.ts": ["test/release/http1-framing.test.ts", "test/release/http1.test.ts"],
  "src/node/pinned-http.ts": ["test/node/pinned-http.test.ts"],
  "src/transport/proxy.ts": ["test/release/proxy-env.test.ts", "test/release/proxy.test.ts"],
  "src/protocol/pki.ts": [
    "test/protocol/pki-rules.test.ts",
    "test/protocol/pki-listener.test.ts",
    "test/protocol/pki-forms.test.ts",
    "test/node/pki.test.ts",
  ],
  "src/protocol/founder-time.ts": ["test/protocol/pki-rules.test.ts"],
  "src/node/proof.ts": [
    "test/node/proof.test.ts",
    "test/node/founder-time.test.ts",
    "test/node/unproven-refusals.test.ts",
    "test/node/deadlines.test.ts",
    "test/node/attacks.test.ts",
    "test/node/abort-rule.test.ts",
  ],
  "src/node/pake-exchange.ts": [
    "test/node/proof.test.ts",
    "test/node/founder-time.test.ts",
    "test/node/unproven-refusals.test.ts",
    "test/node/attacks.test.ts",
    "test/node/forged-answers.test.ts",
  ],
  // the founder's attempt counting (docs/protocol.md#attempts, #live-rate, #listener-limits)
  "examples/reference-server/join-codes.ts": [
    "test/reference-server/attempt-rules.test.ts",
    "test/reference-server/pake-rules.test.ts",
    "test/reference-server/admin.test.ts",
    "test/reference-server/pake.test.ts",
  ],
  "examples/reference-server/pake-sessions.ts": [
    "test/reference-server/attempt-rules.test.ts",
    "test/reference-server/attempts-crash.test.ts",
  ],
  "examples/reference-server/join-pake.ts": [
    "test/reference-server/attempt-rules.test.ts",
    "test/reference-server/pake-rules.test.ts",
    "test/reference-server/pake.test.ts",
  ],
  "examples/reference-server/live-rate.ts": ["test/reference-server/attempt-rules.test.ts"],
  "examples/reference-server/address-limiter.ts": [
    "test/reference-server/attempt-rules.test.ts",
    "test/reference-server/ipv6-sources.test.ts",
  ],
});
