import { toQuantity, ZERO_HASH, type RpcLogObject } from "./rpcLogObject.js";
import type { Upstream } from "./upstream.js";

type PoolTransaction = { hash: string; from: string; to: string | null; input: string; value: string; gas: string; type?: string; gasPrice?: string; maxFeePerGas?: string };
type SimulatedCall = { status: string; gasUsed?: string; logs: Array<{ address: string; topics: string[]; data: string }> };

/** A receipt as JSON-RPC carries it, for a pre-confirmed transaction. */
export type RpcReceiptObject = Record<string, unknown> & { transactionHash: string; blockHash: string; blockNumber: string; status: string };

const EMPTY_LOGS_BLOOM = `0x${"0".repeat(512)}`;

export type Flashblock = {
  blockNumber: number;
  /** 0 for the first flashblock of a block (system transactions only on Base). */
  index: number;
  /** Logs first pre-confirmed by this flashblock. */
  newLogs: RpcLogObject[];
  /** Every pre-confirmed log of the pending block so far. */
  allLogs: RpcLogObject[];
};

/**
 * Plays Base's sequencer in front of a no-mining anvil: every flashblock the pool's new transactions
 * become pre-confirmed (their logs computed by really executing them with eth_simulateV1 on top of
 * the head); every block the pool is mined with the announced timestamp. A pre-confirmed transaction
 * dropped before its block is never retracted, as on Base.
 */
