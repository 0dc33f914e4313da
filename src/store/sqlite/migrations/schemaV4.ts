/**
 * Schema version 4: the registry of every attribution code, so that a code of a custom registry
 * (ERC-8021 schema 1, or schema 2's `r`) is never counted together with the same text in the
 * chain's canonical registry; a malformed `r`; and the aggregator of `handleAggregatedOps` operations.
 *
 * `attribution_codes.registry`:
 * - `canonical`: the chain's canonical registry (schema 0, schema 2 services, schema 2 app/wallet without `r`);
 * - `custom`: `registry_chain_id` (decimal text) and `registry_address` (lowercase) name it;
 * - `malformed`: schema 2's `r` named a registry for this role that did not parse (see `registry_error`);
 * - `unrecorded`: stored before version 4, when the registry of schema 2 app/wallet codes and of user
 *   operations' schema 1 codes was not kept. Calldata is not stored, so it cannot be recovered here.
 *
 * Views over codes are dropped and recreated to carry and group by the registry.
 */
export const SCHEMA_V4 = /* sql */ `
ALTER TABLE attribution_codes ADD COLUMN registry TEXT NOT NULL DEFAULT 'canonical'
  CHECK (registry IN ('canonical', 'custom', 'malformed', 'unrecorded'));
ALTER TABLE attribution_codes ADD COLUMN registry_chain_id TEXT
  CHECK ((registry_chain_id IS NOT NULL) = (registry = 'custom'));
ALTER TABLE attribution_codes ADD COLUMN registry_address TEXT
  CHECK ((registry_address IS NOT NULL) = (registry = 'custom'));

-- Why schema 2's r (or an entry of it) did not parse; the codes are stored all the same.
ALTER TABLE transactions ADD COLUMN registry_error TEXT;
ALTER TABLE user_operations ADD COLUMN registry_error TEXT;
-- The aggregator of the group a handleAggregatedOps operation came in; NULL for handleOps.
ALTER TABLE user_operations ADD COLUMN aggregator TEXT;

-- Codes written before this version: schema 1 on the transaction's own calldata kept its registry
-- on transactions; the rest of what custom registries named was not kept.
UPDATE attribution_codes SET
  registry = 'custom',
  registry_chain_id = (SELECT tx.registry_chain_id FROM transactions tx WHERE tx.tx_hash = attribution_codes.tx_hash),
  registry_address = (SELECT tx.registry_address FROM transactions tx WHERE tx.tx_hash = attribution_codes.tx_hash)
WHERE op_index = -1 AND EXISTS (
  SELECT 1 FROM transactions tx WHERE tx.tx_hash = attribution_codes.tx_hash
    AND tx.schema_id = 1 AND tx.registry_address IS NOT NULL AND tx.registry_chain_id IS NOT NULL);
UPDATE attribution_codes SET registry = 'unrecorded'
WHERE registry = 'canonical' AND (
  role IN ('app', 'wallet')
  OR (op_index >= 0 AND EXISTS (
    SELECT 1 FROM user_operations op WHERE op.tx_hash = attribution_codes.tx_hash
      AND op.op_index = attribution_codes.op_index AND op.schema_id = 1)));

DROP VIEW builder_code_volume;
DROP VIEW wallet_codes;
DROP VIEW attributed_transfers;

-- Live payments with the codes of the transaction (or user operation) that made them, and each code's registry.
CREATE VIEW attributed_transfers AS
SELECT t.*, c.code, c.role, c.op_index, c.registry, c.registry_chain_id, c.registry_address
FROM live_transfers t
JOIN attribution_codes c ON c.tx_hash = t.tx_hash;

-- Payments and volume per (registry, code) and token (value is decimal text: summed as REAL).
CREATE VIEW builder_code_volume AS
SELECT code, registry, registry_chain_id, registry_address, token,
  COUNT(DISTINCT log_id) AS payments, SUM(CAST(value AS REAL)) AS volume
FROM attributed_transfers
GROUP BY registry, registry_chain_id, registry_address, code, token;

-- Codes seen for a wallet, per registry: as the sender of an attributed transaction or user
-- operation, or registered with the builder-code API (the canonical registry).
CREATE VIEW wallet_codes AS
SELECT tx.from_address AS wallet, c.code, c.role, c.registry, c.registry_chain_id, c.registry_address,
  COUNT(*) AS transactions
FROM transactions tx JOIN attribution_codes c ON c.tx_hash = tx.tx_hash AND c.op_index = -1
GROUP BY tx.from_address, c.registry, c.registry_chain_id, c.registry_address, c.code, c.role
UNION ALL
SELECT op.sender, c.code, c.role, c.registry, c.registry_chain_id, c.registry_address, COUNT(*)
FROM user_operations op JOIN attribution_codes c ON c.tx_hash = op.tx_hash AND c.op_index = op.op_index
GROUP BY op.sender, c.registry, c.registry_chain_id, c.registry_address, c.code, c.role
UNION ALL
SELECT wallet_address, builder_code, 'registered', 'canonical', NULL, NULL, 0 FROM agent_registrations;
`;
