/**
 * The schemas of src/schemas are written by hand; these type-level tests hold them to the
 * types generated from openapi.yaml (generated/api.d.ts), both ways, so that drift on either
 * side (a field added, dropped, made optional, an enum value changed) fails `npx vitest run`.
 */
import { describe, expectTypeOf, it } from "vitest";
import type * as z from "zod/mini";
import type { components } from "../../generated/api.js";
import type * as S from "../../src/schemas/index.js";

type Schemas = components["schemas"];

// The spec's `readOnly` fields come out of openapi-typescript as `readonly` properties, which
// zod cannot express on a property (only on the value). The modifier says "server-set", not
// anything about shape, so both sides are compared with it removed; every other difference
// (optionality, types, enum members, extra or missing fields) still fails.
type Writable<T> = T extends readonly (infer U)[]
  ? Writable<U>[]
  : T extends object
    ? { -readonly [K in keyof T]: Writable<T[K]> }
    : T;

/** The schema's output type, normalised as above. */
type Out<X extends z.ZodMiniType> = Writable<z.output<X>>;

describe("zod schemas equal the generated types", () => {
  it("problem", () => {
    expectTypeOf<Out<typeof S.ProblemCodeSchema>>().toEqualTypeOf<Writable<Schemas["ProblemCode"]>>();
    expectTypeOf<Out<typeof S.ProblemSchema>>().toEqualTypeOf<Writable<Schemas["Problem"]>>();
    expectTypeOf<Out<typeof S.PolicyIssueSchema>>().toEqualTypeOf<Writable<Schemas["PolicyIssue"]>>();
    expectTypeOf<Out<typeof S.FieldErrorSchema>>().toEqualTypeOf<Writable<Schemas["FieldError"]>>();
  });

  it("join listener answers", () => {
    expectTypeOf<Out<typeof S.PakeChallengeSchema>>().toEqualTypeOf<Writable<Schemas["PakeChallenge"]>>();
    expectTypeOf<Out<typeof S.CodeCheckSchema>>().toEqualTypeOf<Writable<Schemas["CodeCheck"]>>();
    expectTypeOf<Out<typeof S.RegistrationSchema>>().toEqualTypeOf<Writable<Schemas["Registration"]>>();
    expectTypeOf<Out<typeof S.UpgradeSchema>>().toEqualTypeOf<Writable<Schemas["Upgrade"]>>();
    expectTypeOf<Out<typeof S.DeliverySchema>>().toEqualTypeOf<Writable<Schemas["Delivery"]>>();
    expectTypeOf<Out<typeof S.BundleSchema>>().toEqualTypeOf<Writable<Schemas["Bundle"]>>();
    expectTypeOf<Out<typeof S.VipsSchema>>().toEqualTypeOf<Writable<Schemas["Vips"]>>();
    expectTypeOf<Out<typeof S.ClusterNodeSchema>>().toEqualTypeOf<Writable<Schemas["ClusterNode"]>>();
    expectTypeOf<Out<typeof S.NetworkBindingSchema>>().toEqualTypeOf<Writable<Schemas["NetworkBinding"]>>();
    expectTypeOf<Out<typeof S.NodeRoleSchema>>().toEqualTypeOf<Writable<Schemas["NodeRole"]>>();
    expectTypeOf<Out<typeof S.JoinStateSchema>>().toEqualTypeOf<Writable<Schemas["JoinState"]>>();
  });

  it("inventory", () => {
    expectTypeOf<Out<typeof S.InventorySchema>>().toEqualTypeOf<Writable<Schemas["Inventory"]>>();
    expectTypeOf<Out<typeof S.DiskSchema>>().toEqualTypeOf<Writable<Schemas["Disk"]>>();
    expectTypeOf<Out<typeof S.DiskHolderSchema>>().toEqualTypeOf<Writable<Schemas["DiskHolder"]>>();
    expectTypeOf<Out<typeof S.PartitionSchema>>().toEqualTypeOf<Writable<Schemas["Partition"]>>();
    expectTypeOf<Out<typeof S.StackedDeviceSchema>>().toEqualTypeOf<Writable<Schemas["StackedDevice"]>>();
    expectTypeOf<Out<typeof S.NicSchema>>().toEqualTypeOf<Writable<Schemas["Nic"]>>();
    expectTypeOf<Out<typeof S.CpuSchema>>().toEqualTypeOf<Writable<Schemas["Cpu"]>>();
    expectTypeOf<Out<typeof S.ClockReportSchema>>().toEqualTypeOf<Writable<Schemas["ClockReport"]>>();
  });

  it("assignment", () => {
    expectTypeOf<Out<typeof S.AssignmentSchema>>().toEqualTypeOf<Writable<Schemas["Assignment"]>>();
    expectTypeOf<Out<typeof S.MgmtLinkSchema>>().toEqualTypeOf<Writable<Schemas["MgmtLink"]>>();
    expectTypeOf<Out<typeof S.LinkSchema>>().toEqualTypeOf<Writable<Schemas["Link"]>>();
    expectTypeOf<Out<typeof S.BondSchema>>().toEqualTypeOf<Writable<Schemas["Bond"]>>();
    expectTypeOf<Out<typeof S.DiskAssignmentSchema>>().toEqualTypeOf<Writable<Schemas["DiskAssignment"]>>();
    expectTypeOf<Out<typeof S.ProviderUplinkSchema>>().toEqualTypeOf<Writable<Schemas["ProviderUplink"]>>();
  });

  it("admin answers", () => {
    expectTypeOf<Out<typeof S.JoinCodeSchema>>().toEqualTypeOf<Writable<Schemas["JoinCode"]>>();
    expectTypeOf<Out<typeof S.JoinCodeStateSchema>>().toEqualTypeOf<Writable<Schemas["JoinCodeState"]>>();
    expectTypeOf<Out<typeof S.MintedJoinCodeSchema>>().toEqualTypeOf<Writable<Schemas["MintedJoinCode"]>>();
    expectTypeOf<Out<typeof S.JoinCodeListSchema>>().toEqualTypeOf<Writable<Schemas["JoinCodeList"]>>();
    expectTypeOf<Out<typeof S.NodeJoinSchema>>().toEqualTypeOf<Writable<Schemas["NodeJoin"]>>();
    expectTypeOf<Out<typeof S.NodeJoinListSchema>>().toEqualTypeOf<Writable<Schemas["NodeJoinList"]>>();
    expectTypeOf<Out<typeof S.StepSchema>>().toEqualTypeOf<Writable<Schemas["Step"]>>();
    expectTypeOf<Out<typeof S.MemberSchema>>().toEqualTypeOf<Writable<Schemas["Member"]>>();
    expectTypeOf<Out<typeof S.MemberStateSchema>>().toEqualTypeOf<Writable<Schemas["MemberState"]>>();
    expectTypeOf<Out<typeof S.MemberListSchema>>().toEqualTypeOf<Writable<Schemas["MemberList"]>>();
    expectTypeOf<Out<typeof S.ClusterNetworkSchema>>().toEqualTypeOf<Writable<Schemas["ClusterNetwork"]>>();
    expectTypeOf<Out<typeof S.ClusterNetworksSchema>>().toEqualTypeOf<Writable<Schemas["ClusterNetworks"]>>();
    expectTypeOf<Out<typeof S.CaRotationSchema>>().toEqualTypeOf<Writable<Schemas["CaRotation"]>>();
    expectTypeOf<Out<typeof S.ClusterUpgradeSchema>>().toEqualTypeOf<Writable<Schemas["ClusterUpgrade"]>>();
  });

  it("the normalisation keeps what matters: an optional field is not a required one", () => {
    expectTypeOf<Writable<{ a?: string }>>().not.toEqualTypeOf<Writable<{ a: string }>>();
    expectTypeOf<Writable<{ a?: string }>>().not.toEqualTypeOf<Writable<{ a?: string; b?: number }>>();
    expectTypeOf<Writable<{ a: "x" | "y" }>>().not.toEqualTypeOf<Writable<{ a: "x" }>>();
  });
});
