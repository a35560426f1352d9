/**
 * The API's shapes, named from the domain, as generated from openapi.yaml into generated/.
 * @module
 */
import type { components, operations, paths } from "../generated/api.js";

/** A join code as the founder lists it (never the code itself). */
export type JoinCodeInfo = components["schemas"]["JoinCode"];
/** A freshly minted join code: `code` and `url` are shown once. */
export type MintedJoinCode = components["schemas"]["MintedJoinCode"];
/** `live`, `expired` or `revoked`. */
export type JoinCodeState = components["schemas"]["JoinCodeState"];
/** A machine that registered to join, on the founder. */
export type NodeJoin = components["schemas"]["NodeJoin"];
/** Where a join stands: `needs-upgrade`, `pending`, `approved`, `delivering`, `installing`, `joined`, `failed`, `rejected`, `expired`. */
export type JoinState = components["schemas"]["JoinState"];
/**
 * How many more machines the cluster can take: the roles an approval may name, the
 * control-plane nodes now and how many more joins can be approved, and the waiting slots with
 * the registrations they turned away (the join list's `capacity`).
 */
export type JoinCapacity = components["schemas"]["JoinCapacity"];
/** A node's role; an approval may name only those the join list's `capacity.roles` names. */
export type NodeRole = components["schemas"]["NodeRole"];
/** A joiner's view of its registration. */
export type Registration = components["schemas"]["Registration"];
/** What a joiner on an older release upgrades to, and where from. */
export type Upgrade = components["schemas"]["Upgrade"];
/** What an approved joiner receives: node.yaml and the join bundle. */
export type Delivery = components["schemas"]["Delivery"];
/** The join bundle: cluster identity and secrets the joiner adopts. */
export type Bundle = components["schemas"]["Bundle"];
/** A cluster member as a joiner peers with it. */
export type ClusterNode = components["schemas"]["ClusterNode"];
/** A joining machine's hardware. */
export type Inventory = components["schemas"]["Inventory"];
/** A joining machine's clock at registration: its offset from the founder's, and whether NTP synchronises it. */
export type ClockReport = components["schemas"]["ClockReport"];
/** One whole disk of a joining machine. */
export type Disk = components["schemas"]["Disk"];
/** One network interface of a joining machine. */
export type Nic = components["schemas"]["Nic"];
/** Everything about a joiner chosen on the founder at approval. */
export type Assignment = components["schemas"]["Assignment"];
/** One link of a joiner's assignment. */
export type Link = components["schemas"]["Link"];
/** What a joiner's disk becomes. */
export type DiskAssignment = components["schemas"]["DiskAssignment"];
/** The assignment an approval asks for: an {@link Assignment} whose role may be any node role (all but `hybrid` are refused at `role`). */
export type ApprovalAssignment = components["schemas"]["ApprovalAssignment"];
/** An approval: an assignment, or a member to copy one from. */
export type Approval = components["schemas"]["Approval"];
/** One step of a join, as the joiner reported it. */
export type Step = components["schemas"]["Step"];
/** The joiner's steps and new log lines. */
export type ProgressReport = components["schemas"]["ProgressReport"];
/** A join code that passed the checks of `POST /v1/join/code-checks`. */
export type CodeCheck = components["schemas"]["CodeCheck"];
/** A cluster member with the generation it applied. */
export type Member = components["schemas"]["Member"];
/** The members and the membership generation. */
export type MemberList = components["schemas"]["MemberList"];
/** The cluster's storage and overlay networks and provider uplink. */
export type ClusterNetworks = components["schemas"]["ClusterNetworks"];
/** An RFC 9457 problem document. */
export type Problem = components["schemas"]["Problem"];
/** One field's problem in a refusal. */
export type FieldError = components["schemas"]["FieldError"];
/** The machine-readable code of every API refusal. */
export type ProblemCode = components["schemas"]["ProblemCode"];

/** The keys of `T` whose properties are optional. */
/**
 * A request body as a caller writes it: every optional field, at any depth, also takes
 * `undefined`, which is left out of the JSON sent. So a project compiled with
 * `exactOptionalPropertyTypes` can pass `{ assignment: maybeAssignment }` as is.
 */
export type Input<T> = T extends readonly unknown[]
  ? { [I in keyof T]: Input<T[I]> }
  : T extends object
    ? { [K in keyof T]: object extends Pick<T, K> ? Input<Exclude<T[K], undefined>> | undefined : Input<T[K]> }
    : T;

export type { components, operations, paths };
