/**
 * `@stratum/join/validate`: opt-in response validation for the admin client, with zod
 * (`zod/mini`) schemas written by hand and held to the generated types by type tests. Only
 * an app that imports this entry bundles zod:
 *
 * ```ts
 * import { createAdminClient } from "@stratum/join";
 * import { validateResponses } from "@stratum/join/validate";
 * const admin = createAdminClient({ baseUrl, token, validate: validateResponses });
 * ```
 * @module @stratum/join/validate
 */
export {
  validateResponses,
  type ResponseValidator,
  type ValidationResult,
  type AdminOperationId,
} from "../schemas/index.js";
export type { ValidationIssue } from "../errors/index.js";
