import type pg from "pg";
import type { Address } from "viem";
import type { RegistrationRow, SaveRegistrationResult } from "../types.js";

/** One agent_registrations row by wallet (lower case), as RegistrationRow. */
const REGISTRATION_SELECT = `SELECT wallet_address AS "walletAddress", builder_code AS "builderCode", registered_at AS "registeredAt",
  last_confirmed_at AS "lastConfirmedAt" FROM agent_registrations WHERE wallet_address = $1`;

/** Builder-code registrations over a Postgres connection (as SQLite's sqlite/registrations.ts). */
export function createPostgresRegistrations(client: pg.ClientBase) {
  return {
    /**
     * Records `wallet` → `code` at `now` (unix ms), idempotently; call inside a write transaction.
     * The same code again keeps `registered_at` and moves `last_confirmed_at`; a different code
     * replaces the old one and restarts `registered_at`.
     */
    async save(wallet: Address, code: string, now: number): Promise<SaveRegistrationResult> {
      const key = wallet.toLowerCase();
      const before = (await client.query(`${REGISTRATION_SELECT} FOR UPDATE`, [key])).rows[0] as
        RegistrationRow | undefined;
      await client.query(
        `INSERT INTO agent_registrations (wallet_address, builder_code, registered_at, last_confirmed_at) VALUES ($1, $2, $3, $3)
         ON CONFLICT (wallet_address) DO UPDATE SET
           registered_at = CASE WHEN agent_registrations.builder_code = excluded.builder_code THEN agent_registrations.registered_at ELSE excluded.registered_at END,
           builder_code = excluded.builder_code, last_confirmed_at = excluded.last_confirmed_at`,
        [key, code, now],
      );
      const row = (await client.query(REGISTRATION_SELECT, [key])).rows[0] as RegistrationRow;
      if (before === undefined) return { status: "new", row };
      if (before.builderCode === code) return { status: "confirmed", row };
      return { status: "changed", previousCode: before.builderCode, row };
    },
    /** The registration of `wallet` (any case), if any. */
    async get(wallet: Address): Promise<RegistrationRow | undefined> {
      return (await client.query(REGISTRATION_SELECT, [wallet.toLowerCase()])).rows[0] as
        RegistrationRow | undefined;
    },
  };
}
