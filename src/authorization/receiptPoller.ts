import type { Hex } from "viem";
import { parseReceipt, type TransactionReceiptSummary } from "../chain/transactionReceipt.js";
import type { RpcClient } from "../chain/rpcClient.js";
import { inBatches } from "../chain/inBatches.js";
import { RetryableError } from "../errors/base.js";
import { RpcResponseError } from "../errors/rpc.js";

/** How often a poller reads the receipts its waiters wait for. */
export const RECEIPT_POLL_INTERVAL_MS = 50;
/** Most calls of one receipt batch. */
const MAX_RECEIPT_BATCH_CALLS = 100;

/**
 * Where a sent transaction stands, as one poll saw it: no receipt; pre-confirmed (a Base
 * Flashblocks node answers a receipt with a zero block hash before the block exists: it counts for
 * no confirmation); in a canonical block, with its confirmations (its own block included) at
 * `head`; or in a block that is no longer the canonical one at its height (reorged away, or a
 * lagging endpoint without that block yet).
 */
export type ReceiptStanding =
  | { kind: "none" }
  | { kind: "preconfirmed"; txHash: Hex; receipt: TransactionReceiptSummary }
  | {
      kind: "canonical";
      txHash: Hex;
      receipt: TransactionReceiptSummary;
      confirmations: number;
      head: bigint;
    }
  | { kind: "orphaned"; txHash: Hex; receipt: TransactionReceiptSummary };

export type ReceiptPoller = {
  /**
   * The standing of the first of `txHashes` (in the order given) that has a receipt, read at the
   * poller's next tick. Every waiter of a tick shares one batch of receipts and one read of the
   * head and canonical hashes, so a thousand settles in flight cost what one does. Rejects with
   * a RetryableError when the node could not be read; with the signal's reason when aborted.
   */
  next: (txHashes: readonly Hex[], signal?: AbortSignal) => Promise<ReceiptStanding>;
  /**
   * The node has news (a flashblock's rows were stored, a canonical head applied): the waiters
   * read their receipts now, not at the end of the tick's interval. A wake during a read makes the
   * next tick read at once.
   */
  wake: () => void;
};

type Waiter = {
  txHashes: readonly Hex[];
  resolve: (standing: ReceiptStanding) => void;
  reject: (error: unknown) => void;
};

/**
 * The one receipt poller of a relay (captureRelay's waits, the cancel's confirmations): it ticks
 * every `pollingIntervalMs` while anyone waits, and not at all otherwise.
 */
export function createReceiptPoller(deps: {
  client: RpcClient;
  pollingIntervalMs?: number | undefined;
}): ReceiptPoller {
  const { client } = deps;
  const pollMs = deps.pollingIntervalMs ?? RECEIPT_POLL_INTERVAL_MS;
  let waiting: Waiter[] = [];
  let ticking = false;
  /** Ends the tick's wait early (set while it waits). */
  let endWait: (() => void) | undefined;
  /** A wake came while no tick waited: the next one reads at once. */
  let woken = false;

  /** Waits out the interval, or until a wake. */
  function interval(): Promise<void> {
    if (woken) {
      woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, pollMs);
      function done() {
        clearTimeout(timer);
        endWait = undefined;
        resolve();
      }
      endWait = done;
    });
  }

  async function tick(): Promise<void> {
    await interval();
    const taken = waiting;
    waiting = [];
    try {
      const standings = await readStandings(client, [
        ...new Set(taken.flatMap((w) => w.txHashes.map((h) => h.toLowerCase() as Hex))),
      ]);
      for (const waiter of taken) {
        const found = waiter.txHashes
          .map((h) => standings.get(h.toLowerCase()))
          .find((s) => s !== undefined);
        waiter.resolve(found ?? { kind: "none" });
      }
    } catch (error) {
      for (const waiter of taken) waiter.reject(error);
    }
  }

  function run(): void {
    if (ticking) return;
    ticking = true;
    void (async () => {
      while (waiting.length > 0) await tick();
      ticking = false;
      woken = false;
    })();
  }

  return {
    next(txHashes, signal) {
      return new Promise<ReceiptStanding>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const onAbort = () => {
          waiting = waiting.filter((w) => w !== waiter);
          reject(signal!.reason);
        };
        const waiter: Waiter = {
          txHashes,
          resolve: (standing) => (signal?.removeEventListener("abort", onAbort), resolve(standing)),
          reject: (error) => (signal?.removeEventListener("abort", onAbort), reject(error)),
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        waiting.push(waiter);
        run();
      });
    },
    wake() {
      if (endWait !== undefined) endWait();
      else if (ticking) woken = true;
    },
  };
}

