import { getAddress } from "viem";
import { createCaptureRelay } from "../../authorization/captureRelay.js";
import { readRelayerPool, relayerKeyHint } from "../../authorization/keySources.js";
import { createRelayerPool } from "../../authorization/relayerPool.js";
import { UsageError } from "../../errors/base.js";
import { createMetrics } from "../../ops/metrics.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { openStore } from "../../store/openStore.js";
import { createContext, verifyChain, type CommonFlags } from "../context.js";
import { printJson } from "../output.js";

export type CaptureFlags = {
  confirmations: string | undefined;
  relayerKeyFile: string | undefined;
  json: boolean;
};

/**
 * `order capture <id>`: sends the order's authorization through the capture relay, then waits until
 * the transaction is pre-confirmed (or in --confirmations canonical blocks). A second run of the same
 * order sends nothing new: it reports (and, if the node lost it, re-sends) the stored transaction.
 */
export async function runOrderCapture(
  id: number,
  flags: CaptureFlags,
  common: CommonFlags,
  shutdown: Shutdown,
): Promise<void> {
  const confirmations =
    flags.confirmations === undefined ? 0 : confirmationsFlag(flags.confirmations);
  const context = createContext(common, shutdown);
  const relayers = readRelayerPool(context.config.facilitator, flags.relayerKeyFile);
  if (relayers.length === 0)
    throw new UsageError(
      `order capture: no relayer key: ${relayerKeyHint(context.config.facilitator)}`,
    );
  await verifyChain(context);
  const store = await openStore(context.config, {
    metrics: createMetrics({ defaultMetrics: false }),
  });
  shutdown.add(() => store.close());
  const relay = createCaptureRelay({
    client: context.client,
    store,
    chainId: context.config.chainId,
    relayer: undefined,
    pool: createRelayerPool(relayers, {
      stuckAfterMs: context.config.facilitator.relayerStuckAfterMs,
    }),
    logger: context.logger,
  });
  const sent = await relay.capture(id);
  const stored = (await store.captures.get(id))?.relayer;
  const sender = stored === undefined ? relayers[0]!.address : getAddress(stored);
  console.error(
    `flashindex: ${sent.alreadySent ? "already sent" : "sent"} ${sent.txHash} for order ${id}; waiting until it is ${confirmations === 0 ? "pre-confirmed" : `in ${confirmations} canonical block(s)`}`,
  );
  const seen = await relay.waitFor(id, {
    confirmations,
    timeoutMs: context.config.cancel.receiptTimeoutMs,
    signal: shutdown.signal,
  });
  const order = (await store.getOrder(id)) ?? sent.order;
  if (flags.json)
    return printJson({
      orderId: id,
      txHash: seen.txHash,
      alreadySent: sent.alreadySent,
      status: seen.status,
      blockNumber: Number(seen.blockNumber),
      confirmations: seen.confirmations,
      relayer: sender,
      state: order.state,
    });
  console.log(
    [
      `order ${id} ${order.state}${order.eventStatus === null ? "" : ` (${order.eventStatus})`}`,
      `tx         ${seen.txHash} (${sent.alreadySent ? "already sent" : "sent"} by relayer ${sender})`,
      `seen       ${seen.status === "preconfirmed" ? `pre-confirmed for block ${seen.blockNumber}` : `in block ${seen.blockNumber}, ${seen.confirmations} confirmation(s)`}`,
    ].join("\n"),
  );
}

function confirmationsFlag(value: string): number {
  if (!/^(?:0|[1-9][0-9]{0,3})$/.test(value))
    throw new UsageError(
      `--confirmations: expected a whole number from 0 to 9999, got ${JSON.stringify(value)}`,
    );
  return Number(value);
}
