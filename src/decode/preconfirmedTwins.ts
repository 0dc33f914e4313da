import type { Hex } from "viem";
import type { RpcLog } from "../rows/rpcLog.js";

/** A log as the position rule sees it: where it is, and its position once numbered (a LogRow is one). */
type PositionedLog = Pick<RpcLog, "blockNumber" | "logIndex" | "transactionHash" | "address"> & {
  txLogPosition: number;
};

/**
 * How a pre-confirmed log is matched with its confirmed twin, in one place.
 *
 * At confirmation a log's block hash (zero while pre-confirmed) and logIndex (cumulative over the
 * pending block) change. What survives is its transaction, its token, its content (topics and data)
 * and its position among that token's indexed logs in the transaction (`txLogPosition`, 0-based in
 * logIndex order). Two logs are twins when all of these match. A position computed from a
 * `pendingLogs` stream that skipped a notification can be off; then the same content at the
 * nearest position pairs up: identical logs of one transaction are interchangeable.
 */

/** The columns a twin must share (the store looks candidates up by these). */
export type TwinContent = {
  txHash: Hex;
  address: Hex;
  topic0: Hex | null;
  topic1: Hex | null;
  topic2: Hex | null;
  topic3: Hex | null;
  data: Hex;
};

/** A stored row that could be the twin: same content, still pre-confirmed (or dropped, and landed after all). */
export type TwinCandidate = {
  id: number;
  txLogPosition: number;
  logIndex: number;
  preconfirmedAt: number | null;
};

export function twinContent(
  row: Pick<RpcLog, "transactionHash" | "address" | "topics" | "data">,
): TwinContent {
  return {
    txHash: row.transactionHash,
    address: row.address,
    topic0: row.topics[0] ?? null,
    topic1: row.topics[1] ?? null,
    topic2: row.topics[2] ?? null,
    topic3: row.topics[3] ?? null,
    data: row.data,
  };
}

/** The twin of a confirmed row among same-content candidates: the same position first, else the lowest logIndex. */
export function pickTwin<C extends TwinCandidate>(
  row: Pick<PositionedLog, "txLogPosition">,
  candidates: readonly C[],
): C | undefined {
  const samePosition = candidates.find((c) => c.txLogPosition === row.txLogPosition);
  if (samePosition !== undefined) return samePosition;
  let best: C | undefined;
  for (const candidate of candidates)
    if (best === undefined || candidate.logIndex < best.logIndex) best = candidate;
  return best;
}

/**
 * Numbers each transaction's logs per token in logIndex order, for rows that hold a whole answer
 * (a block, a window, the whole pending view, or an array-shaped pendingLogs notification).
 */
export function assignTxLogPositions(rows: PositionedLog[]): void {
  const positions = createTxLogPositions();
  // Nodes answer in (block, logIndex) order; sort only when one did not.
  const inOrder = rows.every((row, i) => i === 0 || before(rows[i - 1]!, row));
  const ordered = inOrder
    ? rows
    : [...rows].sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
  let run = "";
  for (const row of ordered) {
    const key = `${row.transactionHash}${row.address}`;
    if (key !== run) positions.startRun((run = key));
    row.txLogPosition = positions.take();
  }
}

/**
 * The position rule itself: logs taken in (block, logIndex) order are numbered per transaction and
 * token, from 0. A run of consecutive logs of one transaction and token costs a map lookup only at
 * its start (the window scan, scanWindowAnswer.ts, makes no string per log).
 */
export function createTxLogPositions() {
  const next = new Map<string, number>();
  let run: string | undefined;
  let position = 0;
  return {
    /** The logs that follow belong to the transaction and token `key` names (a key per pair, any string). */
    startRun(key: string): void {
      if (run !== undefined) next.set(run, position);
      run = key;
      position = next.get(key) ?? 0;
    },
    /** The next log's position in the current run. */
    take: (): number => position++,
  };
}

function before(a: PositionedLog, b: PositionedLog): boolean {
  return (
    a.blockNumber < b.blockNumber || (a.blockNumber === b.blockNumber && a.logIndex < b.logIndex)
  );
}

/**
 * Positions of logs that stream in one notification at a time (current Flashblocks nodes): a
 * one-log notification does not show the transaction's other logs, so they are numbered as they
 * arrive, by logIndex among those seen so far. Pending blocks older than the newest are forgotten
 * (their canonical block settles them).
 */
export function createStreamPositions() {
  const seen = new Map<string, number[]>();
  let newestBlock = -1;
  return {
    place(row: Pick<RpcLog, "blockNumber" | "transactionHash" | "address" | "logIndex">): number {
      if (row.blockNumber > newestBlock) {
        newestBlock = row.blockNumber;
        for (const key of seen.keys())
          if (Number(key.split(":")[0]) < newestBlock) seen.delete(key);
      }
      const key = `${row.blockNumber}:${row.transactionHash}:${row.address}`;
      const indexes = seen.get(key) ?? [];
      if (!indexes.includes(row.logIndex)) indexes.push(row.logIndex);
      indexes.sort((a, b) => a - b);
      seen.set(key, indexes);
      return indexes.indexOf(row.logIndex);
    },
  };
}
