/**
 * Everything the founder keeps, in one embedded SQLite database (sqlite.ts says which engine
 * and why; schema.ts how the rows sit in it). Every change is one transaction together with
 * its audit entry, so a crash in the middle of a change leaves the state before it, and a
 * restart loses nothing that was answered.
 *
 * Stored secrets: each join code's OPAQUE record (never the code), hashes of API tokens (never
 * a token), and the delivery of a running join (the node key, the cluster's secrets), cleared
 * when the join ends and then scrubbed from the files ({@link Store.checkpoint}). The cluster's
 * own secrets live in a 0600 file beside the CA key, not here. The database file is created
 * mode 0600.
 * @module
 */

import { EventEmitter } from "node:events";
import { chmodSync, closeSync, existsSync, openSync } from "node:fs";
import type { JoinState } from "@stratum/join";
import type { AttemptSourceRow, AuditEntry, JoinCodeRow, JoinRow, MemberRow, TokenRow } from "./rows.js";
import {
  JOIN_COLUMNS,
  MIGRATIONS,
  auditFrom,
  codeFrom,
  joinFrom,
  joinValue,
  json,
  memberFrom,
  tokenFrom,
} from "./schema.js";
import {
  many,
  one,
  openConnection,
  readPragma,
  run,
  writeTransaction,
  type Connection,
  type Row,
  type SqlValue,
} from "./sqlite.js";

/**
 * The database. Methods that change state must run inside {@link Store.tx}; readers may run
 * anywhere. After each committed transaction the store emits `change`, which wakes long polls
 * and the join runner.
 */
export class Store extends EventEmitter {
  /** The connection (for tests that reach past the store's methods). */
  readonly db: Connection;
  #depth = 0;

  /** Opens (creating mode 0600 if needed) and migrates the database at `path`. */
  constructor(path: string) {
    super();
    this.setMaxListeners(0);
    if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
    chmodSync(path, 0o600);
    this.db = openConnection(path);
    this.#migrate();
  }

