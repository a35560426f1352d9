/**
 * The SQLite engine under the store, and the few calls the store makes of it.
 *
 * Why libsql: it has better-sqlite3's synchronous API (a transaction is one synchronous
 * function, so no other request can interleave with it) and ships its compiled library inside
 * a registry package, so `npm ci` copies a file instead of compiling SQLite: about 3 s against
 * about 93 s for better-sqlite3, whose prebuilt binaries come from a host a locked-down build
 * machine cannot reach (`npm run bench:first-run` measures the whole first run). The same
 * binary works on Node 20 and Node 24; better-sqlite3 aborted Node 24 when the garbage
 * collector freed a statement. `node:sqlite` would need no package at all, but Node 20 has
 * none.
 *
 * Settings, each checked after it is set (an engine that ignored one would fail here, at
 * start, not at the first power cut): WAL, `synchronous = FULL` (a change the server answered
 * survives a power cut, not only a process crash), `secure_delete` (a delivery's node key and
 * cluster secrets, cleared once the join ends, are overwritten, not left in free pages),
 * foreign keys, and a busy timeout.
 * @module
 */

import Database from "libsql";

/** A database connection (libsql's, better-sqlite3's API). */
export type Connection = Database.Database;

/** A row as the engine answers it, by column name. */
export type Row = Record<string, unknown>;

/** A value SQLite binds. */
export type SqlValue = string | number | bigint | null;

/**
 * How long a writer waits for another connection's lock before SQLITE_BUSY. The server has one
 * connection; only an outside reader (a backup, an operator's sqlite3 shell) takes a lock, and
 * briefly: 5 s outlasts it without holding a request for long.
 */
const BUSY_TIMEOUT_MS = 5000;

/** The settings the store relies on, with the value each must read back as. */
const SETTINGS: readonly { pragma: string; set: string; expect: string | number }[] = [
  { pragma: "journal_mode", set: "WAL", expect: "wal" },
  // 2 is FULL: fsync at every commit, WAL included.
  { pragma: "synchronous", set: "FULL", expect: 2 },
  { pragma: "secure_delete", set: "ON", expect: 1 },
  { pragma: "foreign_keys", set: "ON", expect: 1 },
  { pragma: "busy_timeout", set: String(BUSY_TIMEOUT_MS), expect: BUSY_TIMEOUT_MS },
];

/** Opens the database at `path` with {@link SETTINGS}; throws if one does not take. */
export function openConnection(path: string): Connection {
  const db = new Database(path);
  try {
    for (const { pragma, set, expect } of SETTINGS) {
      db.exec(`PRAGMA ${pragma} = ${set}`);
      const actual = readPragma(db, pragma);
      if (actual !== expect) throw new Error(`SQLite did not take ${pragma} = ${set} (it reads ${String(actual)})`);
    }
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** The value of a pragma that answers one value (e.g. `user_version`). */
export function readPragma(db: Connection, pragma: string): unknown {
  const row = one(db, `PRAGMA ${pragma}`);
  // One column, named after the pragma except for busy_timeout's ("timeout").
  return row ? Object.values(row)[0] : undefined;
}

// Parameters go to libsql as one array: given one argument that is an object (null included),
// libsql would bind it by name.

/** libsql adds each row a `_metadata` field (the query's duration): a row is its columns only. */
function columnsOnly(row: Row): Row {
  delete row._metadata;
  return row;
}

/** The first row of a query, if any. */
export function one(db: Connection, sql: string, ...params: SqlValue[]): Row | undefined {
  const row = db.prepare(sql).get(params) as Row | undefined;
  return row && columnsOnly(row);
}

/** Every row of a query. */
export function many(db: Connection, sql: string, ...params: SqlValue[]): Row[] {
  return (db.prepare(sql).all(params) as Row[]).map(columnsOnly);
}

/** Runs a statement that answers no rows. */
export function run(db: Connection, sql: string, ...params: SqlValue[]): void {
  db.prepare(sql).run(params);
}

/**
 * Runs `fn` in one write transaction, begun IMMEDIATE (the write lock is taken at the start,
 * so two writers never both read and then fail to commit); a throw rolls it back.
 *
 * Written out rather than libsql's `transaction()`: on some errors (`SQLITE_FULL`, a full disk)
 * SQLite has already rolled the transaction back, and libsql's wrapper then runs `ROLLBACK`
 * regardless, whose "no transaction is active" replaces the error that matters. Here the
 * original error is thrown, so a full disk can be told apart (storage-faults.ts), and the
 * connection is left outside any transaction either way.
 */
export function writeTransaction<T>(db: Connection, fn: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = fn();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    if (db.inTransaction) {
      try {
        db.exec("ROLLBACK");
      } catch {
        // The rollback's own failure must not hide why the transaction failed.
      }
    }
    throw error;
  }
}
