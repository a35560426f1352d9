// The vitest configuration Stryker runs the mutants under: the project's, limited to the test
// files of the targets being mutated (test/mutation/targets.mjs), without the type tests.
import { defineConfig } from "vitest/config";

import base from "../../vitest.config.js";
// @ts-expect-error: a plain JavaScript module, which stryker.config.mjs reads too
import { MUTATION_TARGETS } from "./targets.mjs";

// scripts/mutation.mjs names the files of this run; all of them when it names none
const mutated = (process.env.STRATUM_MUTATE ?? "").split(",").filter((file) => file !== "");
const files = mutated.length > 0 ? mutated : Object.keys(MUTATION_TARGETS);
const include = [...new Set(files.flatMap((file) => MUTATION_TARGETS[file] ?? []))];

export default defineConfig({
  ...base,
  test: { ...base.test, include, typecheck: { enabled: false } },
});