  #migrate(): void {
    const version = readPragma(this.db, "user_version") as number;
    for (let v = version; v < MIGRATIONS.length; v++) {
      writeTransaction(this.db, () => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.exec(`PRAGMA user_version = ${v + 1}`);
      });
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
      result = writeTransaction(this.db, fn);
    } finally {
      this.#depth--;
    }
    this.emit("change");
    return result;
  }

  /**
   * Copies the WAL into the database file and truncates the WAL to nothing. Called after a
   * secret is cleared (a delivery at the end of its join): `secure_delete` zeroes the content
   * in the pages the change writes, but the WAL still holds the pages as they were before it
   * (the secret, in every frame that ever carried it) until a checkpoint copies the zeroed pages
   * over the database file's and the WAL is cut back. A PASSIVE or FULL checkpoint would leave
   * the old frames in the file; TRUNCATE removes them. Returns false when a reader kept it from
   * finishing (an outside reader, such as a backup): the frames are then cut at the next one.
   */
  checkpoint(): boolean {
    const row = this.#one("PRAGMA wal_checkpoint(TRUNCATE)");
    return row?.busy === 0;
  }

  /** Closes the database (after a checkpoint, so the WAL does not have to be replayed). */
  close(): void {
    try {
      this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      this.db.close();
    }
  }

  #one(sql: string, ...params: SqlValue[]): Row | undefined {
    return one(this.db, sql, ...params);
  }

  #many(sql: string, ...params: SqlValue[]): Row[] {
    return many(this.db, sql, ...params);
  }

  #run(sql: string, ...params: SqlValue[]): void {
    run(this.db, sql, ...params);
  }

  #count(sql: string, ...params: SqlValue[]): number {
    return this.#one(sql, ...params)!.n as number;
  }

  // ---- meta ----

  /** A JSON value of the meta table. */
  getMeta<T>(key: string): T | undefined {
    const row = this.#one("SELECT value FROM meta WHERE key = ?", key);
    return row ? (JSON.parse(row.value as string) as T) : undefined;
  }

  /** Sets a JSON value of the meta table. */
  setMeta(key: string, value: unknown): void {
    this.#run(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      key,
      JSON.stringify(value),
    );
  }

  /** Deletes a value of the meta table. */
  deleteMeta(key: string): void {
    this.#run("DELETE FROM meta WHERE key = ?", key);
  }

  // ---- audit ----

  /** Appends an audit entry. `details` must hold no secret. */
  audit(actor: string, action: string, target: string, details: Record<string, unknown> = {}, at = Date.now()): void {
    this.#run(
      "INSERT INTO audit (at, actor, action, target, details) VALUES (?, ?, ?, ?, ?)",
      at,
      actor,
      action,
      target,
      JSON.stringify(details),
    );
  }

  /** The audit trail, oldest first. */
  auditEntries(): AuditEntry[] {
    return this.#many("SELECT * FROM audit ORDER BY seq").map(auditFrom);
  }

  // ---- tokens ----

  /** Inserts or replaces a token. */
  putToken(token: TokenRow): void {
    this.#run(
      `INSERT INTO tokens (id, name, hash, permissions, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET name = excluded.name, hash = excluded.hash, permissions = excluded.permissions`,
      token.id,
      token.name,
      token.hash,
      JSON.stringify(token.permissions),
      token.createdAt,
    );
  }

  /** The token with this hash, if any. */
  tokenByHash(hash: string): TokenRow | undefined {
    const r = this.#one("SELECT * FROM tokens WHERE hash = ?", hash);
    return r ? tokenFrom(r) : undefined;
  }

  // ---- join codes ----

  /** Inserts a join code. */
  insertCode(code: JoinCodeRow): void {
    this.#run(
      `INSERT INTO join_codes (id, seq, selector, record, ca_fingerprint, endpoint, attempts, created_by, created_at, expires_at, revoked_by, revoked_at)
       VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM join_codes), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
    const r = this.#one("SELECT * FROM join_codes WHERE id = ?", id);
    return r ? codeFrom(r) : undefined;
  }

  /** Every join code, newest first. */
  listCodes(): JoinCodeRow[] {
    return this.#many("SELECT * FROM join_codes ORDER BY seq DESC").map(codeFrom);
  }

  /** The live codes at `now`: not revoked, not expired. */
  liveCodes(now: number): JoinCodeRow[] {
    return this.#many(
      "SELECT * FROM join_codes WHERE revoked_at IS NULL AND expires_at > ? ORDER BY seq DESC",
      now,
    ).map(codeFrom);
  }

  /** Adds `n` counted attempts from `source` to what a code keeps of where its attempts came from. */
  addAttemptSource(codeId: string, source: string, n: number, at: number): void {
    this.#run(
      `INSERT INTO join_code_attempts (code_id, source, attempts, last_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (code_id, source) DO UPDATE SET attempts = attempts + excluded.attempts, last_at = excluded.last_at`,
      codeId,
      source,
      n,
      at,
    );
  }

  /** Where a code's counted attempts came from, the most first (at most as many as its attempts). */
  attemptSources(codeId: string): AttemptSourceRow[] {
    return this.#many(
      "SELECT source, attempts, last_at FROM join_code_attempts WHERE code_id = ? ORDER BY attempts DESC, last_at DESC",
      codeId,
    ).map((r) => ({ source: r.source as string, attempts: r.attempts as number, lastAt: r.last_at as number }));
  }

  /** Sets a code's attempt counter. */
  setAttempts(id: string, attempts: number): void {
    this.#run("UPDATE join_codes SET attempts = ? WHERE id = ?", attempts, id);
  }

  /** Revokes a code. */
  revokeCode(id: string, by: string, at: number): void {
    this.#run("UPDATE join_codes SET revoked_by = ?, revoked_at = ? WHERE id = ? AND revoked_at IS NULL", by, at, id);
  }

  /** How many registrations a code has. */
  registrationsOf(codeId: string): number {
    return this.#count("SELECT COUNT(*) AS n FROM joins WHERE code_id = ?", codeId);
  }

  /** How many live codes there are at `now`. */
  countLiveCodes(now: number): number {
    return this.#count("SELECT COUNT(*) AS n FROM join_codes WHERE revoked_at IS NULL AND expires_at > ?", now);
  }

  // ---- joins ----

  /** Inserts a registration. */
  insertJoin(join: JoinRow): void {
    const fields = Object.keys(JOIN_COLUMNS) as (keyof JoinRow)[];
    const columns = fields.map((f) => JOIN_COLUMNS[f][0]);
    this.#run(
      `INSERT INTO joins (seq, ${columns.join(", ")}) VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM joins), ${columns.map(() => "?").join(", ")})`,
      ...fields.map((f) => joinValue(f, join[f])),
    );
  }

  /** Changes fields of a registration; `updatedAt` is set to `at`. */
  patchJoin(id: string, patch: Partial<JoinRow>, at = Date.now()): void {
    const entries = Object.entries({ ...patch, updatedAt: at }).filter(([k]) => k !== "id") as [
      keyof JoinRow,
      unknown,
    ][];
    const sets = entries.map(([k]) => `${JOIN_COLUMNS[k][0]} = ?`);
    this.#run(`UPDATE joins SET ${sets.join(", ")} WHERE id = ?`, ...entries.map(([k, v]) => joinValue(k, v)), id);
  }

  /** A registration by id. */
  getJoin(id: string): JoinRow | undefined {
    const r = this.#one("SELECT * FROM joins WHERE id = ?", id);
    return r ? joinFrom(r) : undefined;
  }

  /** Every registration, newest first. */
  listJoins(): JoinRow[] {
    return this.#many("SELECT * FROM joins ORDER BY seq DESC").map(joinFrom);
  }

  /** Registrations in one of `states`, oldest first. */
  joinsInState(...states: readonly JoinState[]): JoinRow[] {
    return this.#many(
      `SELECT * FROM joins WHERE state IN (${states.map(() => "?").join(", ")}) ORDER BY seq`,
      ...states,
    ).map(joinFrom);
  }

  /** The newest registration of a key, if any. */
  joinByKey(keyFingerprint: string): JoinRow | undefined {
    const r = this.#one("SELECT * FROM joins WHERE key_fingerprint = ? ORDER BY seq DESC LIMIT 1", keyFingerprint);
    return r ? joinFrom(r) : undefined;
  }

  /** How many registrations are not in one of `finalStates`. */
  countJoinsNotIn(finalStates: readonly JoinState[]): number {
    return this.#count(
      `SELECT COUNT(*) AS n FROM joins WHERE state NOT IN (${finalStates.map(() => "?").join(", ")})`,
      ...finalStates,
    );
  }

  /** Appends install-log lines and keeps only the last `keep`. */
  appendLog(joinId: string, lines: readonly string[], keep: number): void {
    if (lines.length === 0) return;
    const start =
      (this.#one("SELECT COALESCE(MAX(seq), 0) AS s FROM join_log WHERE join_id = ?", joinId)!.s as number) + 1;
    const insert = this.db.prepare("INSERT INTO join_log (join_id, seq, line) VALUES (?, ?, ?)");
    lines.forEach((line, i) => insert.run([joinId, start + i, line]));
    this.#run("DELETE FROM join_log WHERE join_id = ? AND seq <= ?", joinId, start + lines.length - 1 - keep);
  }

  /** The kept install-log lines of a join, oldest first. */
  logTail(joinId: string): string[] {
    return this.#many("SELECT line FROM join_log WHERE join_id = ? ORDER BY seq", joinId).map((r) => r.line as string);
  }

  // ---- members ----

  /** Inserts or replaces a member (keeping its join order). */
  putMember(member: MemberRow): void {
    this.#run(
      `INSERT INTO members (node_id, seq, name, role, state, mgmt_ip, applied_generation, joined_at, join_id, az, labels, networks, assignment)
       VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM members), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(node_id) DO UPDATE SET name = excluded.name, role = excluded.role, state = excluded.state,
         mgmt_ip = excluded.mgmt_ip, applied_generation = excluded.applied_generation, joined_at = excluded.joined_at,
         join_id = excluded.join_id, az = excluded.az, labels = excluded.labels, networks = excluded.networks,
         assignment = excluded.assignment`,
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
    this.#run("DELETE FROM members WHERE node_id = ?", nodeId);
  }

  /** A member by node id. */
  getMember(nodeId: string): MemberRow | undefined {
    const r = this.#one("SELECT * FROM members WHERE node_id = ?", nodeId);
    return r ? memberFrom(r) : undefined;
  }

  /** Every member, in join order. */
  listMembers(): MemberRow[] {
    return this.#many("SELECT * FROM members ORDER BY seq").map(memberFrom);
  }

  /** Sets every `active` member's applied generation (the reference cluster applies at once). */
  applyGenerationToActive(generation: number): void {
    this.#run("UPDATE members SET applied_generation = ? WHERE state = 'active'", generation);
  }
}
