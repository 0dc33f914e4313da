import type { Database, Statement } from "better-sqlite3";

/**
 * Statements of one connection, each prepared at its first use and then kept for the connection's
 * life: better-sqlite3's `prepare` compiles the SQL anew on every call, which on the settle path
 * cost more CPU than signing (`sqlite-statement-cache` in scripts/bench/results/measurements.csv).
 *
 * Prepared on first use, not at creation: a read-only store never prepares its writes, and a file
 * of an older schema (a migration's test) lacks tables that only some calls name. A statement
 * prepared before a schema change is recompiled by SQLite itself when it next runs
 * (sqlite3_prepare_v2), so one kept across a trigger's or an index's change stays right.
 *
 * Keys are SQL texts written in the source, a bounded set: SQL built from data (an IN list of
 * variable length) is prepared per call instead, never through this.
 */
export type StatementCache = {
  /** The statement of `sql`, rows as objects (better-sqlite3's default mode). */
  prepare(sql: string): Statement;
  /**
   * The statement of `sql` with each row plucked to its first column: a statement of its own,
   * since `.pluck()` changes the statement it is called on.
   */
  pluck(sql: string): Statement;
};

/** A statement cache over `db`; its statements die with the connection. */
export function createStatementCache(db: Database): StatementCache {
  const plain = new Map<string, Statement>();
  const plucked = new Map<string, Statement>();
  return {
    prepare(sql) {
      let statement = plain.get(sql);
      if (statement === undefined) plain.set(sql, (statement = db.prepare(sql)));
      return statement;
    },
    pluck(sql) {
      let statement = plucked.get(sql);
      if (statement === undefined) plucked.set(sql, (statement = db.prepare(sql).pluck()));
      return statement;
    },
  };
}
