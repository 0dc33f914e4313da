import type { HeldSenders } from "./heldSenders.js";
import { createPendingState, type BlockEnv, type StateOverride } from "./pendingState.js";
import {
  createPoolOrder,
  type PoolEntry,
  type ReadyBySender,
  type ReadyLines,
} from "./poolOrder.js";
import { toQuantity, ZERO_HASH, type RpcLogObject } from "./rpcLogObject.js";
import type { Upstream } from "./upstream.js";

type PoolTransaction = {
  hash: string;
  from: string;
  to: string | null;
  input: string;
  value: string;
  gas: string;
  type?: string;
  gasPrice?: string;
  maxFeePerGas?: string;
} & Record<string, unknown>;
type SimulatedCall = {
  status: string;
  gasUsed?: string;
  logs: Array<{ address: string; topics: string[]; data: string }>;
};
/** anvil's `txpool_content`: pool transactions by sender, then by nonce (decimal). */
type TxPoolContent = Partial<
  Record<
    "pending" | "queued",
    Record<string, Record<string, { hash: string; from: string; nonce: string }>>
  >
>;
type Head = { number: string; hash: string; timestamp: string; gasLimit: string };

/** A receipt as JSON-RPC carries it, for a pre-confirmed transaction. */
export type RpcReceiptObject = Record<string, unknown> & {
  transactionHash: string;
  blockHash: string;
  blockNumber: string;
  status: string;
};

/** The whole pending block as `newFlashblocks` sends it: header hash zero, full transactions. */
export type PendingBlockObject = {
  number: string;
  hash: string;
  parentHash: string;
  timestamp: string;
  transactions: Array<Record<string, unknown>>;
};

/** A promise and the function that resolves it. */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** What a transaction pays a gas unit in a block of `baseFee` (EIP-1559; a legacy one its gasPrice). */
function effectiveGasPrice(tx: Record<string, unknown>, baseFee: bigint): string {
  if (typeof tx.maxFeePerGas !== "string")
    return typeof tx.gasPrice === "string" ? tx.gasPrice : "0x0";
  const tip = BigInt(typeof tx.maxPriorityFeePerGas === "string" ? tx.maxPriorityFeePerGas : "0x0");
  const cap = BigInt(tx.maxFeePerGas);
  const paid = baseFee + tip < cap ? baseFee + tip : cap;
  return toQuantity(paid);
}

const EMPTY_LOGS_BLOOM = `0x${"0".repeat(512)}`;

export type Flashblock = {
  blockNumber: number;
  /** 0 for the first flashblock of a block (system transactions only on Base). */
  index: number;
  /** Logs first pre-confirmed by this flashblock. */
  newLogs: RpcLogObject[];
  /** Every pre-confirmed log of the pending block so far. */
  allLogs: RpcLogObject[];
  /** The pending block after this flashblock. */
  block: PendingBlockObject;
  /** Transactions first pre-confirmed by this flashblock, as `newFlashblockTransactions` sends them in full. */
  newTransactions: FlashblockTransaction[];
};

/** A pre-confirmed transaction with its logs and gas used (base/base rpc/types.rs TransactionWithLogs, PR #1803). */
export type FlashblockTransaction = Record<string, unknown> & {
  hash: string;
  logs: RpcLogObject[];
  gasUsed: string;
};

/**
 * The node's own pending view, apart from the sequencer: live; frozen at what it held when it stopped
 * following flashblocks (base/node#1129: 450 blocks behind until a restart; base/base#1439); or gone
 * (`null`: base/base#187, #178, and a node stuck at "waiting for first Flashblock" after a restart, #826).
 */
export type PendingViewMode = "live" | "frozen" | "null";

