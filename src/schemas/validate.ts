/**
 * The admin client's opt-in validator (`validateResponses`): one schema per operation's success answer.
 * @module
 */
import * as z from "zod/mini";
import type { ValidationIssue } from "../errors/index.js";
import {
  ApprovalPreviewSchema,
  CaRotationSchema,
  ClusterNetworksSchema,
  ClusterUpgradeSchema,
  JoinCodeListSchema,
  JoinCodeSchema,
  MemberListSchema,
  MintedJoinCodeSchema,
  NodeJoinListSchema,
  NodeJoinSchema,
} from "./admin.js";
import { toValidationIssues } from "./parse.js";

/** The operations of the admin API, by their `operationId` in `openapi.yaml`. */
export type AdminOperationId =
  | "mintJoinCode"
  | "listJoinCodes"
  | "revokeJoinCode"
  | "listNodeJoins"
  | "getNodeJoin"
  | "approveNodeJoin"
  | "previewApproval"
  | "rejectNodeJoin"
  | "retryNodeJoin"
  | "expireNodeJoin"
  | "failNodeJoin"
  | "listClusterMembers"
  | "getClusterNetworks"
  | "rotateClusterCa"
  | "setClusterUpgrade";

/** What a {@link ResponseValidator} found: the body as parsed, or what is wrong with it. */
export type ValidationResult =
  | {
      /** The body matched its schema. */
      success: true;
      /** The body, as parsed by the schema. */
      data: unknown;
    }
  | {
      /** The body did not match its schema. */
      success: false;
      /** Where and how it did not. */
      issues: ValidationIssue[];
    };

/**
 * Checks the success body of one admin operation. The admin client takes one as its
 * `validate` option and throws `ResponseValidationError` when it reports issues. A plain
 * function type, so that the client itself never imports zod.
 */
export type ResponseValidator = (operationId: AdminOperationId, body: unknown) => ValidationResult;

// One schema per operation's success answer (201 for mintJoinCode, 200 for the rest).
const adminResponseSchemas: Record<AdminOperationId, z.ZodMiniType> = {
  mintJoinCode: MintedJoinCodeSchema,
  listJoinCodes: JoinCodeListSchema,
  revokeJoinCode: JoinCodeSchema,
  listNodeJoins: NodeJoinListSchema,
  getNodeJoin: NodeJoinSchema,
  approveNodeJoin: NodeJoinSchema,
  previewApproval: ApprovalPreviewSchema,
  rejectNodeJoin: NodeJoinSchema,
  retryNodeJoin: NodeJoinSchema,
  expireNodeJoin: NodeJoinSchema,
  failNodeJoin: NodeJoinSchema,
  listClusterMembers: MemberListSchema,
  getClusterNetworks: ClusterNetworksSchema,
  rotateClusterCa: CaRotationSchema,
  setClusterUpgrade: ClusterUpgradeSchema,
};

/**
 * The admin client's validator: pass it as `createAdminClient({ validate: validateResponses })`
 * to check every answer against the spec's schema. Only an app that imports it bundles zod.
 */
export const validateResponses: ResponseValidator = (operationId, body) => {
  const result = z.safeParse(adminResponseSchemas[operationId], body);
  return result.success
    ? { success: true, data: result.data }
    : { success: false, issues: toValidationIssues(result.error.issues) };
};
