// Where the seed pages say one thing in two places that, read alone, disagree, openapi.yaml and
// docs/protocol.md must say the project's one reading of it everywhere (docs/seed-rules.md
// names each). The server's behaviour is held by the reference server's tests; these hold the
// words to it.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { spec } from "./spec.js";

const protocol = readFileSync(new URL("../../docs/protocol.md", import.meta.url), "utf8");
/** Every description in openapi.yaml, with where it is. */
function descriptions(node: unknown, at = "", out: [string, string][] = []): [string, string][] {
  if (node && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "description" && typeof value === "string") out.push([at, value.replace(/\s+/g, " ")]);
      else descriptions(value, `${at}/${key}`, out);
    }
  }
  return out;
}
const all = descriptions(spec);

describe("when the join listener is open", () => {
  it("is said the same way wherever openapi.yaml says it: a live code or a registration not final", () => {
    // Every description that says when the listener is there: "while a code is live".
    const saying = all.filter(([, text]) => /while (a|any) (join )?code is live/i.test(text));
    // The API's description, the listener's server entry, registerJoin and mintJoinCode.
    expect(saying.map(([at]) => at)).toEqual(
      expect.arrayContaining([
        "/info",
        "/servers/1",
        "/paths//v1/join/registrations/post",
        "/paths//v1/admin/cluster/join-codes/post",
      ]),
    );
    for (const [at, text] of saying)
      expect(text, at).toMatch(/registration (is not final|still needs it)|registration is not final/);
  });

  it("is said so, with the reason, in docs/protocol.md", () => {
    const section = protocol.slice(
      protocol.indexOf('<a id="listener-open">'),
      protocol.indexOf('<a id="listener-limits">'),
    );
    expect(section).toMatch(/a registration in a\s+state other than `joined`, `rejected` or `expired`/);
    expect(section).toMatch(/24 hours after\s+its code's expiry/);
  });
});

describe("the same key registering again", () => {
  it("gets a new registration when its own expired, in openapi.yaml's registerJoin and docs/protocol.md", () => {
    const op = spec.paths["/v1/join/registrations"].post;
    const text = op.description.replace(/\s+/g, " ");
    expect(text).toMatch(/gets its registration back \(200\)/);
    expect(text).toMatch(/expired: the key then gets a new one \(201/);
    expect(op.responses["201"].description).toMatch(/expired/);
    expect(protocol.replace(/\s+/g, " ")).toMatch(/unless it expired \(then a new one is made, 201/);
  });
});
