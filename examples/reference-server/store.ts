/**
 * Everything the founder keeps, in one embedded SQLite database (better-sqlite3, WAL). Every
 * change is one transaction together with its audit entry, so a crash in the middle of a change
 * leaves the state before it, and a restart loses nothing that was answered.
 *
 * Stored secrets: each join code's OPAQUE record (never the code), hashes of API tokens (never
 * a token), the cluster's bundle secrets and the delivery of a running join. The database file
 * is created mode 0600.
 * @module
 */

import { EventEmitter } from "node:events";
import { chmodSync, closeSync, existsSync, openSync } from "node:fs";
import Database from "better-sqlite3";
import type { Assignment, Delivery, Inventory, Step, Upgrade } from "@stratum/join";

/** The states of a join (the spec's `JoinState`). */
export type JoinState =
  "needs-upgrade" | "pending" | "approved" | "delivering" | "installing" | "joined" | "failed" | "rejected" | "expired";

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

const MIGRATIONS: string[] = [
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
];

type Row = Record<string, unknown>;

const json = (value: unknown): string | null => (value === null || value === undefined ? null : JSON.stringify(value));
const parsed = <T>(text: unknown): T | null => (typeof text === "string" ? (JSON.parse(text) as T) : null);

function codeFrom(r: Row): JoinCodeRow {
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
const JOIN_COLUMNS: Record<keyof JoinRow, [string, boolean]> = {
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
  delivery: ["delivery", true],
  createdAt: ["created_at", false],
  updatedAt: ["updated_at", false],
  expiresAt: ["expires_at", false],
};

function joinFrom(r: Row): JoinRow {
  const out: Record<string, unknown> = {};
  for (const [field, [column, isJson]] of Object.entries(JOIN_COLUMNS)) {
    const value = r[column];
    out[field] = isJson ? parsed(value) : (value ?? null);
  }
  out.steps = (out.steps as Step[] | null) ?? [];
  return out as unknown as JoinRow;
}

function memberFrom(r: Row): MemberRow {
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

/**
 * The database. Methods that change state must run inside {@link Store.tx}; readers may run
 * anywhere. After each committed transaction the store emits `change`, which wakes long polls
 * and the join runner.
 */
/**
 * Every database and prepared statement this process ever made, kept reachable for good.
 *
 * Why: on Node 24, better-sqlite3 12's Statement destructor (run when the garbage collector
 * frees a statement) calls into Node's environment-cleanup hooks and aborts the process
 * (`Assertion failed: (env) != nullptr`, SIGABRT) when the collection happens where no
 * environment is current, e.g. in a microtask checkpoint of a socket read. better-sqlite3 makes
 * a statement per `prepare()` and per `pragma()` call, so a busy server frees many. The
 * statements here are prepared once per SQL text and never freed, so that destructor never
 * runs while the process lives; the set is bounded (a few dozen SQL texts per database).
 */
const KEEP_FOREVER: unknown[] = [];

/**
 * Makes `db` reuse one prepared statement per SQL text, for `prepare()`, `pragma()` and
 * transactions alike (they all go through the native `prepare`), and keeps them all alive for
 * the life of the process (see {@link KEEP_FOREVER}).
 */
function immortalStatements(db: Database.Database): Database.Database {
  const handle = Object.getOwnPropertySymbols(db)
    .map((symbol) => (db as unknown as Record<symbol, unknown>)[symbol])
    .find(
      (value): value is { prepare: (sql: string, owner: unknown, pragma: boolean) => Database.Statement } =>
        typeof (value as { prepare?: unknown } | null)?.prepare === "function",
    );
  if (!handle) throw new Error("better-sqlite3 changed: its native database handle was not found");
  const prepare = handle.prepare.bind(handle);
  const cache = new Map<string, Database.Statement>();
  KEEP_FOREVER.push(db, cache);
  handle.prepare = (sql, owner, pragma) => {
    const key = `${pragma ? "p" : "s"}\u0000${sql}`;
    let statement = cache.get(key);
    if (!statement) {
      statement = prepare(sql, owner, pragma);
      cache.set(key, statement);
    } else if (statement.reader) {
      // pragma() plucks a simple answer; a reused statement starts from the default mode.
      statement.pluck(false);
    }
    return statement;
  };
  return db;
}

export class Store extends EventEmitter {
  readonly db: Database.Database;
  #depth = 0;

  /** Opens (creating mode 0600 if needed) and migrates the database at `path`. */
  constructor(path: string) {
    super();
    this.setMaxListeners(0);
    if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
    chmodSync(path, 0o600);
    this.db = immortalStatements(new Database(path));
    this.db.pragma("journal_mode = WAL");
    // FULL: a change the server answered survives a power cut, not only a process crash.
    this.db.pragma("synchronous = FULL");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma("busy_timeout = 5000");
    this.#migrate();
  }

  #migrate(): void {
    const version = this.db.pragma("user_version", { simple: true }) as number;
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.pragma(`user_version = ${v + 1}`);
      })();
    }
  }

  /**
   * Runs `fn` as one transaction (nested calls join the outer one) and emits `change` after
   * the outermost commit. A throw rolls everything back.
   */
  tx<T>(fn: () => T): T {
    if (this.#depth > 0) return fn();
    this.#depth++;
    let result: T;
    try {
      result = this.db.transaction(fn).immediate();
    } finally {
      this.#depth--;
    }
    this.emit("change");
    return result;
  }

  /** Closes the database (after a checkpoint, so the WAL does not have to be replayed). */
  close(): void {
    try {
      this.db.pragma("wal_checkpoint(TRUNCATE)");
    } finally {
      this.db.close();
    }
  }

  // ---- meta ----

  /** A JSON value of the meta table. */
  getMeta<T>(key: string): T | undefined {
    const row = this.db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as Row | undefined;
    return row ? (JSON.parse(row.value as string) as T) : undefined;
  }

  /** Sets a JSON value of the meta table. */
  setMeta(key: string, value: unknown): void {
    this.db
      .prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
      .run(key, JSON.stringify(value));
  }

  // ---- audit ----

  /** Appends an audit entry. `details` must hold no secret. */
  audit(actor: string, action: string, target: string, details: Record<string, unknown> = {}, at = Date.now()): void {
    this.db
      .prepare("INSERT INTO audit (at, actor, action, target, details) VALUES (?, ?, ?, ?, ?)")
      .run(at, actor, action, target, JSON.stringify(details));
  }

  /** The audit trail, oldest first. */
  auditEntries(): AuditEntry[] {
    return (this.db.prepare("SELECT * FROM audit ORDER BY seq").all() as Row[]).map((r) => ({
      seq: r.seq as number,
      at: r.at as number,
      actor: r.actor as string,
      action: r.action as string,
      target: r.target as string,
      details: JSON.parse(r.details as string) as Record<string, unknown>,
    }));
  }

  // ---- tokens ----

  /** Inserts or replaces a token. */
  putToken(token: TokenRow): void {
    this.db
      .prepare(
        `INSERT INTO tokens (id, name, hash, permissions, created_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET name = excluded.name, hash = excluded.hash, permissions = excluded.permissions`,
      )
      .run(token.id, token.name, token.hash, JSON.stringify(token.permissions), token.createdAt);
  }

  /** The token with this hash, if any. */
  tokenByHash(hash: string): TokenRow | undefined {
    const r = this.db.prepare("SELECT * FROM tokens WHERE hash = ?").get(hash) as Row | undefined;
    if (!r) return undefined;
    return {
      id: r.id as string,
      name: r.name as string,
      hash: r.hash as string,
      permissions: JSON.parse(r.permissions as string) as string[],
      createdAt: r.created_at as number,
    };
  }

  // ---- join codes ----

  /** Inserts a join code. */
  insertCode(code: JoinCodeRow): void {
    this.db
      .prepare(
        `INSERT INTO join_codes (id, seq, selector, record, ca_fingerprint, endpoint, attempts, created_by, created_at, expires_at, revoked_by, revoked_at)
         VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM join_codes), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        code.id,
        code.selector,
        code.record,
        code.caFingerprint,
        code.endpoint,
        code.attempts,
        code.createdBy,
        code.createdAt,
        code.expiresAt,
        code.revokedBy,
        code.revokedAt,
      );
  }

  /** A join code by id. */
  getCode(id: string): JoinCodeRow | undefined {
    const r = this.db.prepare("SELECT * FROM join_codes WHERE id = ?").get(id) as Row | undefined;
    return r ? codeFrom(r) : undefined;
  }

  /** Every join code, newest first. */
  listCodes(): JoinCodeRow[] {
    return (this.db.prepare("SELECT * FROM join_codes ORDER BY seq DESC").all() as Row[]).map(codeFrom);
  }

  /** The codes with this selector, newest first. */
  codesBySelector(selector: string): JoinCodeRow[] {
    return (
      this.db.prepare("SELECT * FROM join_codes WHERE selector = ? ORDER BY seq DESC").all(selector) as Row[]
    ).map(codeFrom);
  }

  /** The live codes at `now`: not revoked, not expired. */
  liveCodes(now: number): JoinCodeRow[] {
    return (
      this.db
        .prepare("SELECT * FROM join_codes WHERE revoked_at IS NULL AND expires_at > ? ORDER BY seq DESC")
        .all(now) as Row[]
    ).map(codeFrom);
  }

  /** Sets a code's attempt counter. */
  setAttempts(id: string, attempts: number): void {
    this.db.prepare("UPDATE join_codes SET attempts = ? WHERE id = ?").run(attempts, id);
  }

  /** Revokes a code. */
  revokeCode(id: string, by: string, at: number): void {
    this.db
      .prepare("UPDATE join_codes SET revoked_by = ?, revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
      .run(by, at, id);
  }

  /** How many registrations a code has. */
  registrationsOf(codeId: string): number {
    return (this.db.prepare("SELECT COUNT(*) AS n FROM joins WHERE code_id = ?").get(codeId) as Row).n as number;
  }

  // ---- joins ----

  /** Inserts a registration. */
  insertJoin(join: JoinRow): void {
    const fields = Object.keys(JOIN_COLUMNS) as (keyof JoinRow)[];
    const columns = fields.map((f) => JOIN_COLUMNS[f][0]);
    const values = fields.map((f) => (JOIN_COLUMNS[f][1] ? json(join[f]) : join[f]));
    this.db
      .prepare(
        `INSERT INTO joins (seq, ${columns.join(", ")}) VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM joins), ${columns.map(() => "?").join(", ")})`,
      )
      .run(...values);
  }

  /** Changes fields of a registration; `updatedAt` is set to `at`. */
  patchJoin(id: string, patch: Partial<JoinRow>, at = Date.now()): void {
    const entries = Object.entries({ ...patch, updatedAt: at }).filter(([k]) => k !== "id") as [
      keyof JoinRow,
      unknown,
    ][];
    const sets = entries.map(([k]) => `${JOIN_COLUMNS[k][0]} = ?`);
    const values = entries.map(([k, v]) => (JOIN_COLUMNS[k][1] ? json(v) : (v ?? null)));
    this.db.prepare(`UPDATE joins SET ${sets.join(", ")} WHERE id = ?`).run(...values, id);
  }

  /** A registration by id. */
  getJoin(id: string): JoinRow | undefined {
    const r = this.db.prepare("SELECT * FROM joins WHERE id = ?").get(id) as Row | undefined;
    return r ? joinFrom(r) : undefined;
  }

  /** Every registration, newest first. */
  listJoins(): JoinRow[] {
    return (this.db.prepare("SELECT * FROM joins ORDER BY seq DESC").all() as Row[]).map(joinFrom);
  }

  /** Registrations in one of `states`, oldest first. */
  joinsInState(...states: JoinState[]): JoinRow[] {
    return (
      this.db
        .prepare(`SELECT * FROM joins WHERE state IN (${states.map(() => "?").join(", ")}) ORDER BY seq`)
        .all(...states) as Row[]
    ).map(joinFrom);
  }

  /** The newest registration of a key, if any. */
  joinByKey(keyFingerprint: string): JoinRow | undefined {
    const r = this.db
      .prepare("SELECT * FROM joins WHERE key_fingerprint = ? ORDER BY seq DESC LIMIT 1")
      .get(keyFingerprint) as Row | undefined;
    return r ? joinFrom(r) : undefined;
  }

  /** How many registrations are not final (not joined, rejected or expired). */
  countOpenJoins(): number {
    return (
      this.db
        .prepare("SELECT COUNT(*) AS n FROM joins WHERE state NOT IN ('joined', 'rejected', 'expired')")
        .get() as Row
    ).n as number;
  }

  /** How many live codes there are at `now`. */
  countLiveCodes(now: number): number {
    return (
      this.db
        .prepare("SELECT COUNT(*) AS n FROM join_codes WHERE revoked_at IS NULL AND expires_at > ?")
        .get(now) as Row
    ).n as number;
  }

  /** Appends install-log lines and keeps only the last `keep`. */
  appendLog(joinId: string, lines: readonly string[], keep: number): void {
    if (lines.length === 0) return;
    const start =
      ((this.db.prepare("SELECT COALESCE(MAX(seq), 0) AS s FROM join_log WHERE join_id = ?").get(joinId) as Row)
        .s as number) + 1;
    const insert = this.db.prepare("INSERT INTO join_log (join_id, seq, line) VALUES (?, ?, ?)");
    lines.forEach((line, i) => insert.run(joinId, start + i, line));
    this.db.prepare("DELETE FROM join_log WHERE join_id = ? AND seq <= ?").run(joinId, start + lines.length - 1 - keep);
  }

  /** The kept install-log lines of a join, oldest first. */
  logTail(joinId: string): string[] {
    return (this.db.prepare("SELECT line FROM join_log WHERE join_id = ? ORDER BY seq").all(joinId) as Row[]).map(
      (r) => r.line as string,
    );
  }

  // ---- members ----

  /** Inserts or replaces a member (keeping its join order). */
  putMember(member: MemberRow): void {
    this.db
      .prepare(
        `INSERT INTO members (node_id, seq, name, role, state, mgmt_ip, applied_generation, joined_at, join_id, az, labels, networks, assignment)
         VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM members), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(node_id) DO UPDATE SET name = excluded.name, role = excluded.role, state = excluded.state,
           mgmt_ip = excluded.mgmt_ip, applied_generation = excluded.applied_generation, joined_at = excluded.joined_at,
           join_id = excluded.join_id, az = excluded.az, labels = excluded.labels, networks = excluded.networks,
           assignment = excluded.assignment`,
      )
      .run(
        member.nodeId,
        member.name,
        member.role,
        member.state,
        member.mgmtIp,
        member.appliedGeneration,
        member.joinedAt,
        member.joinId,
        member.az,
        JSON.stringify(member.labels),
        JSON.stringify(member.networks),
        json(member.assignment),
      );
  }

  /** Removes a member. */
  deleteMember(nodeId: string): void {
    this.db.prepare("DELETE FROM members WHERE node_id = ?").run(nodeId);
  }

  /** A member by node id. */
  getMember(nodeId: string): MemberRow | undefined {
    const r = this.db.prepare("SELECT * FROM members WHERE node_id = ?").get(nodeId) as Row | undefined;
    return r ? memberFrom(r) : undefined;
  }

  /** Every member, in join order. */
  listMembers(): MemberRow[] {
    return (this.db.prepare("SELECT * FROM members ORDER BY seq").all() as Row[]).map(memberFrom);
  }

  /** Sets every `active` member's applied generation (the reference cluster applies at once). */
  applyGenerationToActive(generation: number): void {
    this.db.prepare("UPDATE members SET applied_generation = ? WHERE state = 'active'").run(generation);
  }
}
