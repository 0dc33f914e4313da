import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * Every metric flashindex exports, on its own registry (never the global one).
 * Names follow `flashindex_<area>_<thing>_<unit>`; labels are low-cardinality only.
 */
export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(options: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: "flashindex_process_" });
  const registers = [registry];
  return {
    registry,
    rpcRequests: new Counter({
      name: "flashindex_rpc_requests_total",
      help: "JSON-RPC requests by method and outcome (ok, retryable, fatal, range_error).",
      labelNames: ["method", "outcome"] as const,
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
    dbWriteDuration: new Histogram({
      name: "flashindex_db_write_duration_seconds",
      help: "Duration of one SQLite write transaction, by kind.",
      labelNames: ["kind"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    }),
  };
}
