import type { LocalAccount } from "viem";
import type { Common } from "../common.js";
import { crashPointFromEnv } from "../ops/crashPoint.js";
import type { Store } from "../store/store.js";
import { createCaptureRelay, type CaptureRelay } from "./captureRelay.js";
import { SEND_SYNC_MAX_TIMEOUT_MS } from "./captureSyncSend.js";
import { readRelayerPool } from "./keySources.js";
import { createRelayerPool } from "./relayerPool.js";

/** Room between the node's sync send timeout and the client's own per-request timeout, in ms. */
const SEND_SYNC_ANSWER_MARGIN_MS = 1_000;
/** How often the daemon looks at the live capture intents. */
export const CAPTURE_DRIVE_INTERVAL_MS = 1_000;

/**
 * The daemon's capture relay and its driver: every CAPTURE_DRIVE_INTERVAL_MS it takes the intents still
 * capturing (those of this run, of `order capture` runs beside it, and those a crash left behind) and
 * re-sends what the node lost or replaces what is stuck (captureRelay.ts drive). The relayer keys are
 * the ones given, else the configured pool (keySources.ts readRelayerPool). Without a relayer key
 * it can still re-send stored bytes; replacements need the key. Stopped by the shutdown.
 */
export function startCaptureDriver(
  deps: Common & { store: Store; relayers?: readonly LocalAccount[] | undefined },
): CaptureRelay {
  const accounts = deps.relayers ?? readRelayerPool(deps.config.facilitator);
  const relay = createCaptureRelay({
    client: deps.client,
    store: deps.store,
    chainId: deps.config.chainId,
    relayer: undefined,
    pool: createRelayerPool(accounts, {
      stuckAfterMs: deps.config.facilitator.relayerStuckAfterMs,
    }),
    // The gas metrics' payee label: the configured payees only (a bounded set), "other" for the rest.
    payeeLabel: (payee) =>
      deps.config.facilitator.payTo.includes(payee.toLowerCase()) ? payee.toLowerCase() : "other",
    logger: deps.logger,
    metrics: deps.metrics,
    crashPoint: crashPointFromEnv(process.env),
    // A settle's first send waits for its receipt no longer than the settle waits for it, and
    // the node answers before the client gives the request up (rpc.timeoutMs).
    sendSync: {
      timeoutMs: Math.min(
        SEND_SYNC_MAX_TIMEOUT_MS,
        deps.config.facilitator.settleTimeoutMs,
        deps.config.rpc.timeoutMs - SEND_SYNC_ANSWER_MARGIN_MS,
      ),
    },
  });
  let running = false;
  const timer = setInterval(() => {
    if (running || deps.store.isClosed()) return;
    running = true;
    relay
      .drive(Date.now())
      .catch((error: unknown) =>
        deps.logger.error({
          msg: "Failed to drive captures",
          error: error instanceof Error ? error.message : String(error),
        }),
      )
      .finally(() => (running = false));
  }, CAPTURE_DRIVE_INTERVAL_MS);
  deps.shutdown.add(() => clearInterval(timer));
  return relay;
}
