import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { toLogRows } from "../../src/decode/toLogRows.js";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";

/**
 * Reorg rollback: a database holding BACKGROUND_LOGS finalized logs plus a 50-block unfinalized tip of
 * 10,000 logs; time the one transaction that flags the 50 orphaned blocks removed and applies the
 * 50 replacement blocks (the same transactions under new block hashes), as the head follower does:
 * one ChainChange through the store's seam (store.ts), on the SQLite backend.
 */
const BLOCKS = 50;
const LOGS = 10_000;
const BACKGROUND_LOGS = Number(process.env.BENCH_REORG_BACKGROUND ?? 1_000_000);
const TOKEN: Hex = "0x00000000000000000000000000000000000f1a54";
const TRANSFER: Hex = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const word = (n: number, salt: string): Hex =>
  `0x${salt}${n.toString(16).padStart(64 - salt.length, "0")}`;

function logs(fromBlock: number, blocks: number, perBlock: number, hashSalt: string): RpcLog[] {
  const out: RpcLog[] = [];
  for (let b = fromBlock; b < fromBlock + blocks; b++) {
    for (let i = 0; i < perBlock; i++) {
      out.push({
        address: TOKEN,
        topics: [TRANSFER, word(b * 7 + i, "0"), word(b * 13 + i, "0")],
        data: word(i + 1, ""),
        blockNumber: b,
        blockHash: word(b, hashSalt),
        blockTimestamp: 1_700_000_000 + b * 2,
        transactionHash: word(b * 100_000 + i, "7a"),
        transactionIndex: i,
        logIndex: i,
        removed: false,
      });
    }
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), "flashindex-reorg-"));
const store = await openStore(
  {
    database: { path: join(dir, "reorg.db"), url: undefined, schema: "flashindex" },
    chainId: 8453,
  },
  { metrics: createMetrics() },
);
const rows = (list: RpcLog[], status: "finalized" | "confirmed") =>
  toLogRows(list, { chainId: 8453, statusOf: () => status, source: "head", timestampOf: () => 0 })
    .rows;
/** Each block's rows, in block order, as a ChainChange carries them. */
const byBlock = (list: ReturnType<typeof rows>) => {
  const blocks = new Map<number, typeof list>();
  for (const row of list)
    blocks.set(row.blockNumber, [...(blocks.get(row.blockNumber) ?? []), row]);
  return [...blocks].map(([number, blockRows]) => ({ number, rows: blockRows }));
};
const apply = (
  kind: "head_block" | "reorg",
  orphaned: Array<{ number: number; hash: Hex }>,
  list: ReturnType<typeof rows>,
  now: number,
) => store.applyChainChange({ kind, orphaned, blocks: byBlock(list), synced: [] }, now);

const backgroundBlocks = Math.ceil(BACKGROUND_LOGS / 100);
for (let start = 0; start < backgroundBlocks; start += 100) {
  await apply(
    "head_block",
    [],
    rows(logs(start, Math.min(100, backgroundBlocks - start), 100, "b1"), "finalized"),
    1,
  );
}
const tipStart = backgroundBlocks;
await apply("head_block", [], rows(logs(tipStart, BLOCKS, LOGS / BLOCKS, "c1"), "confirmed"), 2);
const replacement = rows(logs(tipStart, BLOCKS, LOGS / BLOCKS, "d1"), "confirmed");
const orphaned = Array.from({ length: BLOCKS }, (_, i) => ({
  number: tipStart + i,
  hash: word(tipStart + i, "c1"),
}));

const started = performance.now();
const { removed } = await apply("reorg", orphaned, replacement, 3);
const rollbackMs = performance.now() - started;
const live = (await store.countRowsByStatus(TOKEN)).reduce(
  (sum, { status, transfers }) => sum + (status === "confirmed" ? transfers : 0),
  0,
);
await store.close();
rmSync(dir, { recursive: true, force: true });
if (removed !== LOGS || live !== LOGS)
  throw new Error(`rollback was wrong: removed ${removed}, live ${live}`);
console.log(
  JSON.stringify({ blocks: BLOCKS, logs: LOGS, backgroundLogs: BACKGROUND_LOGS, rollbackMs }),
);
