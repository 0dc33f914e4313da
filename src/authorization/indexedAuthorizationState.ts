import type { Address, Hex } from "viem";
import type { IndexedAuthorization, Store } from "../store/store.js";

export type IndexedStateLookup = (
  token: Address,
  authorizer: Address,
  nonce: Hex,
) => Promise<IndexedAuthorization | undefined>;

/**
 * Looks a nonce up in the indexed `authorization_states`, through a store opened read-only for the
 * one query (never created, never migrated: the daemon owns the database). Undefined when the
 * database is absent, too old, or cannot be read: the lookup only refines a message.
 */
export function createIndexedStateLookup(openReadOnly: () => Promise<Store>): IndexedStateLookup {
  return async (token, authorizer, nonce) => {
    let store: Store | undefined;
    try {
      store = await openReadOnly();
      return await store.authorizationState(token, authorizer, nonce);
    } catch {
      return undefined;
    } finally {
      await store?.close();
    }
  };
}
