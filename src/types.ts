/**
 * The API's shapes, named from the domain, as generated from openapi.yaml into generated/.
 * @module
 */
import type { components, operations, paths } from "../generated/api.js";

type Schemas = components["schemas"];

/** A join code as the founder lists it (never the code itself). */
export type JoinCodeInfo = Schemas["JoinCode"];
/** A freshly minted join code: `code` and `url` are shown once. */
export type MintedJoinCode = Schemas["MintedJoinCode"];
/** `live`, `expired` or `revoked`. */
export type JoinCodeState = Schemas["JoinCodeState"];
/** A machine that registered to join, on the founder. */
export type NodeJoin = Schemas["NodeJoin"];
/** Where a join stands: `needs-upgrade`, `pending`, `approved`, `delivering`, `installing`, `joined`, `failed`, `rejected`, `expired`. */
export type JoinState = Schemas["JoinState"];
/** A joiner's view of its registration. */
export type Registration = Schemas["Registration"];
/** What a joiner on an older release upgrades to, and where from. */
export type Upgrade = Schemas["Upgrade"];
/** What an approved joiner receives: node.yaml and the join bundle. */
export type Delivery = Schemas["Delivery"];
/** The join bundle: cluster identity and secrets the joiner adopts. */
export type Bundle = Schemas["Bundle"];
/** A cluster member as a joiner peers with it. */
export type ClusterNode = Schemas["ClusterNode"];
/** A joining machine's hardware. */
export type Inventory = Schemas["Inventory"];
/** One whole disk of a joining machine. */
export type Disk = Schemas["Disk"];
/** One network interface of a joining machine. */
export type Nic = Schemas["Nic"];
/** Everything about a joiner chosen on the founder at approval. */
export type Assignment = Schemas["Assignment"];
/** One link of a joiner's assignment. */
export type Link = Schemas["Link"];
/** What a joiner's disk becomes. */
export type DiskAssignment = Schemas["DiskAssignment"];
/** An approval: an assignment, or a member to copy one from. */
export type Approval = Schemas["Approval"];
/** One step of a join, as the joiner reported it. */
export type Step = Schemas["Step"];
/** The joiner's steps and new log lines. */
export type ProgressReport = Schemas["ProgressReport"];
/** A join code that passed the checks of `POST /v1/join/code-checks`. */
export type CodeCheck = Schemas["CodeCheck"];
/** A cluster member with the generation it applied. */
export type Member = Schemas["Member"];
/** The members and the membership generation. */
export type MemberList = Schemas["MemberList"];
/** The cluster's storage and overlay networks and provider uplink. */
export type ClusterNetworks = Schemas["ClusterNetworks"];
/** An RFC 9457 problem document. */
export type Problem = Schemas["Problem"];
/** One field's problem in a refusal. */
export type FieldError = Schemas["FieldError"];
/** The machine-readable code of every API refusal. */
export type ProblemCode = Schemas["ProblemCode"];

export type { components, operations, paths };
