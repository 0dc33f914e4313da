import type { Hex } from "viem";
import { getBlockHeader, type BlockHeader } from "../../chain/blockHeaders.js";
import { RpcResponseError } from "../../errors/rpc.js";
import type { RpcClient } from "../../chain/rpcClient.js";
import type { LogRow, LogStatus } from "../../rows/logRow.js";
import type { TokenConfig } from "../../config/types.js";
import type { WatchScope } from "../watchScope.js";
import type { Logger } from "../../ops/logger.js";
import type { Metrics } from "../../ops/metrics.js";
import type { Store } from "../../store/store.js";
import { splitRange } from "../../blockRanges.js";
import { getBlockRows } from "./getBlockRows.js";
import { fetchLogRows } from "../fetchLogRows.js";

export type SettleDeps = {
  client: RpcClient;
  logger: Logger;
  metrics: Metrics;
  store: Store;
  chainId: number;
  tokens: ReadonlyArray<Pick<TokenConfig, "key" | "startBlock" | "watch">>;
  /** The members and selections of the tokens (watchScope.ts). */
  watchScope: WatchScope;
  statusAt: (blockNumber: number) => LogStatus;
  /** Blocks per eth_getLogs when re-reading the unfinalized range. */
  windowBlocks: number;
};

/**
 * After a (re)start or a long gap, brings what is stored in line with the canonical chain before the
 * follower takes over: whatever happened while we were away (or killed mid-write) is settled here.
 *  1. Every unfinalized block (the tracked `headers`) is read again, whole: a reorg while we were
 *     away may have replaced a block that held none of our logs by one that holds some, and the
 *     synced ranges alone would never look at it again. Rows of other branches at those heights are
 *     flagged removed, missing rows inserted, pre-confirmed twins promoted, unlanded ones dropped.
 *  2. Rows stored as confirmed below the unfinalized range are compared with their block's
 *     canonical hash (they became final while we were away, or were reorged out first).
 */
export async function settleAfterRestart(
  deps: SettleDeps,
  headers: readonly BlockHeader[],
): Promise<void> {
  const tracked = new Map(headers.map((h) => [h.number, h]));
  const canonical = await readUnfinalized(deps, tracked);
  const stale = await staleBelow(deps, tracked);
  const { removed } = await deps.store.applyChainChange(
    {
      kind: "restart_settle",
      orphaned: stale.blocks,
      blocks: [...stale.replacements, ...canonical].map(([number, rows]) => ({
        number,
        rows,
        canonicalHash: tracked.get(number)?.hash,
      })),
      synced: headers.flatMap((header) =>
        deps.watchScope
          .membersAt(header.number)
          .map((token) => ({ token, range: { from: header.number, to: header.number } })),
      ),
    },
    Date.now(),
  );
  deps.metrics.removedLogs.inc({ via: "restart_check" }, removed);
  if (removed > 0 || stale.blocks.length > 0)
    deps.logger.warn({
      msg: "Settled rows of blocks reorged out while away",
      removed_logs: removed,
      blocks: stale.blocks.map((b) => b.number),
    });
}

/** The canonical rows of every tracked block, by number, read by range and checked against the tracked hashes. */
async function readUnfinalized(
  deps: SettleDeps,
  tracked: ReadonlyMap<number, BlockHeader>,
): Promise<Map<number, LogRow[]>> {
  const rows = new Map<number, LogRow[]>([...tracked.keys()].map((n) => [n, []]));
  const numbers = [...tracked.keys()];
  if (numbers.length === 0) return rows;
  for (const piece of splitRange(
    { from: Math.min(...numbers), to: Math.max(...numbers) },
    deps.windowBlocks,
  )) {
    const members = deps.watchScope.membersAt(piece.to);
    if (members.length === 0) continue;
    const fetched = await fetchLogRows(
      deps,
      { ...piece, ...(await deps.watchScope.selection(members)) },
      {
        statusOf: deps.statusAt,
        source: "head",
        timestampOf: (n) => tracked.get(n)?.timestamp,
        strict: true,
      },
    );
    for (const row of fetched) {
      if (tracked.get(row.blockNumber)?.hash !== row.blockHash)
        throw new RpcResponseError(
          `the chain moved while re-reading unfinalized blocks (block ${row.blockNumber})`,
        );
      const start = deps.tokens.find((t) => t.key === row.address)?.startBlock ?? 0;
      if (row.blockNumber >= start) rows.get(row.blockNumber)!.push(row);
    }
  }
  return rows;
}

/** Blocks below the tracked range whose stored confirmed rows carry a hash the chain no longer has, with their canonical rows. */
async function staleBelow(deps: SettleDeps, tracked: ReadonlyMap<number, BlockHeader>) {
  // One header per block number: it decides staleness and, when stale, is the block to re-read.
  const headers = new Map<number, BlockHeader | undefined>();
  const blocks: Array<{ number: number; hash: Hex }> = [];
  for (const block of await deps.store.unsettledBlocks()) {
    if (tracked.has(block.number)) continue;
    if (!headers.has(block.number))
      headers.set(block.number, await getBlockHeader(deps.client, block.number));
    if (headers.get(block.number)?.hash !== block.hash) blocks.push(block);
  }
  const replacements = new Map<number, LogRow[]>();
  for (const number of new Set(blocks.map((b) => b.number))) {
    const header = headers.get(number);
    const tokens = await deps.watchScope.selection(deps.watchScope.membersAt(number));
    if (header !== undefined)
      replacements.set(
        number,
        await getBlockRows({ ...deps, tokens }, header, deps.statusAt(number)),
      );
  }
  return { blocks, replacements };
}
