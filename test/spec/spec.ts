/**
 * openapi.yaml loaded for tests, and an Ajv (JSON Schema 2020-12, as OpenAPI 3.1 uses) that holds
 * it under the id `openapi`, so any schema of it is `ajv.getSchema("openapi#/json/pointer")`.
 */
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { parse } from "yaml";

/** The parsed spec. */
export const spec = parse(readFileSync(new URL("../../openapi.yaml", import.meta.url), "utf8"));

/** A new Ajv holding the spec, with the spec's extra formats (`int64`, `byte`). */
export function specAjv(): InstanceType<typeof Ajv2020.default> {
  const ajv = new Ajv2020.default({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isSafeInteger(n) });
  ajv.addFormat("byte", /^[A-Za-z0-9+/_-]*={0,2}$/);
  ajv.addSchema(spec, "openapi");
  return ajv;
}
