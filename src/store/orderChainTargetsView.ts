import { LIVE_STATUS_LIST_SQL, statusRankSql } from "./liveStatus.js";

/**
 * The view of schema 3 with one change: an order whose event is gone goes back to `capturing` while
 * the relay's intent is live (else to the merchant's own state, as before). Both backends'
 * schema 12 create it from here.
 */
export function orderChainTargetsView(create: "CREATE VIEW" | "CREATE OR REPLACE VIEW"): string {
  return `${create} order_chain_targets AS
SELECT o.id AS order_id, o.chain_id, o.token, o.authorizer, o.nonce, o.state AS current_state,
  o.event_status AS current_status, o.offchain_state,
  e.kind AS event_kind, e.status AS event_status, e.tx_hash AS event_tx_hash,
  CASE
    WHEN e.kind = 'used' THEN 'captured'
    WHEN e.kind = 'canceled' THEN 'canceled'
    WHEN o.state IN ('captured', 'canceled') AND EXISTS (SELECT 1 FROM order_captures c WHERE c.order_id = o.id AND c.status = 'sent') THEN 'capturing'
    WHEN o.state IN ('captured', 'canceled') THEN o.offchain_state
    ELSE o.state
  END AS target_state
FROM orders o
LEFT JOIN authorization_events e ON e.log_id = (
  SELECT x.log_id FROM authorization_events x
  WHERE x.token = o.token AND x.authorizer = o.authorizer AND x.nonce = o.nonce AND x.chain_id = o.chain_id
    AND x.status IN ${LIVE_STATUS_LIST_SQL}
  ORDER BY ${statusRankSql("x.status")}, x.block_number, x.log_index
  LIMIT 1
);`;
}
