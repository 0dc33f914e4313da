import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Reported by the build-info gauge; bump with package.json. */
export const FLASHINDEX_VERSION = "0.1.0";

/**
 * Every metric flashindex exports, on its own registry (never the global one).
 * Names follow `flashindex_<area>_<thing>_<unit>`; labels are low-cardinality only.
 */
export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics ?? true)
    collectDefaultMetrics({ register: registry, prefix: "flashindex_" });
  const registers = [registry];
  /** What flashindex_db_size_bytes reads at scrape time (the store, once it is open). */
  let databaseSize: (() => Promise<number>) | undefined;
  /** What flashindex_settle_contradicted_settlements reads at scrape time (the store, once it is open). */
  let contradictedSettlements: (() => Promise<number>) | undefined;
  const buildInfo = new Gauge({
    name: "flashindex_build_info",
    help: "Always 1; labels say which flashindex and Node.js are running.",
    labelNames: ["version", "node_version"] as const,
    registers,
  });
  buildInfo.set({ version: FLASHINDEX_VERSION, node_version: process.version }, 1);
  return {
    registry,
    databaseSize: new Gauge({
      name: "flashindex_db_size_bytes",
      help: "Bytes on disk, read at scrape time: the SQLite file plus its WAL, or the Postgres schema's tables with their indexes.",
      registers,
      async collect() {
        if (databaseSize === undefined) return;
        try {
          this.set(await databaseSize());
        } catch {
          // A database that cannot answer now keeps the last value; the scrape itself must not fail.
        }
      },
    }),
    /** Makes flashindex_db_size_bytes read `size` at each scrape. */
    measureDatabaseSize(size: () => Promise<number>): void {
      databaseSize = size;
    },
    lagBlocks: new Gauge({
      name: "flashindex_sync_lag_blocks",
      help: "Chain head minus the highest block indexed by the head follower (or the backfill before it).",
      registers,
    }),
    lagSeconds: new Gauge({
      name: "flashindex_sync_lag_seconds",
      help: "Now minus the timestamp of the newest indexed block.",
      registers,
    }),
    rpcRequests: new Counter({
      name: "flashindex_rpc_requests_total",
      help: "JSON-RPC requests by method and outcome (ok, retryable, rate_limited, fatal, range_error).",
      labelNames: ["method", "outcome"] as const,
      registers,
    }),
    rpcRateLimitCuts: new Counter({
      name: "flashindex_rpc_rate_limit_cuts_total",
      help: "Times the client cut its request rate after refusals a provider's strays would not explain.",
      registers,
    }),
    rpcDuration: new Histogram({
      name: "flashindex_rpc_request_duration_seconds",
      help: "JSON-RPC request duration by method.",
      labelNames: ["method"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    rpcRejectedLogs: new Counter({
      name: "flashindex_rpc_rejected_logs_total",
      help: "Logs in an RPC answer that were refused (outside the filter, malformed) and never stored.",
      labelNames: ["reason"] as const,
      registers,
    }),
    rpcDamagedAnswers: new Counter({
      name: "flashindex_rpc_damaged_answers_total",
      help: "eth_getLogs answers for canonical blocks refused whole because a log failed validation (fetched again), by scope (window, block).",
      labelNames: ["scope"] as const,
      registers,
    }),
    syncHalts: new Counter({
      name: "flashindex_sync_halts_total",
      help: "Times the daemon stopped syncing because a range could not be fetched intact or another failure it cannot work around, by reason.",
      labelNames: ["reason"] as const,
      registers,
    }),
    logsIndexed: new Counter({
      name: "flashindex_logs_indexed_total",
      help: "Logs newly stored, by event and status at insert.",
      labelNames: ["event", "status"] as const,
      registers,
    }),
    backfillWindowBlocks: new Gauge({
      name: "flashindex_backfill_window_blocks",
      help: "Current eth_getLogs window size in blocks (shrinks on provider range errors).",
      registers,
    }),
    backfillCheckpointBlock: new Gauge({
      name: "flashindex_backfill_checkpoint_block",
      help: "Highest block below which every configured token is indexed without gaps.",
      registers,
    }),
    backfillTargetBlock: new Gauge({
      name: "flashindex_backfill_target_block",
      help: "Block the running backfill is heading for (the configured finality).",
      registers,
    }),
    chainHeadBlock: new Gauge({
      name: "flashindex_chain_head_block",
      help: "Latest block number seen from the RPC.",
      registers,
    }),
    indexedBlock: new Gauge({
      name: "flashindex_sync_indexed_block",
      help: "Highest block indexed, by source (backfill, head, pending).",
      labelNames: ["source"] as const,
      registers,
    }),
    reorgs: new Counter({
      name: "flashindex_reorg_detected_total",
      help: "Chain reorganisations detected (parent-hash mismatch).",
      registers,
    }),
    reorgDepth: new Histogram({
      name: "flashindex_reorg_depth_blocks",
      help: "Depth of detected reorgs in blocks.",
      buckets: [1, 2, 3, 5, 10, 20, 50, 100, 200],
      registers,
    }),
    removedLogs: new Counter({
      name: "flashindex_reorg_removed_logs_total",
      help: "Logs flagged removed because their block was reorged out (parent hash or removed flag).",
      labelNames: ["via"] as const,
      registers,
    }),
    droppedPreconfirmed: new Counter({
      name: "flashindex_preconf_dropped_logs_total",
      help: "Pre-confirmed logs whose block became canonical without them while the pending view no longer held them.",
      registers,
    }),
    movedPreconfirmed: new Counter({
      name: "flashindex_preconf_moved_logs_total",
      help: "Pre-confirmed logs announced again for a later block (the pending block was rebuilt), by the status they left (preconfirmed, or dropped: not dropped after all).",
      labelNames: ["from"] as const,
      registers,
    }),
    preconfirmedLogs: new Counter({
      name: "flashindex_preconf_logs_total",
      help: "Pre-confirmed logs newly stored, by source (pending poll, pendingLogs subscription).",
      labelNames: ["source"] as const,
      registers,
    }),
    preconfirmationsMissed: new Counter({
      name: "flashindex_preconf_missed_total",
      help: "Logs first seen in a new canonical block (not a reorg's branch) while pre-confirmations were followed: the subscription lost them, the pending view never showed them, or it was not trusted.",
      registers,
    }),
    preconfirmationsRefused: new Counter({
      name: "flashindex_preconf_refused_logs_total",
      help: "Pre-confirmed logs received but not stored, by reason: untrusted_view (the pending view lags or is gone; counted per delivery, and a polled view sends its logs again every poll) or wrong_parent (held against a parent that never became the canonical block, counted once when its block is canonical).",
      labelNames: ["reason"] as const,
      registers,
    }),
    preconfirmedViewLag: new Gauge({
      name: "flashindex_preconf_view_lag_blocks",
      help: "How far the node's pending view is behind the head: head + 1 minus the pending block's number (0 when current; while the view is null, counted from the last pending block seen).",
      registers,
    }),
    preconfirmedViewTrusted: new Gauge({
      name: "flashindex_preconf_view_trusted",
      help: "1 while pre-confirmed data is stored, 0 while the pending view has lagged or been null for too long (canonical blocks are indexed either way).",
      registers,
    }),
    preconfirmationLatency: new Histogram({
      name: "flashindex_preconf_ingest_latency_seconds",
      help: "From receiving a pre-confirmed log (notification or poll answer) to its committed row.",
      labelNames: ["source"] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    }),
    preconfirmationLeadTime: new Histogram({
      name: "flashindex_preconf_lead_time_seconds",
      help: "How long before its canonical block a log was seen pre-confirmed.",
      buckets: [0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30],
      registers,
    }),
    wsReconnects: new Counter({
      name: "flashindex_ws_reconnects_total",
      help: "WebSocket reconnects, by subscription.",
      labelNames: ["subscription"] as const,
      registers,
    }),
    wsMessagesRejected: new Counter({
      name: "flashindex_ws_messages_rejected_total",
      help: "WebSocket messages that were not valid JSON-RPC or carried malformed logs.",
      labelNames: ["subscription"] as const,
      registers,
    }),
    attributions: new Counter({
      name: "flashindex_attribution_transactions_total",
      help: "Transactions whose calldata was decoded for ERC-8021, by result (none, codes, malformed, unknown_schema) and schema id.",
      labelNames: ["result", "schema"] as const,
      registers,
    }),
    attributionOwedBlocks: new Gauge({
      name: "flashindex_attribution_owed_blocks",
      help: "Blocks whose logs are stored but whose transactions' attribution trails (a rate-limited backfill's), not yet read.",
      registers,
    }),
    dbWriteDuration: new Histogram({
      name: "flashindex_db_write_duration_seconds",
      help: "Duration of one SQLite write transaction, by kind.",
      labelNames: ["kind"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    }),
    ordersVoidedThenCaptured: new Counter({
      name: "flashindex_orders_voided_then_captured_total",
      help: "Orders voided off chain that were captured on chain anyway (the signature was submitted).",
      registers,
    }),
    ordersExpired: new Counter({
      name: "flashindex_orders_expired_total",
      help: "Orders moved to expired: validBefore passed with no live event.",
      registers,
    }),
    captureBroadcasts: new Counter({
      name: "flashindex_capture_broadcasts_total",
      help: "Capture transactions handed to the node by the capture relay: first (new intent), resend (the same bytes: after a crash, a drop or a reorg), replacement (same nonce, higher fee); by the JSON-RPC method that carried them (eth_sendRawTransactionSync where the node serves it).",
      labelNames: ["kind", "method"] as const,
      registers,
    }),
    settleRequests: new Counter({
      name: "flashindex_settle_requests_total",
      help: "x402 facilitator answers by endpoint (verify, settle) and outcome: valid / success, or the refusal's invalidReason / errorReason.",
      labelNames: ["endpoint", "outcome"] as const,
      registers,
    }),
    settleLatency: new Histogram({
      name: "flashindex_settle_latency_seconds",
      help: "x402 POST /settle from the request to the answer, by outcome (success, pending: sent but not seen within the wait, refused).",
      labelNames: ["outcome"] as const,
      buckets: [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2, 5, 10, 30],
      registers,
    }),
    settleContradicted: new Gauge({
      name: "flashindex_settle_contradicted_settlements",
      help: "x402 settlements answered as successful that the chain contradicted later (the capture dropped, reverted in its block, or the nonce canceled), read from the database at scrape time.",
      registers,
      async collect() {
        if (contradictedSettlements === undefined) return;
        try {
          this.set(await contradictedSettlements());
        } catch {
          // A database that cannot answer now keeps the last value; the scrape itself must not fail.
        }
      },
    }),
    /** Makes flashindex_settle_contradicted_settlements read `count` at each scrape. */
    measureContradictedSettlements(count: () => Promise<number>): void {
      contradictedSettlements = count;
    },
    // `relayer`: an address of the configured pool (facilitator.relayers), a handful at most.
    relayerBalance: new Gauge({
      name: "flashindex_relayer_balance_wei",
      help: "Each capture relayer's ETH balance (wei), read by the capture driver.",
      labelNames: ["relayer"] as const,
      registers,
    }),
    relayerNonceGap: new Gauge({
      name: "flashindex_relayer_pending_nonce_gap",
      help: "Live capture intents whose relayer nonce is at or above the relayer's pending transaction count: sent but not yet pre-confirmed.",
      labelNames: ["relayer"] as const,
      registers,
    }),
    captureGasUsed: new Histogram({
      name: "flashindex_capture_gas_used",
      help: "Gas used by each capture (order capture or x402 settle), from the receipt that showed the payment.",
      // A transferWithAuthorization uses ~60-90k gas; a smart wallet's signature check more.
      buckets: [40_000, 60_000, 80_000, 100_000, 150_000, 200_000, 400_000],
      registers,
    }),
    captureGasCost: new Counter({
      name: "flashindex_capture_gas_cost_wei_total",
      help: "Wei paid for the gas of captures (gas used × effective gas price), by payee: a payee of facilitator.payTo, or other.",
      labelNames: ["payee"] as const,
      registers,
    }),
    relayerPendingCaptures: new Gauge({
      name: "flashindex_relayer_pending_captures",
      help: "Captures this process sent (or is sending) from each relayer and has not yet seen pre-confirmed: the pool's measure of its load.",
      labelNames: ["relayer"] as const,
      registers,
    }),
    relayerStuck: new Gauge({
      name: "flashindex_relayer_stuck",
      help: "1 while a relayer's oldest capture has waited facilitator.relayerStuckAfterMs for a pre-confirmation: it takes no new settle.",
      labelNames: ["relayer"] as const,
      registers,
    }),
    webhookEventsEnqueued: new Counter({
      name: "flashindex_webhook_events_enqueued_total",
      help: "Events written to the webhook outbox (by the database triggers), by type; counted when the sender reads them.",
      labelNames: ["type"] as const,
      registers,
    }),
    webhookDeliveries: new Counter({
      name: "flashindex_webhook_deliveries_total",
      help: "Webhook delivery attempts by outcome: delivered (2xx), failed (will retry), parked (last attempt failed: dead letter).",
      labelNames: ["outcome"] as const,
      registers,
    }),
    webhookBacklog: new Gauge({
      name: "flashindex_webhook_backlog_deliveries",
      help: "Webhook deliveries waiting (pending) or given up on (parked), refreshed by the sender every second.",
      labelNames: ["state"] as const,
      registers,
    }),
    webhookDeliveryLatency: new Histogram({
      name: "flashindex_webhook_delivery_latency_seconds",
      help: "From the outbox row's commit to the receiver's 2xx, retries included.",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300, 3600],
      registers,
    }),
    registrationRequests: new Counter({
      name: "flashindex_registration_requests_total",
      help: "Builder-code registration requests by outcome (ok, retryable, rejected).",
      labelNames: ["outcome"] as const,
      registers,
    }),
  };
}
