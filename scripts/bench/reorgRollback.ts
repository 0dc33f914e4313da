import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { toLogRows } from "../../src/decode/toLogRows.js";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import { createLifecycle } from "../../src/store/sqlite/lifecycle.js";
import { createLogWriter } from "../../src/store/sqlite/logWriter.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";

/**
 * Reorg rollback: a database holding BACKGROUND_LOGS finalized logs plus a 50-block unfinalized tip of
 * 10,000 logs; time the one transaction that flags the 50 orphaned blocks removed and applies the
 * 50 replacement blocks (the same transactions under new block hashes), as the head follower does.
 */
const BLOCKS = 50;
const LOGS = 10_000;
const BACKGROUND_LOGS = Number(process.env.BENCH_REORG_BACKGROUND ?? 1_000_000);
const TOKEN: Hex = "0x00000000000000000000000000000000000f1a54";
const TRANSFER: Hex = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const word = (n: number, salt: string): Hex => `0x${salt}${n.toString(16).padStart(64 - salt.length, "0")}`;

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
const db = openDatabase(join(dir, "reorg.db"), 8453);
const writer = createLogWriter(db);
const lifecycle = createLifecycle(db);
const rows = (list: RpcLog[], status: "finalized" | "confirmed") =>
  toLogRows(list, { chainId: 8453, statusOf: () => status, source: "head", timestampOf: () => 0 }).rows;

const backgroundBlocks = Math.ceil(BACKGROUND_LOGS / 100);
for (let start = 0; start < backgroundBlocks; start += 100) {
  db.transaction(() => writer.insertRows(rows(logs(start, Math.min(100, backgroundBlocks - start), 100, "b1"), "finalized"), 1))();
}
const tipStart = backgroundBlocks;
db.transaction(() => writer.insertRows(rows(logs(tipStart, BLOCKS, LOGS / BLOCKS, "c1"), "confirmed"), 2))();
const replacement = rows(logs(tipStart, BLOCKS, LOGS / BLOCKS, "d1"), "confirmed");

const started = performance.now();
let removed = 0;
let removedMs = 0;
db.transaction(() => {
  for (let b = tipStart; b < tipStart + BLOCKS; b++) removed += lifecycle.removeBlock({ number: b, hash: word(b, "c1") }, 3);
  removedMs = performance.now() - started;
  for (let b = tipStart; b < tipStart + BLOCKS; b++) lifecycle.applyCanonicalBlock(b, replacement.filter((r) => r.blockNumber === b), 3);
}).immediate();
if (process.env.BENCH_DEBUG) console.error({ removedMs });
const rollbackMs = performance.now() - started;
const live = (db.prepare("SELECT COUNT(*) AS n FROM live_transfers WHERE block_number >= ?").get(tipStart) as { n: number }).n;
db.close();
rmSync(dir, { recursive: true, force: true });
if (removed !== LOGS || live !== LOGS) throw new Error(`rollback was wrong: removed ${removed}, live ${live}`);
console.log(JSON.stringify({ blocks: BLOCKS, logs: LOGS, backgroundLogs: BACKGROUND_LOGS, rollbackMs }));
