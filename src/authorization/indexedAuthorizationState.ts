import { existsSync } from "node:fs";
import DatabaseConstructor from "better-sqlite3";
import type { Address, Hex } from "viem";

/** What the indexed event log says about one nonce: captured (AuthorizationUsed) or canceled (AuthorizationCanceled). */
export type IndexedAuthorizationState = {
  state: "captured" | "canceled";
  status: string;
  blockNumber: number;
  txHash: Hex;
};

export type IndexedStateLookup = (chainId: number, token: Address, authorizer: Address, nonce: Hex) => IndexedAuthorizationState | undefined;

/**
 * Looks a nonce up in the `authorization_states` view of an existing database, opened read-only for
 * the one query (never created, never migrated: the daemon owns the file). Undefined when the file,
 * the view or the row is absent, or the file cannot be read: the lookup only refines a message.
 */
export function createIndexedStateLookup(databasePath: string): IndexedStateLookup {
  return (chainId, token, authorizer, nonce) => {
    if (databasePath === ":memory:" || !existsSync(databasePath)) return undefined;
    let db: InstanceType<typeof DatabaseConstructor> | undefined;
    try {
      db = new DatabaseConstructor(databasePath, { readonly: true, fileMustExist: true });
      const view = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'view' AND name = 'authorization_states'").get();
      if (view === undefined) return undefined;
      // Addresses and nonces are stored as the log gave them (lower case); compare case-blind anyway.
      const row = db
        .prepare(
          `SELECT state, status, block_number AS blockNumber, tx_hash AS txHash FROM authorization_states
           WHERE chain_id = ? AND lower(token) = lower(?) AND lower(authorizer) = lower(?) AND lower(nonce) = lower(?)`,
        )
        .get(chainId, token, authorizer, nonce) as IndexedAuthorizationState | undefined;
      return row;
    } catch {
      return undefined;
    } finally {
      db?.close();
    }
  };
}
