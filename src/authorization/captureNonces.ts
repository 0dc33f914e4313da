import { isAddressEqual, type LocalAccount } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import { captureHolder } from "../store/nonceBook.js";
import type { CaptureIntent, CaptureTransaction } from "../store/orderStates.js";
import type { Store } from "../store/store.js";
import { parseQuantity } from "./cancelRelay.js";
import type { createRelayerGaps } from "./relayerGaps.js";
import type { RelayerNonces } from "./relayerNonces.js";

export type CaptureNoncesDeps = {
  client: RpcClient;
  store: Store;
  relayerNonces: RelayerNonces;
  gaps: ReturnType<typeof createRelayerGaps>;
  metrics?: Pick<Metrics, "relayerBalance" | "relayerNonceGap"> | undefined;
  logger: Logger;
};

type Started = Awaited<ReturnType<Store["captures"]["start"]>>;

/**
 * The capture relay's care of its relayer nonces (captureRelay.ts): a signed transaction's nonce
 * is stored with the intent or given back to the book, and the driver's pass keeps each relayer's
 * sequence free of holes.
 */
export function createCaptureNonces(deps: CaptureNoncesDeps) {
  const { client, store, relayerNonces, gaps, logger } = deps;

  return {
    /**
     * Stores the signed transaction as the order's intent. A nonce that ends up on no stored
     * intent (the write failed, or another call started this capture first) goes back to the book,
     * which hands it out before any new one: no gap.
     */
    async startIntent(orderId: number, tx: CaptureTransaction, owner: string): Promise<Started> {
      const holder = captureHolder(orderId);
      let started: Started;
      try {
        started = await store.captures.start(orderId, tx, Date.now(), owner);
      } catch (error) {
        await relayerNonces.release(tx.relayer, tx.relayerNonce, holder);
        throw error;
      }
      // Another call started this capture first: its transaction is the one. Racing calls for one
      // order share one reserved nonce (nonceBook.ts), so there is usually nothing to give back.
      if (
        !started.created &&
        (started.capture.relayerNonce !== tx.relayerNonce ||
          !isAddressEqual(started.capture.relayer, tx.relayer))
      )
        await relayerNonces.release(tx.relayer, tx.relayerNonce, holder);
      return started;
    },

    /** One driver pass over a relayer's sequence: a gone process's reservations back, holes filled, its gauges set. */
    async tendRelayer(account: LocalAccount, live: CaptureIntent[], now: number): Promise<void> {
      await relayerNonces
        .pendingCount(account.address)
        .then(async (count) => {
          await gaps.releaseGone(account, count, now);
          await gaps.fill(account, live, count, now);
        })
        .catch((error: unknown) =>
          logger.warn({
            msg: "Failed to drive capture",
            order_id: 0,
            error: error instanceof Error ? error.message : String(error),
          }),
        );
      if (deps.metrics !== undefined) await reportRelayer(account, live).catch(() => undefined);
    },
  };

  async function reportRelayer(account: LocalAccount, live: CaptureIntent[]): Promise<void> {
    const [balance, pending] = await Promise.all([
      client.request("eth_getBalance", [account.address, "latest"], parseQuantity),
      client.request("eth_getTransactionCount", [account.address, "pending"], parseQuantity),
    ]);
    deps.metrics?.relayerBalance.set({ relayer: account.address }, Number(balance));
    deps.metrics?.relayerNonceGap.set(
      { relayer: account.address },
      live.filter(
        (c) => isAddressEqual(c.relayer, account.address) && BigInt(c.relayerNonce) >= pending,
      ).length,
    );
  }
}
