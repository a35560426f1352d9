// ESLint (flat config) with typescript-eslint. The type-aware rules that catch real bugs in an
// SDK full of promises and sockets are on: a promise nobody awaits or handles loses its error.
// Formatting is Prettier's job (`npm run format`), not ESLint's.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "dist/",
      "generated/",
      "coverage/",
      "test-results/",
      "examples/console/dist/",
      "test/node/inventory/fixtures/",
      "api/",
      "docs/api/",
      ".stryker-tmp/",
      "reports/",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": [
        "error",
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      "no-constant-condition": ["error", { checkLoops: false }],
      // A closure assigned once, later than its first reader is declared, stays `let`.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
      // Object literals with getters and iterators refer back to the instance that made them.
      "@typescript-eslint/no-this-alias": ["error", { allowedNames: ["self"] }],
    },
  },
  {
    // A command's action reads its spec's types, never the spec itself: the spec lazy-loads
    // the action, the dispatcher (src/cli/run.ts) hands the action its parsed arguments.
    files: ["src/cli/actions/**/*.ts"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["../commands/*"],
              allowTypeImports: true,
              message: "an action imports only its spec's types (import type): the spec loads the action",
            },
          ],
        },
      ],
    },
  },
  {
    // Tests poke at internals and at untyped JSON answers on purpose.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    // Plain JavaScript (scripts, this file): no type information to lint with.
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.node },
  },
);
