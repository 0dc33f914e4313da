/**
 * Schema version 19: `order_captures.first_broadcast_at`, when the node was first handed the
 * intent's current bytes (unix ms; reset with them when a replacement is signed).
 *
 * The driver re-sends a capture the node does not show every pass (1 s), and each re-send moved
 * `last_broadcast_at`: a capture stuck in the pool never looked older than a second, so it was
 * never replaced with higher fees and the nonce gaps behind it were never filled. How long a
 * transaction has waited is counted from this column; existing rows start from their last send.
 */
export const SCHEMA_V19 = /* sql */ `
ALTER TABLE order_captures ADD COLUMN first_broadcast_at INTEGER;
UPDATE order_captures SET first_broadcast_at = last_broadcast_at;
`;
