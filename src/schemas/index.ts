/**
 * zod schemas of every response body the SDK reads, written by hand from `openapi.yaml` and
 * held to `generated/api.d.ts` by the type-level tests in `test/schemas/schemas.test-d.ts`:
 * a field added, dropped, made optional or given another enum value on either side fails
 * `npx vitest run`.
 *
 * Built on `zod/mini` (functional API) because it tree-shakes to a fraction of classic zod,
 * which matters to the console apps that opt into validation (`validateResponses`).
 *
 * What is enforced: the shape, every required field, every enum and integer. What is not:
 * unknown fields (an object drops fields it does not know instead of failing, so a newer
 * server can add fields), string formats and patterns (a date or a pattern the SDK does not
 * compute with is not worth refusing an answer over).
 * @module
 */

export * from "./problem.js";
export * from "./join.js";
export * from "./inventory.js";
export * from "./assignment.js";
export * from "./admin.js";
export * from "./parse.js";
export * from "./validate.js";
