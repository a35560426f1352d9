// The admin client's operation table (src/admin/operations.ts) against openapi.yaml: every
// admin operation has exactly one row, with the spec's method and path, and the client has a
// method for each row. A new operation in the spec fails here until it has its row.
import { describe, expect, it } from "vitest";
import { createAdminClient } from "../../src/admin/index.js";
import { ADMIN_OPERATIONS } from "../../src/admin/operations.js";
import { spec } from "../spec/spec.js";

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

/** Every operation of openapi.yaml under /v1/admin/: `operationId` → `METHOD path`. */
function specOperations(): Map<string, string> {
  const found = new Map<string, string>();
  for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, { operationId?: string }>>)) {
    if (!path.startsWith("/v1/admin/")) continue;
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      expect(operation.operationId, `${method} ${path} has an operationId`).toBeTypeOf("string");
      expect(found.has(operation.operationId!), `${operation.operationId} once`).toBe(false);
      found.set(operation.operationId!, `${method} ${path}`);
    }
  }
  return found;
}

describe("the admin client's operation table", () => {
  it("has exactly one row per admin operation of openapi.yaml, with its method and path", () => {
    const rows = Object.fromEntries(
      Object.entries(ADMIN_OPERATIONS).map(([id, row]) => [id, `${row.method} ${row.path}`]),
    );
    const operations = Object.fromEntries(specOperations());
    expect(Object.keys(operations).length).toBeGreaterThanOrEqual(15);
    expect(rows).toEqual(operations);
    // No two rows for one operation under two names.
    expect(new Set(Object.values(rows)).size).toBe(Object.keys(rows).length);
  });

  it("gives each row's path parameter and body as the spec declares them", () => {
    for (const [id, row] of Object.entries(ADMIN_OPERATIONS)) {
      const operation = spec.paths[row.path][row.method] as {
        parameters?: Array<{ in: string; name: string }>;
        requestBody?: { required?: boolean };
      };
      const pathParams = [...row.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect("pathParam" in row ? [row.pathParam] : [], id).toEqual(pathParams);
      const body = operation.requestBody ? (operation.requestBody.required ? "required" : "optional") : undefined;
      expect("body" in row ? row.body : undefined, `${id}'s body`).toBe(body);
    }
  });

  it("makes a method of every row on the client", () => {
    const client = createAdminClient({ baseUrl: "https://stratum.test", token: "t" });
    for (const id of Object.keys(ADMIN_OPERATIONS))
      expect(typeof (client as unknown as Record<string, unknown>)[id], id).toBe("function");
  });
});
