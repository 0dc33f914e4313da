/**
 * Schema version 18: indexes for the two reads of capture gas (schema 17).
 *
 * - `order_captures_gas`: the status page's latest captures with recorded gas (captureStore.ts
 *   recentGas), newest order first, read from the index alone. Without it SQLite walked the whole
 *   table backwards past every capture without gas (EXPLAIN QUERY PLAN: `SCAN c`); with it,
 *   `SCAN c USING COVERING INDEX order_captures_gas` stops after the page's window.
 * - `order_captures_without_gas`: the driver's look for captured orders whose gas no process
 *   recorded (a restart lost the wait that would have; captureStore.ts capturedWithoutGas), by
 *   when the capture last changed.
 */
export const SCHEMA_V18 = /* sql */ `
CREATE INDEX order_captures_gas ON order_captures (order_id, gas_used, effective_gas_price)
  WHERE gas_used IS NOT NULL;
CREATE INDEX order_captures_without_gas ON order_captures (updated_at) WHERE gas_used IS NULL;
`;
