// `npm run test:quick`: the pure tests (no socket, no child process) for a loop of seconds while
// working. test/machine/pure.ts refuses sockets and processes, so a file on the list below that
// is not pure fails here. `npm test` runs these with all the others.
import { defineConfig } from "vitest/config";
import base from "./vitest.config.js";

/** The pure test files. */
export const QUICK = [
  "test/core/**/*.test.ts",
  "test/schemas/**/*.test.ts",
  "test/spec/**/*.test.ts",
  "test/admin/{operations,problem,testing,watch}.test.ts",
  "test/errors/**/*.test.ts",
  "test/console/{bundle,disk-full,format}.test.ts",
  "test/node/{certificate-fields,join-session,opaque,pki}.test.ts",
  "test/protocol/**/*.test.ts",
  "test/readme/layout.test.ts",
  "test/source/layers.test.ts",
  "test/release/{manifest,proxy-env,verify}.test.ts",
];

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: QUICK,
    setupFiles: ["test/machine/pure.ts"],
    // The type tests run tsc, a process of its own: `npm run typecheck` and `npm test` hold them.
    typecheck: { enabled: false },
  },
});
