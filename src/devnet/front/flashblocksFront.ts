import { createAdminMethods } from "./adminMethods.js";
import { createCanonicalWatcher } from "./canonicalWatcher.js";
import { createFrontState, type FrontParts } from "./frontParts.js";
import { createHeldSenders } from "./heldSenders.js";
import { createHttpFaults } from "./httpFaults.js";
import type { MethodTable } from "./jsonRpc.js";
import { createMethodRouter } from "./methodRouter.js";
import { createPendingViewMethods } from "./pendingViewMethods.js";
import { createPeriodicWork } from "./periodicWork.js";
import { startRpcServer } from "./rpcServer.js";
import { createSendMethods } from "./sendMethods.js";
import { createSequencer } from "./sequencer.js";
import { createSubscriptionMethods } from "./subscriptionMethods.js";
import { createSubscriptions, type PendingLogsMode } from "./subscriptions.js";
import { createUpstream } from "./upstream.js";

export type FrontOptions = {
  /** The anvil behind the front (started with --no-mining --order fifo). */
  anvilUrl: string;
  host?: string;
  port?: number;
  /** Flashblock cadence; 0 means only on `devnet_flashblock`. */
  flashblockIntervalMs: number;
  /** Block cadence; 0 means only on `devnet_mine`. */
  blockTimeMs: number;
  pendingLogs?: PendingLogsMode;
  onError?: (error: unknown) => void;
};

/**
 * How often the front looks for head changes it did not cause (someone mining through anvil
 * directly).
 */
const HEAD_WATCH_INTERVAL_MS = 100;

/**
 * A JSON-RPC server (HTTP and WebSocket on one port) that makes a local anvil look like a Base node
 * with Flashblocks: the "pending" view, pendingLogs and newFlashblocks, a pre-confirmation-aware
 * pending nonce, `removed: true` re-sends after reorgs, and injectable faults. Everything else goes
 * to anvil as is.
 *
 * Its parts: the sequencer (sequencer.ts) cuts flashblocks from anvil's pool and mines blocks; the
 * watcher (canonicalWatcher.ts) follows anvil's head; subscriptions.ts fans both out. The methods
 * the front answers itself sit in one table, by name (adminMethods.ts, pendingViewMethods.ts,
 * subscriptionMethods.ts, sendMethods.ts); methodRouter.ts sends every request to its handler or to
 * anvil, rpcServer.ts carries them over HTTP and WebSocket.
 */
export async function startFlashblocksFront(options: FrontOptions) {
  const reportError = options.onError ?? (() => undefined);
  const state = createFrontState();
  const upstream = createUpstream(options.anvilUrl);
  const subscriptions = createSubscriptions();
  if (options.pendingLogs !== undefined) subscriptions.setMode(options.pendingLogs);
  const held = createHeldSenders();
  const sequencer = createSequencer(
    upstream,
    (flashblock) => subscriptions.onFlashblock(flashblock),
    held,
  );
  const later = (work: () => void) =>
    state.headsDelayMs > 0 ? void setTimeout(work, state.headsDelayMs) : work();
  const watcher = createCanonicalWatcher(upstream, {
    onBlock: (header, logs) => later(() => subscriptions.onBlock(header, logs)),
    onRemoved: (logs) => later(() => subscriptions.onRemoved(logs)),
  });
  const front: FrontParts = { upstream, sequencer, watcher, subscriptions, state, held };

  const methods: MethodTable = {
    ...createAdminMethods(front),
    ...createPendingViewMethods(front),
    ...createSubscriptionMethods(front),
    ...createSendMethods(front),
  };
  const router = createMethodRouter({ methods, upstream, watcher, reportError });

  await watcher.sync();
  const server = await startRpcServer({
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 0,
    answerBody: router.answerBody,
    beforeHttp: createHttpFaults(state),
    sockets: state.sockets,
    onSocketClosed: (socket) => subscriptions.dropSocket(socket),
    reportError,
  });

  const periodic = createPeriodicWork(reportError);
  periodic.every(options.flashblockIntervalMs, () => sequencer.flashblock());
  periodic.every(options.blockTimeMs, async () => {
    await sequencer.mine();
    await watcher.sync();
  });
  // Between sequencer steps, so a newHeads never goes out between a mined block and its rebuilt
  // pending block.
  periodic.every(HEAD_WATCH_INTERVAL_MS, () => sequencer.between(() => watcher.sync()));

  return {
    httpUrl: server.httpUrl,
    wsUrl: server.wsUrl,
    sequencer,
    close: async () => {
      await periodic.close();
      await server.close();
    },
  };
}

export type FlashblocksFront = Awaited<ReturnType<typeof startFlashblocksFront>>;
