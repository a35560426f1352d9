/**
 * The joiner's check of the listener's answers against their schemas (`src/schemas`), with
 * zod loaded by the first answer checked rather than when the joiner is imported (about 11 MiB
 * and 0.09 s of CPU on this project's machine): a program that imports `@stratum/join/node`
 * and only reads a join session or a fingerprint never loads it.
 * @module
 */
import type * as z from "zod/mini";
import type * as Schemas from "../schemas/index.js";

/** The schemas of the answers the joiner reads. */
type AnswerSchema = "PakeChallengeSchema" | "CodeCheckSchema" | "RegistrationSchema";

/** The answer schemas, loaded (once) on the first call. */
export function loadAnswerSchemas(): Promise<typeof Schemas> {
  return import("../schemas/index.js");
}

/**
 * `body` parsed by the schema named `schema`, as `parseResponse` does.
 * @throws ResponseValidationError naming `operation` and every issue
 */
export async function parseAnswer<K extends AnswerSchema>(
  schema: K,
  operation: string,
  body: unknown,
): Promise<z.output<(typeof Schemas)[K]>> {
  const schemas = await loadAnswerSchemas();
  return schemas.parseResponse(schemas[schema], operation, body) as z.output<(typeof Schemas)[K]>;
}
