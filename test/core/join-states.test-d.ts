import { expectTypeOf, test } from "vitest";
import { type JOIN_STATES } from "../../src/core/join-states.js";
import type { JoinState } from "../../src/types.js";

test("JOIN_STATES is exactly the spec's JoinState, in both directions", () => {
  expectTypeOf<(typeof JOIN_STATES)[number]>().toEqualTypeOf<JoinState>();
});
