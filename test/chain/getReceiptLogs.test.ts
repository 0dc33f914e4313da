import type { Hex } from "viem";
import { afterEach, describe, expect, test } from "vitest";
import { getReceiptLogs } from "../../src/chain/getReceiptLogs.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { word } from "../helpers/fixtures.js";
import {
  startScriptedRpcServer,
  type Reply,
  type RpcRequest,
} from "../helpers/scriptedRpcServer.js";

const servers: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/** A client of a scripted node (chain 8453) that retries quickly. */
async function clientOf(answer: (request: RpcRequest) => Reply) {
  const server = await startScriptedRpcServer((request) =>
    request.method === "eth_chainId" ? { result: "0x2105" } : answer(request),
  );
  servers.push(server);
  const deps = testDeps(
    testConfig({
      rpc: { http: [server.url], retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 2 } },
    }),
  );
  return { client: createRpcClient(deps), requests: server.requests };
}

const TX = word("a1");
const OTHER = word("b2");
const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const log = (tx: Hex, logIndex: number) => ({
  address: TOKEN,
  topics: [word("dd")],
  data: "0x",
  blockNumber: "0x7",
  blockHash: word("b7"),
  transactionHash: tx,
  transactionIndex: "0x0",
  logIndex: `0x${logIndex.toString(16)}`,
  removed: false,
});
const receipt = (tx: Hex, logs: unknown[]) => ({ transactionHash: tx, status: "0x1", logs });

describe("getReceiptLogs()", () => {
  test("returns each receipt's logs as the mapping reads them; a transaction without a receipt is left out", async () => {
    const { client } = await clientOf((request) => ({
      result: request.params[0] === TX ? receipt(TX, [log(TX, 4), log(TX, 5)]) : null,
    }));
    const found = await getReceiptLogs(client, [TX, OTHER]);
    expect([...found.keys()]).toEqual([TX]);
    expect(found.get(TX)).toEqual([
      { address: TOKEN, topics: [word("dd")], data: "0x", logIndex: 4 },
      { address: TOKEN, topics: [word("dd")], data: "0x", logIndex: 5 },
    ]);
  });

  test.each([
    ["the receipt of another transaction", receipt(OTHER, [])],
    ["a log of another transaction", receipt(TX, [log(TX, 4), log(OTHER, 5)])],
    ["a malformed log", receipt(TX, [{ ...log(TX, 4), address: "0x12" }])],
    ["no logs array", { transactionHash: TX }],
  ])("a damaged answer (%s) is asked again, and never returned", async (_, damaged) => {
    let asked = 0;
    const { client } = await clientOf(() => ({
      result: ++asked === 1 ? damaged : receipt(TX, [log(TX, 4)]),
    }));
    const found = await getReceiptLogs(client, [TX]);
    expect(asked).toBe(2);
    expect(found.get(TX)).toEqual([
      { address: TOKEN, topics: [word("dd")], data: "0x", logIndex: 4 },
    ]);
  });

  test("an answer that stays damaged fails with what was wrong", async () => {
    const { client } = await clientOf(() => ({ result: receipt(OTHER, []) }));
    await expect(getReceiptLogs(client, [TX])).rejects.toThrow(
      /eth_getTransactionReceipt\(0x0*a1\) answered the receipt of transaction 0x0*b2/,
    );
  });
});
