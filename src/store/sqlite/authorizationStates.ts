import type { Database } from "better-sqlite3";
import type { Address, Hex } from "viem";
import type { IndexedAuthorization } from "../store.js";

/** The columns of view `authorization_states` a reader gets, named as the store returns them. */
export const AUTHORIZATION_STATE_COLUMNS = `state, status, block_number AS "blockNumber", tx_hash AS "txHash",
  captured_from AS "capturedFrom", captured_to AS "capturedTo", captured_value AS "capturedValue"`;

/**
 * Looks one nonce up in `authorization_states`. Addresses and nonces are stored lower-case: the
 * arguments are lower-cased here, so the view's key (and its index) serves the lookup.
 */
export function createAuthorizationStates(db: Database, chainId: number) {
  const select = db.prepare(
    `SELECT ${AUTHORIZATION_STATE_COLUMNS} FROM authorization_states WHERE chain_id = ? AND token = ? AND authorizer = ? AND nonce = ?`,
  );
  return (token: Address, authorizer: Address, nonce: Hex): IndexedAuthorization | undefined =>
    select.get(chainId, token.toLowerCase(), authorizer.toLowerCase(), nonce.toLowerCase()) as IndexedAuthorization | undefined;
}
