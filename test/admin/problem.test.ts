import { describe, expect, it } from "vitest";
import { sensitiveFields } from "../../generated/sensitive.js";
import { problemFromResponse } from "../../src/core/problem.js";
import { REDACTED, redact } from "../../src/core/redact.js";
import { StratumApiError } from "../../src/errors/index.js";

const OP = "GET /v1/admin/cluster/joins";

function problem(body: unknown, init: ResponseInit & { raw?: boolean } = {}): Response {
  return new Response(init.raw ? (body as string) : JSON.stringify(body), {
    status: init.status ?? 409,
    headers: { "Content-Type": "application/problem+json", ...(init.headers as Record<string, string>) },
  });
}

describe("problemFromResponse", () => {
  it("reads every field of a problem document", async () => {
    const error = await problemFromResponse(
      problem(
        {
          type: "https://docs.stratum.example/problems/release-mismatch",
          title: "Release mismatch",
          status: 409,
          detail: "This machine runs 0.3.0.",
          requestId: "req-5t2m8q1z",
          code: "RELEASE_MISMATCH",
          errors: [{ field: "release", message: "too old" }],
          details: { clusterRelease: "0.6.0", isoPath: "/releases/stratum-0.6.0.iso", reason: "too-old" },
        },
        { headers: { "Retry-After": "12" } },
      ),
      OP,
    );
    expect(error).toBeInstanceOf(StratumApiError);
    expect(error).toMatchObject({
      status: 409,
      code: "RELEASE_MISMATCH",
      requestId: "req-5t2m8q1z",
      title: "Release mismatch",
      detail: "This machine runs 0.3.0.",
      errors: [{ field: "release", message: "too old" }],
      details: { clusterRelease: "0.6.0", isoPath: "/releases/stratum-0.6.0.iso", reason: "too-old" },
      retryAfter: 12,
    });
  });

  it("is lenient: an unknown code of a newer server surfaces, fields of the wrong type are dropped", async () => {
    const error = await problemFromResponse(
      problem(
        { title: 7, code: "SOMETHING_NEW", requestId: ["x"], errors: [{ field: 3 }, "junk"], details: "no" },
        { status: 422 },
      ),
      OP,
    );
    expect(error).toMatchObject({
      status: 422,
      code: "SOMETHING_NEW",
      title: undefined,
      requestId: undefined,
      details: undefined,
    });
    expect(error.errors).toEqual([{ field: "", message: "" }]);
  });

  it("tolerates bodies that are not problem documents", async () => {
    for (const body of ["", "<html>oops</html>", "{broken", "[1,2]", JSON.stringify({ hello: "world" })]) {
      const error = await problemFromResponse(problem(body, { status: 502, raw: true }), OP);
      expect(error.code).toBe("HTTP_502");
      expect(error.message).toBe(`HTTP_502: ${OP} answered HTTP 502 without a problem document`);
      expect(error.retryAfter).toBeUndefined();
    }
  });
});

describe("redact", () => {
  it("redacts every sensitive field of the bundle at any depth, without touching the input", () => {
    const bundle = Object.fromEntries(sensitiveFields.Bundle.map((name) => [name, `secret-${name}`]));
    const registration = {
      joinId: "nj-1",
      state: "delivering",
      delivery: { nodeId: "n-1", nodeYaml: "a: 1", bundle: { role: "hybrid", nodes: [], ...bundle } },
    };
    const copy = redact(registration);
    expect(JSON.stringify(copy)).not.toContain("secret-");
    for (const name of sensitiveFields.Bundle)
      expect(copy.delivery.bundle[name as keyof typeof copy.delivery.bundle]).toBe(REDACTED);
    expect(copy.delivery.nodeYaml).toBe("a: 1");
    expect((registration.delivery.bundle as Record<string, unknown>).nodeKey).toBe("secret-nodeKey");
  });

  it("redacts a minted code's code and url, but not a problem's code", () => {
    const minted = {
      joinCode: { id: "jc-1", selector: "4F" },
      endpoint: "192.0.2.240",
      code: "4F7K-2Q9M-ABD",
      url: "stratum-join://192.0.2.240/4F7K-2Q9M-ABD",
    };
    expect(redact([minted])).toEqual([{ ...minted, code: REDACTED, url: REDACTED }]);
    const problemDoc = { type: "t", title: "x", status: 409, code: "RELEASE_MISMATCH" };
    expect(redact(problemDoc)).toEqual(problemDoc);
  });

  it("copies cycles safely and leaves other values alone", () => {
    const at = new Date(0);
    const a: Record<string, unknown> = { at, n: 1, nil: null, nodeKey: undefined };
    a.self = a;
    expect(redact(a)).toEqual({ at, n: 1, nil: null, nodeKey: undefined, self: "[circular]" });
    expect(redact("plain")).toBe("plain");
  });
});
