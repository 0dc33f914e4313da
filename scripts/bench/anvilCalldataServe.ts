import type { Hex } from "viem";
import { processCpuSeconds } from "./cliBackfill.js";
import { startSavedAnvilChain, type ChainShape } from "./savedAnvilChain.js";

/**
 * How long anvil alone takes to serve a saved chain's calldata, the ways a backfill can ask for it:
 * whole blocks (`eth_getBlockByNumber(n, true)`), the token transactions by hash, block headers with
 * hashes only, raw blocks (`debug_getRawBlock`), in batches of 50 / 10 / 1 calls, 1 or 4 requests at
 * a time. Prints one JSON line per way: wall ms, anvil's CPU seconds, bytes received.
 * `node dist/scripts/bench/anvilCalldataServe.js [logs] [shape] [blocks]` (defaults 200000 base-mix 1000).
 */
const logs = Number(process.argv[2] ?? 200_000);
const shape = (process.argv[3] ?? "base-mix") as ChainShape;
const blockCount = Number(process.argv[4] ?? 1_000);

const chain = await startSavedAnvilChain(logs, shape);
const url = chain.anvil.httpUrl;
const pid = chain.anvil.process.pid!;
const anvilCpuSeconds = () => processCpuSeconds(pid);

let nextId = 1;
async function post(calls: Array<{ method: string; params: unknown[] }>): Promise<string> {
  const body = JSON.stringify(calls.map((call) => ({ jsonrpc: "2.0", id: nextId++, ...call })));
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return response.text();
}

try {
  const first = chain.deployBlock + 1;
  const blocks = Array.from(
    { length: Math.min(blockCount, chain.head - chain.deployBlock) },
    (_, i) => first + i,
  );
  const hex = (n: number) => `0x${n.toString(16)}`;
  // The token transactions of those blocks, as a backfill learns them from the logs.
  const logAnswer = JSON.parse(
    await post([
      {
        method: "eth_getLogs",
        params: [
          { address: chain.token, fromBlock: hex(blocks[0]!), toBlock: hex(blocks.at(-1)!) },
        ],
      },
    ]),
  ) as Array<{ result: Array<{ transactionHash: Hex; blockNumber: Hex }> }>;
  const tokenTxs = [...new Set(logAnswer[0]!.result.map((log) => log.transactionHash))];
  const perBlockTxs = tokenTxs.length / blocks.length;

  type Way = {
    name: string;
    calls: Array<{ method: string; params: unknown[] }>;
    callsPerBlock: number;
  };
  const ways: Way[] = [
    {
      name: "full blocks",
      calls: blocks.map((n) => ({ method: "eth_getBlockByNumber", params: [hex(n), true] })),
      callsPerBlock: 1,
    },
    {
      name: "token txs by hash",
      calls: tokenTxs.map((hash) => ({ method: "eth_getTransactionByHash", params: [hash] })),
      callsPerBlock: perBlockTxs,
    },
    {
      name: "headers, tx hashes",
      calls: blocks.map((n) => ({ method: "eth_getBlockByNumber", params: [hex(n), false] })),
      callsPerBlock: 1,
    },
    {
      name: "raw blocks",
      calls: blocks.map((n) => ({ method: "debug_getRawBlock", params: [hex(n)] })),
      callsPerBlock: 1,
    },
  ];
  const probe = JSON.parse(await post([ways[3]!.calls[0]!])) as Array<{ error?: unknown }>;
  if (probe[0]?.error !== undefined) {
    process.stderr.write(`debug_getRawBlock: ${JSON.stringify(probe[0].error)}\n`);
    ways.pop();
  }
  for (let round = 0; round < 2; round++) {
    for (const way of ways) {
      for (const batchBlocks of [50, 10, 1]) {
        for (const concurrency of [1, 4]) {
          const batch = Math.max(1, Math.round(batchBlocks * way.callsPerBlock));
          const batches: Way["calls"][] = [];
          for (let i = 0; i < way.calls.length; i += batch)
            batches.push(way.calls.slice(i, i + batch));
          const cpuBefore = anvilCpuSeconds();
          const started = performance.now();
          let bytes = 0;
          let next = 0;
          await Promise.all(
            Array.from({ length: concurrency }, async () => {
              while (next < batches.length) {
                const text = await post(batches[next++]!);
                bytes += text.length;
              }
            }),
          );
          const ms = Math.round(performance.now() - started);
          const line = {
            round,
            way: way.name,
            blocks: blocks.length,
            calls: way.calls.length,
            batchCalls: batch,
            concurrency,
            ms,
            anvilCpuS: +(anvilCpuSeconds() - cpuBefore).toFixed(2),
            mb: +(bytes / 1e6).toFixed(2),
          };
          process.stdout.write(`${JSON.stringify(line)}\n`);
        }
      }
    }
  }
} finally {
  await chain.anvil.stop();
}
