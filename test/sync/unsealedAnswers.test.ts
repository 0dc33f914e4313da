import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { answerText, createHttpTransport } from "../../src/chain/httpTransport.js";
import { checkAnswer } from "../../src/chain/getLogs.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { PRECONFIRMED_BLOCK_HASH } from "../../src/rows/rpcLog.js";
import { RetryableError } from "../../src/errors/base.js";
import { RpcResponseError } from "../../src/errors/rpc.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { scanWindowAnswer } from "../../src/decode/scanWindowAnswer.js";
import type { WindowAnswer } from "../../src/decode/decodedWindow.js";
import {
  decodeParsedWindowAnswer,
  decodeWindowAnswer,
} from "../../src/sync/historical/windowAnswer.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { sqliteBackend, stopFileBackends } from "../helpers/backends.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

type Log = Record<string, unknown>;
/** How an answer is spoiled: the logs of `block` in the answer's result, changed in place or added to. */
type Spoil = (result: Log[], block: number) => void;

/** A Flashblocks node answering its pre-confirmed view inside a canonical range: the block's logs carry the zero hash. */
const zeroHash: Spoil = (result, block) => {
  for (const log of result)
    if (Number(log.blockNumber) === block) log.blockHash = PRECONFIRMED_BLOCK_HASH;
};
/** A second, different log at a (blockNumber, logIndex) the answer already holds. */
const twoLogsAtOneIndex: Spoil = (result, block) => {
  const at = result.findIndex((log) => Number(log.blockNumber) === block);
  const twin = {
    ...result[at]!,
    transactionHash: `0x${"7e".repeat(32)}`,
    data: `0x${"0".repeat(63)}1`,
  };
  result.splice(at + 1, 0, twin);
};

let chain: PaymentChain;
let head: number;
/** A block holding payment logs, inside the backfill. */
let spoiled: number;

beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(3);
  head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
  const logs = (await chain.publicClient.request({
    method: "eth_getLogs",
    params: [
      {
        fromBlock: `0x${chain.deployBlock.toString(16)}`,
        toBlock: `0x${head.toString(16)}`,
        address: chain.token,
        topics: [[...PAYMENT_TOPICS]],
      },
    ],
  } as never)) as Log[];
  spoiled = Number(logs[Math.floor(logs.length / 2)]!.blockNumber);
}, 60_000);
afterAll(async () => {
  await chain?.stop();
  await stopFileBackends();
});

/** One real eth_getLogs answer body for blocks from..to, as the node sent it. */
async function realAnswer(
  from: number,
  to: number,
): Promise<{ jsonrpc: string; id: number; result: Log[] }> {
  const result = (await chain.publicClient.request({
    method: "eth_getLogs",
    params: [
      {
        fromBlock: `0x${from.toString(16)}`,
        toBlock: `0x${to.toString(16)}`,
        address: chain.token,
        topics: [[...PAYMENT_TOPICS]],
      },
    ],
  } as never)) as Log[];
  return { jsonrpc: "2.0", id: 7, result };
}

describe.each([
  [
    "a zero (pre-confirmed) block hash inside a canonical range",
    zeroHash,
    /pre-confirmed log \(zero block hash\) in block \d+/,
  ],
  [
    "two different logs at one (blockNumber, logIndex)",
    twoLogsAtOneIndex,
    /two logs at block \d+, logIndex \d+/,
  ],
] as const)("an answer holding %s", (_, spoil, reason) => {
  test("is damaged on both decode paths of a backfill window, and in the check of every other eth_getLogs", async () => {
    const answer = await realAnswer(spoiled - 1, spoiled + 1);
    spoil(answer.result, spoiled);
    const filter = {
      from: spoiled - 1,
      to: spoiled + 1,
      addresses: [chain.token.toLowerCase() as `0x${string}`],
      topic0: [...PAYMENT_TOPICS],
    };
    const window = (body: string | Uint8Array): WindowAnswer => ({
      body,
      id: 7,
      endpoint: "http://node.test",
      filter,
      chainId: 8453,
      finalized: 0,
    });
    const bytes = new TextEncoder().encode(JSON.stringify(answer));
    // The fast scanner leaves it to the full path, which refuses it, from bytes or text.
    expect(scanWindowAnswer(window(bytes))).toBeUndefined();
    expect(decodeWindowAnswer(window(bytes))).toEqual({
      kind: "damaged",
      message: expect.stringMatching(reason),
    });
    expect(decodeParsedWindowAnswer(window(JSON.stringify(answer)))).toEqual({
      kind: "damaged",
      message: expect.stringMatching(reason),
    });
    // Head blocks and block-by-hash reads go through checkAnswer.
    expect(() => checkAnswer(answer.result, filter)).toThrow(RpcResponseError);
    expect(() => checkAnswer(answer.result, filter)).toThrow(reason);
  });

  test("stops the backfill loudly (exit 75) after its retries, with nothing of that window stored", async () => {
    const config = testConfig({
      attribution: { enabled: false },
      rpc: {
        http: [chain.anvil.httpUrl],
        retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5 },
      },
      tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
      backfill: { windowBlocks: 4, concurrency: 1 },
      finality: { depth: 0 },
      database: await sqliteBackend.freshDatabase(),
    });
    const deps = testDeps(config);
    const inner = createHttpTransport({ timeoutMs: 10_000, maxResponseBytes: 50_000_000 });
    let spoiledAnswers = 0;
    const client = createRpcClient(deps, {
      transport: async (url, body, signal) => {
        const text = answerText(await inner(url, body, signal));
        const request = JSON.parse(body) as {
          method?: string;
          params?: Array<{ fromBlock: string; toBlock: string }>;
        };
        if (request.method !== "eth_getLogs") return text;
        const from = Number(request.params![0]!.fromBlock);
        const to = Number(request.params![0]!.toBlock);
        if (spoiled < from || spoiled > to) return text;
        const answer = JSON.parse(text) as { result: Log[] };
        spoil(answer.result, spoiled);
        spoiledAnswers++;
        return JSON.stringify(answer);
      },
    });
    const store = await openStore(config, { metrics: deps.metrics });
    const db = await sqliteBackend.reader(config.database);
    try {
      const error = (await backfill(
        createSyncDeps({ ...deps, client }, store),
        { to: head, finalized: head },
        { decodeThreadAfterLogs: 0 },
      ).catch((e: unknown) => e)) as RetryableError;
      expect(error).toBeInstanceOf(RetryableError);
      expect(error.exitCode).toBe(75);
      expect(error.shortMessage).toMatch(reason);
      expect(spoiledAnswers).toBe(3);
      const [covering] = await db.all<{ n: number }>(
        `SELECT COUNT(*) AS n FROM synced_ranges WHERE from_block <= ${spoiled} AND to_block >= ${spoiled}`,
      );
      expect(covering!.n).toBe(0);
      const [stored] = await db.all<{ n: number }>(
        `SELECT COUNT(*) AS n FROM logs WHERE block_number = ${spoiled}`,
      );
      expect(stored!.n).toBe(0);
    } finally {
      await store.close();
      await db.close();
    }
  });
});
