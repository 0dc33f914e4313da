import { OWED_ATTRIBUTION_TRANSFERS_VIEW } from "../../owedAttributionView.js";

/**
 * Schema version 14: attribution that trails the logs. Against a rate-limited provider a backfill
 * window stores its logs without reading calldata (one call per block, hundreds of times the calls
 * of the logs on Base) and records here, in the window's own transaction, each block (number and
 * hash) whose transactions still owe their attribution. The trailing stage
 * (attribution/trailingAttribution.ts) reads the owed blocks in order, stores their attribution and
 * deletes their rows in one transaction. A block reorged meanwhile (its logs flagged) is deleted
 * without being attributed. `owed_at`: unix ms of the window's commit.
 *
 * `owed_attribution_transfers`: the live payments of owed blocks whose transaction is not stored yet.
 */
export const SCHEMA_V14 = /* sql */ `
CREATE TABLE attribution_owed (
  block_number INTEGER NOT NULL,
  block_hash   TEXT    NOT NULL,
  owed_at      INTEGER NOT NULL,
  PRIMARY KEY (block_number, block_hash)
) STRICT;

${OWED_ATTRIBUTION_TRANSFERS_VIEW}
`;
