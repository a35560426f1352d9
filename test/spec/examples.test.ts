// Every example in openapi.yaml is valid against the schema it illustrates, so the spec never
// shows a reader (or a generated mock) a shape the API would refuse.
import { describe, expect, it } from "vitest";
import { spec, specAjv as makeAjv } from "./spec.js";

interface Example {
  where: string;
  schemaPointer: string;
  value: unknown;
}

const escape = (key: string) => key.replace(/~/g, "~0").replace(/\//g, "~1");

/** Every example with the JSON pointer of the schema it belongs to. */
function collectExamples(node: unknown, pointer: string, out: Example[]): Example[] {
  if (!node || typeof node !== "object") return out;
  const obj = node as Record<string, unknown>;
  const isSchemaLike = "type" in obj || "properties" in obj || "$ref" in obj || "allOf" in obj || "enum" in obj;
  // A media type or a parameter: its example(s) illustrate its `schema`.
  if ("schema" in obj && typeof obj.schema === "object") {
    if ("example" in obj)
      out.push({ where: `${pointer}/example`, schemaPointer: `${pointer}/schema`, value: obj.example });
    if (obj.examples && typeof obj.examples === "object" && !Array.isArray(obj.examples)) {
      for (const [name, ex] of Object.entries(obj.examples as Record<string, { value?: unknown }>)) {
        out.push({ where: `${pointer}/examples/${name}`, schemaPointer: `${pointer}/schema`, value: ex.value });
      }
    }
  } else if (isSchemaLike) {
    // A schema: `example` and the JSON Schema `examples` array illustrate the schema itself.
    if ("example" in obj) out.push({ where: `${pointer}/example`, schemaPointer: pointer, value: obj.example });
    if (Array.isArray(obj.examples)) {
      obj.examples.forEach((value, i) =>
        out.push({ where: `${pointer}/examples/${i}`, schemaPointer: pointer, value }),
      );
    }
  }
  for (const [key, value] of Object.entries(obj)) {
    if (key === "example" || key === "examples") continue;
    collectExamples(value, `${pointer}/${escape(key)}`, out);
  }
  return out;
}

const examples = collectExamples(spec, "", []);

describe("openapi.yaml examples", () => {
  it("has examples to check (the walk finds them)", () => {
    expect(examples.length).toBeGreaterThan(25);
    expect(examples.some((e) => e.where.includes("MintedJoinCode"))).toBe(true);
    expect(
      examples.some((e) => e.where.includes("registerJoin") || e.where.includes("~1v1~1join~1registrations")),
    ).toBe(true);
  });

  const ajv = makeAjv();
  it.each(examples.map((e) => [e.where, e] as const))("%s is valid against its schema", (_where, example) => {
    const validate = ajv.getSchema(`openapi#${example.schemaPointer}`);
    expect(validate, `no schema at ${example.schemaPointer}`).toBeTypeOf("function");
    const ok = validate!(example.value);
    expect(ok ? [] : validate!.errors).toEqual([]);
  });

  it("would catch a broken example (the check itself can fail)", () => {
    const validate = makeAjv().getSchema("openapi#/components/schemas/MintedJoinCode")!;
    const broken = structuredClone(spec.components.schemas.MintedJoinCode.example);
    delete broken.joinCode.caFingerprint;
    broken.code = "4F7K-2Q9M-ABU";
    expect(validate(broken)).toBe(false);
  });
});
