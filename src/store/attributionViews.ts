/**
 * The views that credit payments to codes, as of schema 13 (schemaV13.ts of both backends create
 * them from here). A payment of a transaction that is no bundle is credited to the transaction's
 * own codes (op_index -1). A payment of a bundle (`user_operations > 0`) is credited only once the
 * bundle's logs are mapped to its operations: to the codes of the operation it came from, or to
 * the bundler's own codes when it came from no operation (validation, compensation).
 */
export function attributionViews(create: "CREATE VIEW" | "CREATE OR REPLACE VIEW"): string {
  return `-- Live payments with the codes they are credited to, and each code's registry.
${create} attributed_transfers AS
SELECT t.*, c.code, c.role, c.op_index, c.registry, c.registry_chain_id, c.registry_address
FROM live_transfers t
JOIN transactions tx ON tx.tx_hash = t.tx_hash
JOIN logs l ON l.id = t.log_id
LEFT JOIN user_operation_logs ol
  ON ol.tx_hash = t.tx_hash AND ol.token = t.token AND ol.tx_log_position = l.tx_log_position
JOIN attribution_codes c ON c.tx_hash = t.tx_hash AND c.op_index = COALESCE(ol.op_index, -1)
WHERE tx.user_operations = 0 OR tx.operation_logs = 'mapped';

-- Live payments of stored transactions credited to no code (bundles not mapped aside).
${create} unattributed_transfers AS
SELECT t.* FROM live_transfers t
JOIN transactions tx ON tx.tx_hash = t.tx_hash
WHERE (tx.user_operations = 0 OR tx.operation_logs = 'mapped')
  AND NOT EXISTS (SELECT 1 FROM attributed_transfers a WHERE a.log_id = t.log_id);

-- Live payments of bundles whose logs could not be mapped to their user operations, and why.
CREATE VIEW unmapped_bundle_transfers AS
SELECT t.*, COALESCE(tx.operation_logs_error, 'the bundle''s receipt was not read') AS reason
FROM live_transfers t
JOIN transactions tx ON tx.tx_hash = t.tx_hash
WHERE tx.user_operations > 0 AND (tx.operation_logs IS NULL OR tx.operation_logs <> 'mapped');`;
}
