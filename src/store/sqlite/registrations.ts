import type { Address } from "viem";
import type { Database } from "./openDatabase.js";
import type { RegistrationRow, SaveRegistrationResult } from "../types.js";

type DbRow = {
  wallet_address: string;
  builder_code: string;
  registered_at: number;
  last_confirmed_at: number;
};

/**
 * Records `wallet` → `code` at `now` (unix ms), idempotently. The same code again keeps
 * `registered_at` and moves `last_confirmed_at`; a different code replaces the old one and restarts
 * `registered_at` (the row says since when the current code holds).
 */
function saveRegistration(
  db: Database,
  wallet: Address,
  code: string,
  now: number,
): SaveRegistrationResult {
  const key = wallet.toLowerCase();
  return db
    .transaction((): SaveRegistrationResult => {
      const before = db
        .prepare("SELECT * FROM agent_registrations WHERE wallet_address = ?")
        .get(key) as DbRow | undefined;
      db.prepare(
        `INSERT INTO agent_registrations (wallet_address, builder_code, registered_at, last_confirmed_at)
         VALUES (@key, @code, @now, @now)
         ON CONFLICT (wallet_address) DO UPDATE SET
           registered_at = CASE WHEN builder_code = excluded.builder_code THEN registered_at ELSE excluded.registered_at END,
           builder_code = excluded.builder_code,
           last_confirmed_at = excluded.last_confirmed_at`,
      ).run({ key, code, now });
      const row = toRow(
        db.prepare("SELECT * FROM agent_registrations WHERE wallet_address = ?").get(key) as DbRow,
      );
      if (before === undefined) return { status: "new", row };
      if (before.builder_code === code) return { status: "confirmed", row };
      return { status: "changed", previousCode: before.builder_code, row };
    })
    .immediate();
}

/** The registration of `wallet` (any case), if any. */
function getRegistration(db: Database, wallet: Address): RegistrationRow | undefined {
  const row = db
    .prepare("SELECT * FROM agent_registrations WHERE wallet_address = ?")
    .get(wallet.toLowerCase()) as DbRow | undefined;
  return row === undefined ? undefined : toRow(row);
}

/** Every registered wallet, ordered by wallet address. */
function listRegistrations(db: Database): RegistrationRow[] {
  return (
    db.prepare("SELECT * FROM agent_registrations ORDER BY wallet_address").all() as DbRow[]
  ).map(toRow);
}

/** Builder-code registrations over a SQLite connection (as Postgres's postgres/registrations.ts). */
export function createSqliteRegistrations(db: Database) {
  return {
    save: (wallet: Address, code: string, now: number): SaveRegistrationResult =>
      saveRegistration(db, wallet, code, now),
    get: (wallet: Address): RegistrationRow | undefined => getRegistration(db, wallet),
    list: (): RegistrationRow[] => listRegistrations(db),
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
