import type { Database } from "better-sqlite3";

/**
 * Schema version 17: what each capture cost. `order_captures.gas_used` and
 * `effective_gas_price` (wei per gas, decimal text as the fee columns) come from the receipt that
 * showed the payment, with `gas_tx_hash` the transaction it belongs to (the intent's, or one it
 * replaced). NULL until a receipt is judged paid, and for captures before this version.
 */
export function migrateToV17(db: Database): void {
  db.exec(SCHEMA_V17);
}

export const SCHEMA_V17 = /* sql */ `
ALTER TABLE order_captures ADD COLUMN gas_used TEXT;
ALTER TABLE order_captures ADD COLUMN effective_gas_price TEXT;
ALTER TABLE order_captures ADD COLUMN gas_tx_hash TEXT;
`;