export function createSequencer(upstream: Upstream, onFlashblock: (flashblock: Flashblock) => void) {
  let blockNumber = -1;
  let timestamp = 0;
  let index = 0;
  let preconfirmed: PoolTransaction[] = [];
  let logs: RpcLogObject[] = [];
  /** Receipts of the pending block's pre-confirmed transactions, by lower-case hash. */
  let receipts = new Map<string, RpcReceiptObject>();
  const dropped = new Set<string>();
  let busy: Promise<unknown> = Promise.resolve();

  /** Serialises ticks, mining and drops: each sees the state the previous one left. */
  function exclusive<T>(work: () => Promise<T>): Promise<T> {
    const next = busy.then(work, work);
    busy = next.catch(() => undefined);
    return next;
  }

  async function startBlockIfNeeded(): Promise<void> {
    const latest = await upstream.call<{ number: string; timestamp: string }>("eth_getBlockByNumber", ["latest", false]);
    const next = Number(latest.number) + 1;
    if (next === blockNumber) return;
    // The head moved (first tick, a reorg, or someone mined through the front): start a fresh pending block.
    blockNumber = next;
    timestamp = Math.max(Number(latest.timestamp) + 1, Math.floor(Date.now() / 1_000));
    index = 0;
    preconfirmed = [];
    logs = [];
    receipts = new Map();
  }

  async function flashblock(): Promise<Flashblock> {
    await startBlockIfNeeded();
    const pending = await upstream.call<{ transactions: PoolTransaction[] }>("eth_getBlockByNumber", ["pending", true]);
    const known = new Set(preconfirmed.map((t) => t.hash));
    const fresh = pending.transactions.filter((t) => !known.has(t.hash) && !dropped.has(t.hash));
    const newLogs: RpcLogObject[] = [];
    if (fresh.length > 0) {
      const all = [...preconfirmed, ...fresh];
      // Note: anvil's eth_simulateV1 refuses contract creations ("missing keys: to"), so a creation is
      // pre-confirmed without logs; its logs appear with its block. Our contracts log nothing on creation.
      const calls = all.map((t, i) => ({ t, i })).filter(({ t }) => t.to !== null);
      const [simulated] = await upstream.call<Array<{ calls: SimulatedCall[] }>>("eth_simulateV1", [
        {
          blockStateCalls: [
            {
              blockOverrides: { number: toQuantity(blockNumber), time: toQuantity(timestamp) },
              calls: calls.map(({ t }) => ({ from: t.from, to: t.to, input: t.input, value: t.value, gas: t.gas })),
            },
          ],
        },
        "latest",
      ]);
      const resultByTx = new Map(calls.map(({ i }, k) => [i, simulated?.calls[k]]));
      let cumulativeGas = [...receipts.values()].reduce((sum, r) => sum + BigInt(r.gasUsed as string), 0n);
      for (let i = preconfirmed.length; i < all.length; i++) {
        const tx = all[i]!;
        const result = resultByTx.get(i);
        const firstLog = newLogs.length;
        for (const log of result?.logs ?? []) {
          newLogs.push({
            address: log.address.toLowerCase(),
            topics: log.topics,
            data: log.data,
            blockNumber: toQuantity(blockNumber),
            blockHash: ZERO_HASH,
            blockTimestamp: toQuantity(timestamp),
            transactionHash: tx.hash,
            transactionIndex: toQuantity(i),
            // Note: Base counts logIndex across the whole pending block, cumulative over flashblocks.
            logIndex: toQuantity(logs.length + newLogs.length),
            removed: false,
          });
        }
        if (result !== undefined) {
          const gasUsed = BigInt(result.gasUsed ?? "0x0");
          cumulativeGas += gasUsed;
          // Note: a Base node answers eth_getTransactionReceipt for a pre-confirmed transaction before its
          // block exists: zero blockHash, the pending block's number (protocol-notes §8).
          receipts.set(tx.hash.toLowerCase(), {
            transactionHash: tx.hash,
            transactionIndex: toQuantity(i),
            blockHash: ZERO_HASH,
            blockNumber: toQuantity(blockNumber),
            from: tx.from,
            to: tx.to,
            contractAddress: null,
            cumulativeGasUsed: `0x${cumulativeGas.toString(16)}`,
            gasUsed: `0x${gasUsed.toString(16)}`,
            effectiveGasPrice: tx.gasPrice ?? tx.maxFeePerGas ?? "0x0",
            logs: newLogs.slice(firstLog),
            logsBloom: EMPTY_LOGS_BLOOM,
            status: result.status,
            type: tx.type ?? "0x2",
          });
        }
      }
      preconfirmed = all;
      logs = [...logs, ...newLogs];
    }
    const result = { blockNumber, index, newLogs, allLogs: logs };
    index++;
    onFlashblock(result);
    return result;
  }

  return {
    /** One flashblock now (the timer calls this every flashblock interval). */
    flashblock: () => exclusive(flashblock),
    /** Closes the pending block: a last flashblock, then mine it with the announced timestamp. */
    mine: () =>
      exclusive(async () => {
        await flashblock();
        await upstream.call("evm_setNextBlockTimestamp", [toQuantity(timestamp)]).catch(() => undefined);
        await upstream.call("evm_mine", []);
        // The pending block is canonical now: its pre-confirmations leave the pending view and the
        // pending nonce (else both count them twice until the next flashblock).
        blockNumber = -1;
        preconfirmed = [];
        logs = [];
        receipts = new Map();
        dropped.clear();
      }),
    /** Removes a pre-confirmed transaction from the pool so it never lands; its logs are not retracted. */
    drop: (hash: string) =>
      exclusive(async () => {
        const wasPreconfirmed = preconfirmed.some((t) => t.hash === hash.toLowerCase() || t.hash === hash);
        await upstream.call("anvil_dropTransaction", [hash]);
        dropped.add(hash);
        return wasPreconfirmed;
      }),
    /** The receipt of a pre-confirmed transaction not yet in a block (zero blockHash), if any; a dropped one keeps it until the block closes, as on Base. */
    preconfirmedReceipt: (hash: string): RpcReceiptObject | undefined => receipts.get(hash.toLowerCase()),
    /** Pre-confirmed logs of the pending block. */
    pendingLogs: () => logs,
    /** Pre-confirmed transactions sent by `address` (for the "pending" nonce). */
    preconfirmedCount: (address: string) => preconfirmed.filter((t) => t.from.toLowerCase() === address.toLowerCase()).length,
    pendingBlockNumber: () => blockNumber,
  };
}

export type Sequencer = ReturnType<typeof createSequencer>;