/** The standings of `txHashes` (lower case) that have a receipt: one batch of receipts, then one of the head and the blocks they name. */
async function readStandings(
  client: RpcClient,
  txHashes: Hex[],
): Promise<Map<string, ReceiptStanding>> {
  const standings = new Map<string, ReceiptStanding>();
  if (txHashes.length === 0) return standings;
  const receipts: TransactionReceiptSummary[] = [];
  await inBatches(client, txHashes, MAX_RECEIPT_BATCH_CALLS, async (batch) => {
    const answers = await client.batch(
      batch.map((hash) => ({ method: "eth_getTransactionReceipt", params: [hash] })),
    );
    for (const [i, answer] of answers.entries()) {
      // A node's error for one receipt is a failed read of it, not a verdict on the transaction.
      if (!answer.ok)
        throw new RpcResponseError(
          `eth_getTransactionReceipt(${batch[i]}) failed: ${answer.error.shortMessage}`,
          { cause: answer.error },
        );
      const receipt = parseReceipt(answer.result, batch[i]!);
      if (receipt !== null) receipts.push(receipt);
    }
  });
  const mined = receipts.filter((r) => !r.preconfirmed);
  for (const receipt of receipts.filter((r) => r.preconfirmed))
    standings.set(receipt.transactionHash.toLowerCase(), {
      kind: "preconfirmed",
      txHash: receipt.transactionHash,
      receipt,
    });
  if (mined.length === 0) return standings;
  const heights = [...new Set(mined.map((r) => r.blockNumber))];
  const answers = await client.batch([
    { method: "eth_blockNumber", params: [] },
    ...heights.map((height) => ({
      method: "eth_getBlockByNumber",
      params: [`0x${height.toString(16)}`, false],
    })),
  ]);
  const head = parseBlockNumber(answers[0]);
  const canonical = new Map(heights.map((height, i) => [height, parseBlockHash(answers[i + 1])]));
  for (const receipt of mined) {
    const txHash = receipt.transactionHash;
    standings.set(
      txHash.toLowerCase(),
      canonical.get(receipt.blockNumber) === receipt.blockHash
        ? {
            kind: "canonical",
            txHash,
            receipt,
            confirmations: Number(head - receipt.blockNumber) + 1,
            head,
          }
        : { kind: "orphaned", txHash, receipt },
    );
  }
  return standings;
}

type BatchAnswer = Awaited<ReturnType<RpcClient["batch"]>>[number] | undefined;

function parseBlockNumber(answer: BatchAnswer): bigint {
  const result = answer?.ok === true ? answer.result : undefined;
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]{1,16}$/.test(result))
    throw new RetryableError(`eth_blockNumber returned ${JSON.stringify(result)}`);
  return BigInt(result);
}

/** The canonical block's hash at a height, or null when the node has no such block yet (a lagging endpoint). */
function parseBlockHash(answer: BatchAnswer): Hex | null {
  if (answer?.ok !== true)
    throw new RetryableError(
      `eth_getBlockByNumber failed${answer?.ok === false ? `: ${answer.error.shortMessage}` : ""}`,
    );
  if (answer.result === null) return null;
  const hash = (answer.result as { hash?: unknown }).hash;
  if (typeof hash !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(hash))
    throw new RetryableError(`eth_getBlockByNumber returned a block without a hash`);
  return hash.toLowerCase() as Hex;
}
