// IPv6 sources are counted per prefix, a /64 by default (docs/protocol.md#listener-limits): one
// site gets a whole /64, so limits per exact address would limit nothing. In a network namespace
// where fd00:22::/48 is local, calls from two addresses of one /64 share its limit, an address of
// another /64 has its own, and a code's attempts name the /64 they came from.
import { describe, expect, it } from "vitest";
import { createNamespace } from "../netns.js";

const root = new URL("../../", import.meta.url).pathname;

async function run(prefixLength: number): Promise<{ statuses: Record<string, number[]>; sources: any }> {
  const ns = createNamespace("v6src", ["fd00:22::/48"]);
  try {
    const out = await ns.run(process.execPath, [
      "--import",
      "tsx",
      `${root}test/reference-server/fixtures/ipv6-sources.ts`,
      String(prefixLength),
    ]);
    return JSON.parse(out.trim().split("\n").at(-1)!);
  } finally {
    ns.remove();
  }
}

describe("IPv6 sources", () => {
  it("share the limit of their /64, and a code's attempts name the /64", async () => {
    const { statuses, sources } = await run(64);
    // 3 calls per source: two from ::a, then one of ::b's two; the other /64 has its own three.
    expect(statuses).toEqual({
      "fd00:22::a": [400, 400],
      "fd00:22::b": [400, 429],
      "fd00:22:0:1::c": [400, 400, 400],
    });
    expect(sources).toEqual([{ source: "fd00:22:0:2::/64", attempts: 1, lastAttemptAt: expect.any(String) }]);
  }, 60_000);

  it("count per address with a prefix length of 128", async () => {
    const { statuses, sources } = await run(128);
    expect(statuses).toEqual({
      "fd00:22::a": [400, 400],
      "fd00:22::b": [400, 400],
      "fd00:22:0:1::c": [400, 400, 400],
    });
    expect(sources).toEqual([{ source: "fd00:22:0:2::77", attempts: 1, lastAttemptAt: expect.any(String) }]);
  }, 60_000);
});
