import { OWED_ATTRIBUTION_TRANSFERS_VIEW } from "../../owedAttributionView.js";

/**
 * Postgres schema 14, as SQLite's (src/store/sqlite/migrations/schemaV14.ts): the blocks whose
 * attribution a rate-limited backfill left owed, and the view of their payments not attributed yet.
 */
export const POSTGRES_SCHEMA_V14 = /* sql */ `
CREATE TABLE attribution_owed (
  block_number bigint NOT NULL,
  block_hash   text   NOT NULL,
  owed_at      bigint NOT NULL,
  PRIMARY KEY (block_number, block_hash)
);

${OWED_ATTRIBUTION_TRANSFERS_VIEW}
`;
