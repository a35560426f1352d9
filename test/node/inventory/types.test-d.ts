// The inventory collector's hand-documented types must stay the spec's Inventory shape: every
// value it produces is a valid spec Inventory (its literal unions are narrower on purpose:
// `link` is up/down/unknown), and it names exactly the spec's fields, nested ones included.
import { expectTypeOf, test } from "vitest";
import type { components } from "../../../generated/api.js";
import type { Inventory } from "../../../src/node/inventory/index.js";

type Spec = components["schemas"];
type Item<T> = T extends readonly (infer U)[] ? U : never;

test("Inventory fits the spec's Inventory and names the same fields", () => {
  expectTypeOf<Inventory>().toExtend<Spec["Inventory"]>();
  expectTypeOf<keyof Inventory>().toEqualTypeOf<keyof Spec["Inventory"]>();
  expectTypeOf<keyof Item<NonNullable<Inventory["disks"]>>>().toEqualTypeOf<keyof Spec["Disk"]>();
  expectTypeOf<keyof Item<NonNullable<Inventory["nics"]>>>().toEqualTypeOf<keyof Spec["Nic"]>();
  expectTypeOf<keyof NonNullable<Inventory["cpu"]>>().toEqualTypeOf<keyof Spec["Cpu"]>();
  expectTypeOf<keyof NonNullable<Inventory["clock"]>>().toEqualTypeOf<keyof Spec["ClockReport"]>();
  type Disk = Item<NonNullable<Inventory["disks"]>>;
  expectTypeOf<keyof Item<NonNullable<Disk["partitions"]>>>().toEqualTypeOf<keyof Spec["Partition"]>();
  expectTypeOf<keyof Item<NonNullable<Disk["holders"]>>>().toEqualTypeOf<keyof Spec["DiskHolder"]>();
  expectTypeOf<keyof Item<NonNullable<Disk["stack"]>>>().toEqualTypeOf<keyof Spec["StackedDevice"]>();
});
