/**
 * Schema version 2: ERC-8021 attribution of every transaction that emitted an indexed log, and the
 * agent wallets registered for builder codes. Calldata never changes for a transaction hash, so
 * attribution is keyed by hash alone and survives reorgs and re-inclusion.
 */
export const SCHEMA_V2 = /* sql */ `
CREATE TABLE transactions (
  tx_hash            TEXT    PRIMARY KEY,
  chain_id           INTEGER NOT NULL,
  from_address       TEXT    NOT NULL,
  to_address         TEXT,
  -- First 4 bytes of the calldata, NULL when shorter.
  selector           TEXT,
  input_bytes        INTEGER NOT NULL,
  -- none: no ERC-8021 marker; codes: a suffix that decoded; malformed / unknown_schema: marker present, no codes.
  attribution        TEXT    NOT NULL CHECK (attribution IN ('none', 'codes', 'malformed', 'unknown_schema')),
  schema_id          INTEGER,
  registry_address   TEXT,
  registry_chain_id  TEXT,
  malformed_reason   TEXT,
  -- Set when the transaction calls an ERC-4337 EntryPoint's handleOps.
  user_operations    INTEGER NOT NULL DEFAULT 0,
  fetched_at         INTEGER NOT NULL
) STRICT;

-- ERC-4337 user operations of handleOps bundles, each with its own attribution.
CREATE TABLE user_operations (
  tx_hash            TEXT    NOT NULL REFERENCES transactions (tx_hash),
  op_index           INTEGER NOT NULL,
  sender             TEXT    NOT NULL,
  attribution        TEXT    NOT NULL CHECK (attribution IN ('none', 'codes', 'malformed', 'unknown_schema')),
  schema_id          INTEGER,
  malformed_reason   TEXT,
  PRIMARY KEY (tx_hash, op_index)
) STRICT;

-- Codes in suffix order. op_index is -1 for the transaction's own calldata, else the user operation.
CREATE TABLE attribution_codes (
  tx_hash            TEXT    NOT NULL REFERENCES transactions (tx_hash),
  op_index           INTEGER NOT NULL,
  position           INTEGER NOT NULL,
  code               TEXT    NOT NULL,
  role               TEXT    NOT NULL CHECK (role IN ('code', 'app', 'wallet', 'service')),
  PRIMARY KEY (tx_hash, op_index, position)
) STRICT;
CREATE INDEX attribution_codes_by_code ON attribution_codes (code);

-- Agent wallets registered with the builder-code API (flashindex register, or registration.wallets).
CREATE TABLE agent_registrations (
  wallet_address     TEXT    PRIMARY KEY,
  builder_code       TEXT    NOT NULL,
  registered_at      INTEGER NOT NULL,
  last_confirmed_at  INTEGER NOT NULL
) STRICT;

-- Live payments with the codes of the transaction (or user operation) that made them.
CREATE VIEW attributed_transfers AS
SELECT t.*, c.code, c.role, c.op_index
FROM live_transfers t
JOIN attribution_codes c ON c.tx_hash = t.tx_hash;

-- Payments and volume per builder code and token (value is decimal text: summed as REAL).
CREATE VIEW builder_code_volume AS
SELECT code, token, COUNT(DISTINCT log_id) AS payments, SUM(CAST(value AS REAL)) AS volume
FROM attributed_transfers GROUP BY code, token;

-- Codes seen for a wallet: as the sender of an attributed transaction or user operation, or registered.
CREATE VIEW wallet_codes AS
SELECT tx.from_address AS wallet, c.code, c.role, COUNT(*) AS transactions
FROM transactions tx JOIN attribution_codes c ON c.tx_hash = tx.tx_hash AND c.op_index = -1
GROUP BY tx.from_address, c.code, c.role
UNION ALL
SELECT op.sender, c.code, c.role, COUNT(*)
FROM user_operations op JOIN attribution_codes c ON c.tx_hash = op.tx_hash AND c.op_index = op.op_index
GROUP BY op.sender, c.code, c.role
UNION ALL
SELECT wallet_address, builder_code, 'registered', 0 FROM agent_registrations;

-- Live payments whose transaction carries no attribution code (fetched and decoded, none found).
CREATE VIEW unattributed_transfers AS
SELECT t.* FROM live_transfers t
JOIN transactions tx ON tx.tx_hash = t.tx_hash
WHERE NOT EXISTS (SELECT 1 FROM attribution_codes c WHERE c.tx_hash = t.tx_hash);
`;
