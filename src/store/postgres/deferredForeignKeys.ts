/**
 * Foreign keys a long backfill drops with the reader indexes and adds again at its end (Postgres).
 * Each one is checked per inserted row with a locking lookup of the parent row (`FOR KEY SHARE`,
 * which writes the parent's page again): up to a quarter of a window's statement in a profile.
 * A window's decoded rows name the ids its own logs were given in the same transaction, so the
 * bulk load cannot break them; adding a key back validates every stored row at once. SQLite checks
 * its keys with a plain index lookup and keeps them.
 */
export const DEFERRED_FOREIGN_KEYS: ReadonlyArray<{
  name: string;
  table: string;
  definition: string;
}> = [
  {
    name: "transfers_log_id_fkey",
    table: "transfers",
    definition: "FOREIGN KEY (log_id) REFERENCES logs (id)",
  },
  {
    name: "authorization_events_log_id_fkey",
    table: "authorization_events",
    definition: "FOREIGN KEY (log_id) REFERENCES logs (id)",
  },
  {
    name: "user_operations_tx_hash_fkey",
    table: "user_operations",
    definition: "FOREIGN KEY (tx_hash) REFERENCES transactions (tx_hash)",
  },
  {
    name: "attribution_codes_tx_hash_fkey",
    table: "attribution_codes",
    definition: "FOREIGN KEY (tx_hash) REFERENCES transactions (tx_hash)",
  },
];
