import type pg from "pg";
import type { Address, Hex } from "viem";
import { AUTHORIZATION_STATE_COLUMNS } from "../authorizationStateColumns.js";
import type { IndexedAuthorization } from "../store.js";

/**
 * Looks one nonce up in `authorization_states` (as SQLite's sqlite/authorizationStates.ts).
 * Addresses and nonces are stored lower-case: the arguments are lower-cased here, so the view's key
 * (and its index) serves the lookup.
 */
export function createPostgresAuthorizationStates(client: pg.ClientBase, chainId: number) {
  return async (
    token: Address,
    authorizer: Address,
    nonce: Hex,
  ): Promise<IndexedAuthorization | undefined> => {
    const { rows } = await client.query(
      `SELECT ${AUTHORIZATION_STATE_COLUMNS} FROM authorization_states WHERE chain_id = $1 AND token = $2 AND authorizer = $3 AND nonce = $4`,
      [chainId, token.toLowerCase(), authorizer.toLowerCase(), nonce.toLowerCase()],
    );
    return rows[0];
  };
}
