/**
 * The view over schema 14's `attribution_owed` (both backends' schemaV14.ts create it from here):
 * the live payments of a block whose attribution is owed, while their transaction is not stored.
 * They are in neither `attributed_transfers` nor `unattributed_transfers` (both join
 * `transactions`) until the trailing stage (attribution/trailingAttribution.ts) pays the block.
 */
export const OWED_ATTRIBUTION_TRANSFERS_VIEW = `CREATE VIEW owed_attribution_transfers AS
SELECT t.* FROM live_transfers t
JOIN attribution_owed o ON o.block_number = t.block_number AND o.block_hash = t.block_hash
WHERE NOT EXISTS (SELECT 1 FROM transactions tx WHERE tx.tx_hash = t.tx_hash);`;
