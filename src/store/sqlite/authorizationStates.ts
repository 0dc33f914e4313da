import type { Database } from "better-sqlite3";
import type { Address, Hex } from "viem";
import { AUTHORIZATION_STATE_COLUMNS } from "../authorizationStateColumns.js";
import type { IndexedAuthorization } from "../store.js";

/**
 * Looks one nonce up in `authorization_states`. Addresses and nonces are stored lower-case: the
 * arguments are lower-cased here, so the view's key (and its index) serves the lookup.
 */
export function createSqliteAuthorizationStates(db: Database, chainId: number) {
  const select = db.prepare(
    `SELECT ${AUTHORIZATION_STATE_COLUMNS} FROM authorization_states WHERE chain_id = ? AND token = ? AND authorizer = ? AND nonce = ?`,
  );
  return (token: Address, authorizer: Address, nonce: Hex): IndexedAuthorization | undefined =>
    select.get(chainId, token.toLowerCase(), authorizer.toLowerCase(), nonce.toLowerCase()) as
      IndexedAuthorization | undefined;
}
