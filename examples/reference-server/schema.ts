/**
 * How the founder's rows sit in SQLite: the migrations that make the tables, and the mapping
 * between a table's columns and its row type (rows.ts). A change of schema is a new entry at
 * the end of {@link MIGRATIONS}, never an edit of an old one: a data directory records how many
 * it has applied (`user_version`).
 * @module
 */

import type { Step } from "@stratum/join";
import type { AuditEntry, JoinCodeRow, JoinRow, MemberRow, StoredAssignment, TokenRow } from "./rows.js";
import type { Row, SqlValue } from "./sqlite.js";

/** The schema, one migration per entry, applied in order. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE tokens (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,
    permissions TEXT NOT NULL, created_at INTEGER NOT NULL);
  CREATE TABLE join_codes (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, selector TEXT NOT NULL, record TEXT NOT NULL,
    ca_fingerprint TEXT NOT NULL, endpoint TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    revoked_by TEXT, revoked_at INTEGER);
  CREATE INDEX join_codes_selector ON join_codes(selector);
  CREATE TABLE joins (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, code_id TEXT NOT NULL REFERENCES join_codes(id),
    state TEXT NOT NULL, pairing_code TEXT NOT NULL, key_fingerprint TEXT NOT NULL,
    source_addr TEXT, hostname TEXT, system_serial TEXT, release TEXT NOT NULL,
    inventory TEXT, assignment TEXT, node_id TEXT, upgrade TEXT,
    approved_by TEXT, approved_at INTEGER, rejected_by TEXT, rejected_at INTEGER, reason TEXT,
    delivered_at INTEGER, last_seen_at INTEGER, current_step TEXT,
    failed_step TEXT, failed_step_title TEXT, failed_error TEXT,
    steps TEXT NOT NULL DEFAULT '[]', delivery TEXT,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER);
  CREATE INDEX joins_key ON joins(key_fingerprint);
  CREATE INDEX joins_state ON joins(state);
  CREATE TABLE join_log (join_id TEXT NOT NULL, seq INTEGER NOT NULL, line TEXT NOT NULL, PRIMARY KEY (join_id, seq));
  CREATE TABLE members (
    node_id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, name TEXT NOT NULL, role TEXT NOT NULL,
    state TEXT NOT NULL, mgmt_ip TEXT, applied_generation INTEGER NOT NULL, joined_at INTEGER,
    join_id TEXT, az TEXT, labels TEXT NOT NULL, networks TEXT NOT NULL, assignment TEXT);
  CREATE TABLE audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, actor TEXT NOT NULL,
    action TEXT NOT NULL, target TEXT NOT NULL, details TEXT NOT NULL);
  `,
  // How many steps the install plans, when the joiner says (ProgressReport.totalSteps).
  `ALTER TABLE joins ADD COLUMN total_steps INTEGER;`,
  // Who a code's counted attempts came from, so the operator sees who burned it.
  `
  CREATE TABLE join_code_attempts (
    code_id TEXT NOT NULL REFERENCES join_codes(id), source TEXT NOT NULL,
    attempts INTEGER NOT NULL, last_at INTEGER NOT NULL, PRIMARY KEY (code_id, source));
  `,
];

/** A JSON column's value: the JSON text, or NULL for none. */
export const json = (value: unknown): string | null =>
  value === null || value === undefined ? null : JSON.stringify(value);
/** A JSON column parsed, or null for NULL. */
const parsed = <T>(text: unknown): T | null => (typeof text === "string" ? (JSON.parse(text) as T) : null);

/** A `join_codes` row. */
export function codeFrom(r: Row): JoinCodeRow {
  return {
    id: r.id as string,
    selector: r.selector as string,
    record: r.record as string,
    caFingerprint: r.ca_fingerprint as string,
    endpoint: r.endpoint as string,
    attempts: r.attempts as number,
    createdBy: r.created_by as string,
    createdAt: r.created_at as number,
    expiresAt: r.expires_at as number,
    revokedBy: (r.revoked_by as string | null) ?? null,
    revokedAt: (r.revoked_at as number | null) ?? null,
  };
}

/** JoinRow field → column, with whether the column holds JSON. */
export const JOIN_COLUMNS: Record<keyof JoinRow, [string, boolean]> = {
  id: ["id", false],
  codeId: ["code_id", false],
  state: ["state", false],
  pairingCode: ["pairing_code", false],
  keyFingerprint: ["key_fingerprint", false],
  sourceAddr: ["source_addr", false],
  hostname: ["hostname", false],
  systemSerial: ["system_serial", false],
  release: ["release", false],
  inventory: ["inventory", true],
  assignment: ["assignment", true],
  nodeId: ["node_id", false],
  upgrade: ["upgrade", true],
  approvedBy: ["approved_by", false],
  approvedAt: ["approved_at", false],
  rejectedBy: ["rejected_by", false],
  rejectedAt: ["rejected_at", false],
  reason: ["reason", false],
  deliveredAt: ["delivered_at", false],
  lastSeenAt: ["last_seen_at", false],
  currentStep: ["current_step", false],
  failedStep: ["failed_step", false],
  failedStepTitle: ["failed_step_title", false],
  failedError: ["failed_error", false],
  steps: ["steps", true],
  totalSteps: ["total_steps", false],
  delivery: ["delivery", true],
  createdAt: ["created_at", false],
  updatedAt: ["updated_at", false],
  expiresAt: ["expires_at", false],
};

/** A `joins` row. */
export function joinFrom(r: Row): JoinRow {
  const out: Record<string, unknown> = {};
  for (const [field, [column, isJson]] of Object.entries(JOIN_COLUMNS)) {
    const value = r[column];
    out[field] = isJson ? parsed(value) : (value ?? null);
  }
  out.steps = (out.steps as Step[] | null) ?? [];
  return out as unknown as JoinRow;
}

/** A `members` row. */
export function memberFrom(r: Row): MemberRow {
  return {
    nodeId: r.node_id as string,
    name: r.name as string,
    role: r.role as MemberRow["role"],
    state: r.state as MemberRow["state"],
    mgmtIp: (r.mgmt_ip as string | null) ?? null,
    appliedGeneration: r.applied_generation as number,
    joinedAt: (r.joined_at as number | null) ?? null,
    joinId: (r.join_id as string | null) ?? null,
    az: (r.az as string | null) ?? null,
    labels: parsed<Record<string, string>>(r.labels) ?? {},
    networks: parsed<MemberRow["networks"]>(r.networks) ?? {},
    assignment: parsed<StoredAssignment>(r.assignment),
  };
}

/** A `joins` column's value for a {@link JoinRow} field (JSON columns as text). */
export function joinValue(field: keyof JoinRow, value: unknown): SqlValue {
  return JOIN_COLUMNS[field][1] ? json(value) : ((value ?? null) as SqlValue);
}

/** A `tokens` row. */
export function tokenFrom(r: Row): TokenRow {
  return {
    id: r.id as string,
    name: r.name as string,
    hash: r.hash as string,
    permissions: JSON.parse(r.permissions as string) as string[],
    createdAt: r.created_at as number,
  };
}

/** An `audit` row. */
export function auditFrom(r: Row): AuditEntry {
  return {
    seq: r.seq as number,
    at: r.at as number,
    actor: r.actor as string,
    action: r.action as string,
    target: r.target as string,
    details: JSON.parse(r.details as string) as Record<string, unknown>,
  };
}
