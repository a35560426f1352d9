/**
 * The rows the founder keeps, as its code handles them (times in epoch ms, JSON columns
 * parsed). store.ts reads and writes them; schema.ts says how they sit in SQLite.
 * @module
 */

import type { Assignment, Delivery, Inventory, JoinState, Step, Upgrade } from "@stratum/join";

/** A join code as stored: its OPAQUE record, never the code. Times are epoch ms. */
export interface JoinCodeRow {
  id: string;
  selector: string;
  /** The OPAQUE registration record. Secret-bearing (it resists offline guessing only by Argon2). */
  record: string;
  caFingerprint: string;
  endpoint: string;
  attempts: number;
  createdBy: string;
  createdAt: number;
  expiresAt: number;
  revokedBy: string | null;
  revokedAt: number | null;
}

/** Where a code's counted attempts came from: a source (an address, or an IPv6 prefix) and how many. */
export interface AttemptSourceRow {
  source: string;
  attempts: number;
  /** When its last counted attempt ended, epoch ms. */
  lastAt: number;
}

/** A registration as stored. Times are epoch ms. */
export interface JoinRow {
  id: string;
  codeId: string;
  state: JoinState;
  pairingCode: string;
  keyFingerprint: string;
  sourceAddr: string | null;
  hostname: string | null;
  systemSerial: string | null;
  release: string;
  inventory: Inventory | null;
  assignment: StoredAssignment | null;
  nodeId: string | null;
  upgrade: Upgrade | null;
  approvedBy: string | null;
  approvedAt: number | null;
  rejectedBy: string | null;
  rejectedAt: number | null;
  reason: string | null;
  deliveredAt: number | null;
  lastSeenAt: number | null;
  currentStep: string | null;
  failedStep: string | null;
  failedStepTitle: string | null;
  failedError: string | null;
  steps: Step[];
  /** How many steps the install plans in all, when the joiner said (its last report that did). */
  totalSteps: number | null;
  /** What the joiner receives while delivering/installing. Holds the node key and cluster secrets. */
  delivery: Delivery | null;
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
}

/** What a new registration says of itself; the rest of its row starts empty. */
export type NewJoin = Pick<
  JoinRow,
  | "id"
  | "codeId"
  | "state"
  | "pairingCode"
  | "keyFingerprint"
  | "sourceAddr"
  | "hostname"
  | "systemSerial"
  | "release"
  | "inventory"
  | "upgrade"
  | "createdAt"
  | "expiresAt"
>;

/** The row of a registration just made: nothing approved, delivered or reported yet. */
export function newJoinRow(join: NewJoin): JoinRow {
  return {
    ...join,
    assignment: null,
    nodeId: null,
    approvedBy: null,
    approvedAt: null,
    rejectedBy: null,
    rejectedAt: null,
    reason: null,
    deliveredAt: null,
    lastSeenAt: join.createdAt,
    currentStep: null,
    failedStep: null,
    failedStepTitle: null,
    failedError: null,
    steps: [],
    totalSteps: null,
    delivery: null,
    updatedAt: join.createdAt,
  };
}

/**
 * An assignment as the founder keeps it: the API's shape, plus the kernel names of the disks it
 * names, so `copyFrom` can match disks on another machine by name.
 */
export type StoredAssignment = Omit<Mutable<Assignment>, "links"> & {
  links?: Mutable<NonNullable<Assignment["links"]>[number]>[];
  /** Disk key → the disk's kernel name on that machine. Internal; never answered. */
  diskNames?: Record<string, string>;
};

/** `T` without `readonly` (the generated types mark the spec's readOnly fields so). */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A member as stored. */
export interface MemberRow {
  nodeId: string;
  name: string;
  role: "control-plane" | "hybrid" | "hypervisor" | "storage";
  state: "joining" | "active" | "leaving";
  mgmtIp: string | null;
  appliedGeneration: number;
  joinedAt: number | null;
  joinId: string | null;
  az: string | null;
  labels: Record<string, string>;
  networks: Record<string, { ip: string; interface?: string }>;
  assignment: StoredAssignment | null;
}

/** One audit entry. Never a secret: ids, actors and what changed. */
export interface AuditEntry {
  seq: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  details: Record<string, unknown>;
}

/** An API token as stored: a SHA-256 hash of it, never the token. */
export interface TokenRow {
  id: string;
  name: string;
  hash: string;
  permissions: string[];
  createdAt: number;
}
