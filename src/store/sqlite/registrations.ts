import type { Address } from "viem";
import type { Database } from "./openDatabase.js";
import { createStatementCache } from "./statementCache.js";
import type { RegistrationRow, SaveRegistrationResult } from "../types.js";

type DbRow = {
  wallet_address: string;
  builder_code: string;
  registered_at: number;
  last_confirmed_at: number;
};

const SELECT_REGISTRATION = "SELECT * FROM agent_registrations WHERE wallet_address = ?";

/** Builder-code registrations over a SQLite connection (as postgres/registrations.ts). */
export function createSqliteRegistrations(db: Database) {
  const statements = createStatementCache(db);
  const row = (key: string) =>
    statements.prepare(SELECT_REGISTRATION).get(key) as DbRow | undefined;

  /**
   * Records `wallet` → `code` at `now` (unix ms), idempotently. The same code again keeps
   * `registered_at` and moves `last_confirmed_at`; a different code replaces the old one and
   * restarts `registered_at` (the row says since when the current code holds).
   */
  const save = db.transaction((wallet: Address, code: string, now: number) => {
    const key = wallet.toLowerCase();
    const before = row(key);
    statements
      .prepare(
        `INSERT INTO agent_registrations (wallet_address, builder_code, registered_at, last_confirmed_at)
         VALUES (@key, @code, @now, @now)
         ON CONFLICT (wallet_address) DO UPDATE SET
           registered_at = CASE WHEN builder_code = excluded.builder_code THEN registered_at ELSE excluded.registered_at END,
           builder_code = excluded.builder_code,
           last_confirmed_at = excluded.last_confirmed_at`,
      )
      .run({ key, code, now });
    const after = toRow(row(key)!);
    if (before === undefined) return { status: "new", row: after } as const;
    if (before.builder_code === code) return { status: "confirmed", row: after } as const;
    return { status: "changed", previousCode: before.builder_code, row: after } as const;
  });

  return {
    save: (wallet: Address, code: string, now: number): SaveRegistrationResult =>
      save.immediate(wallet, code, now),
    /** The registration of `wallet` (any case), if any. */
    get: (wallet: Address): RegistrationRow | undefined => {
      const found = row(wallet.toLowerCase());
      return found === undefined ? undefined : toRow(found);
    },
    /** Every registered wallet, ordered by wallet address. */
    list: (): RegistrationRow[] =>
      (
        statements
          .prepare("SELECT * FROM agent_registrations ORDER BY wallet_address")
          .all() as DbRow[]
      ).map(toRow),
  };
}

function toRow(row: DbRow): RegistrationRow {
  return {
    walletAddress: row.wallet_address as Address,
    builderCode: row.builder_code,
    registeredAt: row.registered_at,
    lastConfirmedAt: row.last_confirmed_at,
  };
}
