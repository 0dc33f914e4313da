import { onchainTable } from "ponder";

/** One row per Transfer log: what flashindex's `transfers` holds. */
export const transfers = onchainTable("transfers", (t) => ({
  id: t.text().primaryKey(),
  blockNumber: t.bigint().notNull(),
  logIndex: t.integer().notNull(),
  transactionHash: t.hex().notNull(),
  from: t.hex().notNull(),
  to: t.hex().notNull(),
  value: t.bigint().notNull(),
}));