/** One block of the pre-confirmed state: open (taking flashblocks), sealed (waiting to be mined), or mined and still shown. */
type PendingBlock = {
  number: number;
  timestamp: number;
  /** The canonical parent's hash when known at opening; zero when the parent was itself still pending. */
  parentHash: string;
  /** The head's gas limit when it opened: the flashblocks take no more than fits. */
  gasLimit: bigint;
  /** Its base fee, as the node will charge it when it mines the block. */
  baseFee: bigint;
  index: number;
  txs: PoolTransaction[];
  logs: RpcLogObject[];
  /** Receipts of its pre-confirmed transactions, by lower-case hash. */
  receipts: Map<string, RpcReceiptObject>;
  sealed: boolean;
  mined: boolean;
};

/**
 * Plays Base's sequencer in front of a no-mining anvil: every flashblock the pool's new transactions
 * become pre-confirmed (their logs computed by really executing them with eth_simulateV1 on top of
 * the head and the pending blocks before it); every block is mined with exactly its pre-confirmed
 * transactions and the announced timestamp. A pre-confirmed transaction dropped before its block is
 * never retracted, as on Base. Switches play the rest of Base's node (base/base `crates/execution/flashblocks`,
 * `pending_blocks.rs`, `processor.rs`): a canonical chain that
 * lags the pending blocks, a pending view cleared after a flashblock gap, and a pre-confirmed
 * transaction that lands a block later than announced.
 */
