import { attributionViews } from "../../attributionViews.js";

/**
 * Schema version 13: a user operation's codes credit the payments of that operation, not the whole
 * bundle (ERC-8021 attributes a user operation's effects to the codes in its callData).
 *
 * - `user_operation_logs`: which user operation of a bundle each indexed log belongs to, read from
 *   the bundle's receipt (the EntryPoint's `BeforeExecution` and `UserOperationEvent` boundaries,
 *   decode/userOperationLogs.ts). Keyed by token and `tx_log_position`, as `logs` is, because a
 *   pre-confirmed log's logIndex changes when its block seals. Logs of no operation have no row.
 * - `transactions.operation_logs`: for a bundle, `mapped` (its rows above are complete), `unmapped`
 *   (the receipt disagreed with the calldata: `operation_logs_error` says how) or NULL (not read).
 *   Only a mapped bundle's payments are credited; the others are listed by `unmapped_bundle_transfers`.
 *
 * Rows stored before this version: a transaction that is no bundle is credited as before; a
 * bundle's receipt was never read and calldata is not stored, so its payments cannot be split
 * between its operations and its bundler here: it is marked unmapped with the reason.
 *
 * - `staged_bundles`, `staged_user_operation_logs`: a bulk backfill's twins of the two above (no
 *   keys, as schema 10's staging tables): a staged bundle's transaction is not in `transactions`
 *   until the move (store/sqlite/stagedAttribution.ts), which sets its state and writes its logs.
 */
export const SCHEMA_V13 = /* sql */ `
CREATE TABLE user_operation_logs (
  tx_hash          TEXT    NOT NULL REFERENCES transactions (tx_hash),
  token            TEXT    NOT NULL,
  tx_log_position  INTEGER NOT NULL,
  op_index         INTEGER NOT NULL,
  PRIMARY KEY (tx_hash, token, tx_log_position)
) STRICT;

CREATE TABLE staged_bundles (
  tx_hash TEXT NOT NULL, operation_logs TEXT NOT NULL, operation_logs_error TEXT
) STRICT;
-- staged_bundle: the rowid of the staged_bundles row the log was staged with.
CREATE TABLE staged_user_operation_logs (
  tx_hash TEXT NOT NULL, token TEXT NOT NULL, tx_log_position INTEGER NOT NULL, op_index INTEGER NOT NULL, staged_bundle INTEGER NOT NULL
) STRICT;

ALTER TABLE transactions ADD COLUMN operation_logs TEXT CHECK (operation_logs = 'mapped' OR operation_logs = 'unmapped');
ALTER TABLE transactions ADD COLUMN operation_logs_error TEXT;

UPDATE transactions SET operation_logs = 'unmapped',
  operation_logs_error = 'stored before schema 13: the bundle''s receipt was not read'
WHERE user_operations > 0;

DROP VIEW builder_code_volume;
DROP VIEW attributed_transfers;
DROP VIEW unattributed_transfers;

${attributionViews("CREATE VIEW")}

-- As in schema 4 (value is decimal text: summed as REAL).
CREATE VIEW builder_code_volume AS
SELECT code, registry, registry_chain_id, registry_address, token,
  COUNT(DISTINCT log_id) AS payments, SUM(CAST(value AS REAL)) AS volume
FROM attributed_transfers
GROUP BY registry, registry_chain_id, registry_address, code, token;
`;