export function createSequencer(
  upstream: Upstream,
  onFlashblock: (flashblock: Flashblock) => void,
  /** Senders held back (heldSenders.ts): their transactions already in anvil's pool wait too. */
  held: HeldSenders,
) {
  /** Oldest first; the last is open unless sealed. Mined ones stay until the chain catches up with the newest. */
  let blocks: PendingBlock[] = [];
  /** Blocks the canonical chain stays behind the newest sealed pending block. */
  let lagBlocks = 0;
  /** After a flashblock gap the node's pending view is empty until the next block opens. */
  let blind = false;
  const dropped = new Set<string>();
  /** Transactions on their way into anvil's pool; mining a block exactly waits for them and holds new ones back. */
  const admitting = new Set<Promise<unknown>>();
  /** Set while a block is mined exactly (its pool's other transactions set aside). */
  let miningExactly: Promise<void> | undefined;
  /** Pre-confirmed transactions the next mined block leaves out (they land in a later block). */
  const deferred = new Set<string>();
  let busy: Promise<unknown> = Promise.resolve();
  /** The state after every pre-confirmed transaction of the unmined blocks. */
  const pendingState = createPendingState(upstream);
  const poolOrder = createPoolOrder((hash) =>
    upstream.call<PoolEntry | null>("eth_getTransactionByHash", [hash]),
  );
  /** What the node serves as its pending view; the sequencer goes on making blocks whatever it is. */
  let view:
    | { mode: "live" }
    | { mode: "frozen"; blocks: PendingBlock[]; state: StateOverride }
    | { mode: "null" } = { mode: "live" };

  /** The last send into anvil's pool (inOrder): the next waits for it. */
  let lastSend: Promise<unknown> = Promise.resolve();
  /**
   * Runs `send` (a transaction into anvil's pool, and its `arrived`) once the sends before it are
   * done. anvil mines its pool in the order it took the transactions (`--order fifo`), and the
   * flashblocks give them in the order they arrived here: two sends at once could be taken in one
   * order and answered in the other, and the block's receipts then differed from the flashblocks'
   * (settlePool.test.ts saw a payer's refund on one payment pre-confirmed and on another mined).
   */
  function inOrder<T>(send: () => Promise<T>): Promise<T> {
    const turn = lastSend.then(send);
    lastSend = turn.catch(() => undefined);
    return turn;
  }

  /** Waiting for the next flashblock (nextFlashblock): woken when one is out. */
  let flashblockOut = signal();

  /** Reads running between steps (readBetween): the next step waits for them. */
  const readers = new Set<Promise<unknown>>();

  /**
   * Serialises ticks, mining and drops: each sees the state the previous one left, and starts once
   * the reads that began before it have ended.
   */
  function exclusive<T>(work: () => Promise<T>): Promise<T> {
    // The reads begun so far, taken now: a read begun later waits for this step, not the reverse.
    const begun = [...readers];
    const next = busy.then(() => Promise.allSettled(begun)).then(work, work);
    busy = next.catch(() => undefined);
    return next;
  }

  /**
   * Runs a read once the steps queued before it have ended, beside other reads: a node serves its
   * readers from one state at once, not one after another. A step queued after it waits for it.
   */
  function shared<T>(work: () => Promise<T>): Promise<T> {
    const run = busy.then(work, work);
    const ended = run.catch(() => undefined);
    readers.add(ended);
    void ended.then(() => readers.delete(ended));
    return run;
  }

  const unmined = () => blocks.filter((b) => !b.mined);
  /** The state after every unmined pending block's transactions, executed again from the canonical head. */
  const executedFromHead = () =>
    pendingState.executed(
      unmined().map((b) => ({ txs: b.txs, env: envOf(b) })),
      {},
    );
  const sameHash = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

  /** The open pending block, opening one (and forgetting a state the head no longer fits) when needed. */
  async function openBlock(): Promise<PendingBlock> {
    const head = await upstream.call<Head>("eth_getBlockByNumber", ["latest", false]);
    const headNumber = Number(head.number);
    const waiting = unmined();
    const consecutive = waiting.every((b, i) => b.number === headNumber + 1 + i);
    if (!consecutive) {
      // The head moved behind our back (a reorg, or someone mined through anvil): start afresh.
      blocks = [];
      pendingState.clear();
      blind = false;
    }
    const last = blocks.at(-1);
    if (last !== undefined && !last.sealed) return last;
    const parent = unmined().at(-1);
    // The next block's base fee is the last entry of eth_feeHistory (EIP-1559 from the head; a
    // pending parent's own would move it a little).
    const fees = await upstream.call<{ baseFeePerGas: string[] }>("eth_feeHistory", [
      "0x1",
      "latest",
      [],
    ]);
    const block: PendingBlock = {
      number: parent === undefined ? headNumber + 1 : parent.number + 1,
      timestamp: Math.max(
        (parent?.timestamp ?? Number(head.timestamp)) + 1,
        Math.floor(Date.now() / 1_000),
      ),
      parentHash: parent === undefined ? head.hash : ZERO_HASH,
      gasLimit: BigInt(head.gasLimit),
      baseFee: BigInt(fees.baseFeePerGas.at(-1) ?? "0x0"),
      index: 0,
      txs: [],
      logs: [],
      receipts: new Map(),
      sealed: false,
      mined: false,
    };
    blocks.push(block);
    // Note: a node that cleared its state after a flashblock gap shows pre-confirmations again from the next block on (base/base flashblocks `processor.rs`).
    blind = false;
    return block;
  }

  const envOf = (block: PendingBlock): BlockEnv => ({
    number: toQuantity(block.number),
    time: toQuantity(block.timestamp),
  });

  /**
   * Executes the open block's fresh transactions on top of the pending state (every pre-confirmed
   * transaction before them): their logs and gas, by index in `fresh`.
   */
  async function simulate(
    open: PendingBlock,
    fresh: PoolTransaction[],
  ): Promise<Array<SimulatedCall | undefined>> {
    // Note: anvil's eth_simulateV1 refuses contract creations ("missing keys: to"), so a creation is
    // pre-confirmed without logs; its logs appear with its block. Our contracts log nothing on creation.
    const calls = fresh.map((t, i) => ({ t, i })).filter(({ t }) => t.to !== null);
    const simulated = await upstream.call<Array<{ calls: SimulatedCall[] }>>("eth_simulateV1", [
      {
        blockStateCalls: [
          {
            blockOverrides: envOf(open),
            stateOverrides: pendingState.current(),
            calls: calls.map(({ t }) => ({
              from: t.from,
              to: t.to,
              input: t.input,
              value: t.value,
              gas: t.gas,
            })),
          },
        ],
      },
      "latest",
    ]);
    const results = simulated.at(-1)?.calls ?? [];
    const byIndex: Array<SimulatedCall | undefined> = fresh.map(() => undefined);
    calls.forEach(({ i }, k) => (byIndex[i] = results[k]));
    return byIndex;
  }

  /** The pool's ready transactions no pending block holds yet, as many as fit the open block. */
  async function freshTransactions(open: PendingBlock): Promise<PoolTransaction[]> {
    const listed = await upstream.call<{ pending?: ReadyLines }>("txpool_inspect", []);
    const ready =
      (await poolOrder.known(listed.pending ?? {})) ??
      poolOrder.order(
        (await upstream.call<{ pending?: ReadyBySender }>("txpool_content", [])).pending ?? {},
      );
    const known = new Set(unmined().flatMap((b) => b.txs.map((t) => t.hash)));
    const fresh = ready.filter(
      (t) => !known.has(t.hash) && !dropped.has(t.hash) && !held.has(t.from),
    );
    // Note: a block takes transactions while their gas limits fit its own; a sender's later nonces
    // wait with the first that does not.
    let room = open.gasLimit - open.txs.reduce((sum, t) => sum + BigInt(t.gas), 0n);
    const fitting: PoolTransaction[] = [];
    for (const tx of fresh) {
      room -= BigInt(tx.gas);
      if (room < 0n) break;
      // In a block, gasPrice is the price paid (the pool lists a fee cap there).
      fitting.push({
        ...tx,
        gasPrice: effectiveGasPrice(tx, open.baseFee),
      } as unknown as PoolTransaction);
    }
    return fitting;
  }

  async function flashblock(): Promise<Flashblock> {
    const open = await openBlock();
    const fresh = await freshTransactions(open);
    const newLogs: RpcLogObject[] = [];
    const newTransactions: FlashblockTransaction[] = [];
    let stateKept: Promise<void> = Promise.resolve();
    if (fresh.length > 0) {
      const all = [...open.txs, ...fresh];
      // The logs and the state are computed side by side. The flashblock goes out with its logs and
      // receipts; a call at pending waits for its state (pendingCallState), so no reader sees a
      // receipt and then a state without it.
      const tracing = pendingState.executed(
        [{ txs: fresh, env: envOf(open) }],
        pendingState.current(),
      );
      const resultByTx = await simulate(open, fresh).catch(async (error: unknown) => {
        await tracing.catch(() => undefined);
        throw error;
      });
      stateKept = pendingState.becoming(tracing);
      let cumulativeGas = [...open.receipts.values()].reduce(
        (sum, r) => sum + BigInt(r.gasUsed as string),
        0n,
      );
      for (let i = open.txs.length; i < all.length; i++) {
        const tx = all[i]!;
        const result = resultByTx[i - open.txs.length];
        const firstLog = newLogs.length;
        for (const log of result?.logs ?? []) {
          newLogs.push({
            address: log.address.toLowerCase(),
            topics: log.topics,
            data: log.data,
            blockNumber: toQuantity(open.number),
            blockHash: ZERO_HASH,
            blockTimestamp: toQuantity(open.timestamp),
            transactionHash: tx.hash,
            transactionIndex: toQuantity(i),
            // Note: Base counts logIndex across the whole pending block, cumulative over flashblocks.
            logIndex: toQuantity(open.logs.length + newLogs.length),
            removed: false,
          });
        }
        if (result !== undefined) {
          const gasUsed = BigInt(result.gasUsed ?? "0x0");
          cumulativeGas += gasUsed;
          // Note: a Base node answers eth_getTransactionReceipt for a pre-confirmed transaction before its
          // block exists: zero blockHash, the pending block's number (base/base flashblocks `rpc/eth.rs`).
          open.receipts.set(tx.hash.toLowerCase(), {
            transactionHash: tx.hash,
            transactionIndex: toQuantity(i),
            blockHash: ZERO_HASH,
            blockNumber: toQuantity(open.number),
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
        newTransactions.push({
          ...tx,
          blockHash: ZERO_HASH,
          blockNumber: toQuantity(open.number),
          transactionIndex: toQuantity(i),
          logs: newLogs.slice(firstLog),
          gasUsed: `0x${BigInt(result?.gasUsed ?? "0x0").toString(16)}`,
        });
      }
      open.txs = all;
      open.logs = [...open.logs, ...newLogs];
    }
    const result = {
      blockNumber: open.number,
      index: open.index,
      newLogs,
      allLogs: open.logs,
      block: blockObject(open),
      newTransactions,
    };
    open.index++;
    // After a gap the node has nothing to tell until the next block: no notification either; nor
    // from a node whose view is frozen or gone.
    if (!blind && view.mode === "live") onFlashblock(result);
    flashblockOut.resolve();
    flashblockOut = signal();
    await stateKept.catch(async () => {
      // Executed again from the head for every pending block; readers wait for it.
      await pendingState.becoming(executedFromHead());
    });
    return result;
  }

  /**
   * Mines `block` with exactly its pre-confirmed transactions (less the deferred ones): everything
   * else in anvil's pool (ready or waiting for a nonce) is set aside and sent again afterwards,
   * each sender's in nonce order.
   */
  async function mineExactly(block: PendingBlock): Promise<void> {
    let done!: () => void;
    miningExactly = new Promise((resolve) => (done = resolve));
    try {
      // A transaction entering the pool while the others are set aside could be dropped with them.
      await Promise.allSettled([...admitting]);
      await mineWithPoolSetAside(block);
    } finally {
      miningExactly = undefined;
      done();
    }
  }

  /**
   * Every transaction in anvil's pool (ready or waiting for a nonce): from the one-line listing and
   * what the front knows of each (the block's own among them), or anvil's full listing when the
   * pool holds one the front has not seen.
   */
  async function poolEntries(
    block: PendingBlock,
  ): Promise<Array<{ hash: string; from: string; nonce: string }>> {
    const listed = await upstream.call<{ pending?: ReadyLines; queued?: ReadyLines }>(
      "txpool_inspect",
      [],
    );
    const known = await poolOrder.listed(
      [listed.pending ?? {}, listed.queued ?? {}],
      block.txs as unknown as PoolEntry[],
    );
    if (known !== undefined) return known;
    const pool = await upstream.call<TxPoolContent>("txpool_content", []);
    return [pool.pending, pool.queued].flatMap((bySender) =>
      Object.values(bySender ?? {}).flatMap((txs) => Object.values(txs)),
    );
  }

  async function mineWithPoolSetAside(block: PendingBlock): Promise<void> {
    const include = new Set(
      block.txs.filter((t) => !deferred.has(t.hash)).map((t) => t.hash.toLowerCase()),
    );
    const byNonce = (await poolEntries(block)).sort(
      (a, b) => a.from.localeCompare(b.from) || Number(BigInt(a.nonce) - BigInt(b.nonce)),
    );
    // A sender's transactions after one set aside go aside too: they cannot be mined without it, and
    // anvil_dropTransaction drops them with it.
    const blocked = new Set<string>();
    const setAside: typeof byNonce = [];
    for (const t of byNonce) {
      const from = t.from.toLowerCase();
      if (include.has(t.hash.toLowerCase()) && !blocked.has(from)) continue;
      blocked.add(from);
      setAside.push(t);
    }
    // Sent back in the order they arrived: anvil mines them in the order it takes them again, and
    // the flashblocks give them in arrival order.
    const asideHashes = poolOrder.inArrivalOrder(setAside).map((t) => t.hash);
    // Every raw transaction is read before any is dropped: a read after its predecessor's drop finds
    // it gone, and the gap would stall that sender for good.
    const aside = await Promise.all(
      asideHashes.map((hash) =>
        upstream.call<string | null>("eth_getRawTransactionByHash", [hash]),
      ),
    );
    for (const hash of asideHashes) await upstream.call("anvil_dropTransaction", [hash]);
    await upstream
      .call("evm_setNextBlockTimestamp", [toQuantity(block.timestamp)])
      .catch(() => undefined);
    await upstream.call("evm_mine", []);
    // One that no longer fits (its nonce taken meanwhile) is left out, as a node's pool would; the others go back.
    for (const raw of aside)
      if (raw !== null) await upstream.call("eth_sendRawTransaction", [raw]).catch(() => undefined);
    for (const t of block.txs) deferred.delete(t.hash);
    poolOrder.forget(include);
    block.mined = true;
  }

  /** Closes the open block (a last flashblock), then mines what the lag allows; the pending block is rebuilt when one was deferred. */
  async function mine(): Promise<void> {
    const closing = (await flashblock()).blockNumber;
    const open = blocks.at(-1)!;
    open.sealed = true;
    const rebuilt = open.txs.some((t) => deferred.has(t.hash));
    let minedNow = false;
    for (const block of unmined())
      if (block.number <= closing - lagBlocks) {
        await mineExactly(block);
        minedNow = true;
      }
    // Note: the pre-confirmed state spans several blocks: it is kept until the canonical chain has caught
    // up with the newest pending block (base/base flashblocks `pending_blocks.rs`).
    if (blocks.every((b) => b.mined)) {
      blocks = [];
      pendingState.clear();
    } else if (minedNow) {
      // What is left pending is executed again on the new head: a transaction left out of its
      // block (deferred) is no longer part of the pending state until pre-confirmed again.
      pendingState.set(await executedFromHead());
    }
    dropped.clear();
    // Note: a canonical block that differs from what was pre-confirmed makes the node rebuild the pending
    // block silently; the left-out transaction is pre-confirmed again in the next one (base/base flashblocks `processor.rs`).
    if (rebuilt && lagBlocks === 0) await flashblock();
  }

  function blockObject(block: PendingBlock): PendingBlockObject {
    return {
      number: toQuantity(block.number),
      hash: ZERO_HASH,
      parentHash: block.parentHash,
      timestamp: toQuantity(block.timestamp),
      transactions: block.txs.map((t, i) => ({
        ...t,
        blockHash: ZERO_HASH,
        blockNumber: toQuantity(block.number),
        transactionIndex: toQuantity(i),
      })),
    };
  }

  function visible(): PendingBlock[] {
    if (view.mode === "frozen") return view.blocks;
    if (view.mode === "null") return [];
    return blind ? [] : blocks;
  }

  return {
    /** One flashblock now (the timer calls this every flashblock interval). */
    flashblock: () => exclusive(flashblock),
    /** Closes the pending block: a last flashblock, then mine it (or, with a lag, an earlier one) with the announced timestamp. */
    mine: () => exclusive(mine),
    /** Runs `send` (a transaction into anvil's pool) when no block is being mined exactly: it would be set aside, or lost, with the others. */
    admit: async <T>(send: () => Promise<T>): Promise<T> => {
      while (miningExactly !== undefined) await miningExactly;
      const sending = send();
      admitting.add(sending);
      try {
        return await sending;
      } finally {
        admitting.delete(sending);
      }
    },
    /** Resolves when the next flashblock is out (its receipts readable). */
    nextFlashblock: (): Promise<void> => flashblockOut.promise,
    inOrder,
    /** A transaction entered anvil's pool through the front: flashblocks take it in arrival order. */
    arrived: (hash: string) => poolOrder.arrived(hash),
    /** Runs `work` between ticks, so it never sees a block mined but the pending block not yet rebuilt. */
    between: <T>(work: () => Promise<T>) => exclusive(work),
    /** Runs a read between ticks (never mid-step), beside other such reads. */
    readBetween: <T>(work: () => Promise<T>) => shared(work),
    /** Removes a pre-confirmed transaction from the pool so it never lands; its logs are not retracted. */
    drop: (hash: string) =>
      exclusive(async () => {
        const wasPreconfirmed = unmined().some((b) => b.txs.some((t) => sameHash(t.hash, hash)));
        await upstream.call("anvil_dropTransaction", [hash]);
        dropped.add(hash);
        poolOrder.forget([hash]);
        return wasPreconfirmed;
      }),
    /** Leaves a pre-confirmed transaction out of its block: it lands in the next one, pre-confirmed again there. */
    defer: (hash: string) =>
      exclusive(async () => {
        const tx = unmined()
          .flatMap((b) => b.txs)
          .find((t) => sameHash(t.hash, hash));
        if (tx !== undefined) deferred.add(tx.hash);
        return tx !== undefined;
      }),
    /**
     * Holds back the transactions of `senders` (heldSenders.ts; the list replaces the held set,
     * empty releases all). Those already in anvil's pool are in no flashblock and set aside at
     * each block; the released ones kept apart go to anvil now, in nonce order, between steps.
     */
    hold: (senders: readonly string[]) =>
      exclusive(async () => {
        for (const raw of held.set(senders))
          // One that no longer fits (its nonce taken meanwhile) is left out, as a node's pool would.
          await inOrder(() =>
            upstream
              .call<string>("eth_sendRawTransaction", [raw])
              .then((hash) => poolOrder.arrived(hash)),
          ).catch(() => undefined);
        return held.senders();
      }),
    /** The canonical chain stays `blocks` behind the newest sealed pending block from the next mine on. */
    setLag: (blocksBehind: number) => exclusive(async () => void (lagBlocks = blocksBehind)),
    /** Empties the pending view in the middle of a block, with no notification, until the next block opens. */
    clear: () => exclusive(async () => void (blind = true)),
    /** The receipt of a pre-confirmed transaction not yet in a block (zero blockHash), if any; a dropped one keeps it until the block closes, as on Base. */
    preconfirmedReceipt: (hash: string): RpcReceiptObject | undefined => {
      for (const block of visible()) {
        const receipt = block.receipts.get(hash.toLowerCase());
        if (receipt !== undefined) return receipt;
      }
      return undefined;
    },
    /** Pre-confirmed logs of every pending block, oldest first (mined ones too until the chain catches up). */
    pendingLogs: () => visible().flatMap((b) => b.logs),
    /** Pre-confirmed transactions sent by `address` in blocks not yet mined (for the "pending" nonce). */
    preconfirmedCount: (address: string) =>
      (blind || view.mode !== "live" ? [] : unmined())
        .flatMap((b) => b.txs)
        .filter((t) => sameHash(t.from, address)).length,
    /** The newest block of the pending view as eth_getBlockByNumber("pending") answers it; undefined when the view holds none. */
    pendingBlock: (): PendingBlockObject | undefined => {
      const newest = visible().at(-1);
      return newest === undefined ? undefined : blockObject(newest);
    },
    /** Freezes the node's pending view where it is, empties it (null), or brings it back to life. */
    setView: (mode: PendingViewMode) =>
      exclusive(async () => {
        // A frozen view keeps copies: the sequencer goes on changing its own blocks.
        view =
          mode === "frozen"
            ? {
                mode,
                blocks: blocks.map((b) => ({ ...b, receipts: new Map(b.receipts) })),
                state: pendingState.current(),
              }
            : { mode };
        return mode;
      }),
    pendingBlockNumber: () => blocks.at(-1)?.number ?? -1,
    /**
     * What a call at "pending" runs on: the pending state as overrides on the canonical head, in
     * the newest pending block's environment; undefined when the view holds no block (the call
     * runs on the head, as a node with no pre-confirmed state answers it).
     */
    pendingCallState: async (): Promise<
      { overrides: StateOverride; env: BlockEnv } | undefined
    > => {
      await pendingState.settled();
      const newest = visible().at(-1);
      if (newest === undefined) return undefined;
      const overrides = view.mode === "frozen" ? view.state : pendingState.current();
      return { overrides, env: envOf(newest) };
    },
  };
}

export type Sequencer = ReturnType<typeof createSequencer>;
