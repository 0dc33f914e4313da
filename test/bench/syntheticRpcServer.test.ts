import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startSyntheticRpcServer, txHash } from "../../scripts/bench/syntheticRpcServer.js";

/**
 * The bench's synthetic node serves answers rendered before the clock starts (its own CPU would
 * otherwise compete with the indexer's): they must be the very bytes it builds per request, or the
 * bench would measure another chain.
 */
const chain = {
  chainId: 8453,
  token: "0x00000000000000000000000000000000000f1a54",
  blocks: 300,
  logsPerBlock: 20,
};
const getLogs = (id: number, from: number, to: number) => ({
  jsonrpc: "2.0",
  id,
  method: "eth_getLogs",
  params: [{ fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` }],
});
const getBlock = (id: number, n: number) => ({
  jsonrpc: "2.0",
  id,
  method: "eth_getBlockByNumber",
  params: [`0x${n.toString(16)}`, true],
});
const getTransaction = (id: number, k: number) => ({
  jsonrpc: "2.0",
  id,
  method: "eth_getTransactionByHash",
  params: [txHash(k)],
});

describe("the bench's synthetic node", () => {
  let built: Awaited<ReturnType<typeof startSyntheticRpcServer>>;
  let rendered: Awaited<ReturnType<typeof startSyntheticRpcServer>>;
  beforeAll(async () => {
    built = await startSyntheticRpcServer(chain);
    // The first 200 blocks rendered: requests past them are built, as a longer chain's would be.
    rendered = await startSyntheticRpcServer(chain, {
      prerender: { blocks: 200, transactions: true },
    });
  });
  afterAll(async () => {
    await built.close();
    await rendered.close();
  });
  const post = async (url: string, body: unknown) =>
    (await fetch(url, { method: "POST", body: JSON.stringify(body) })).text();

  test.each([
    ["a window of rendered blocks", getLogs(7, 0, 99)],
    ["one rendered block", getLogs(8, 16, 16)],
    ["a window past the rendered blocks", getLogs(9, 192, 299)],
    ["a window past the chain's head", getLogs(10, 250, 400)],
    [
      "a batch of rendered transactions",
      [getTransaction(1, 5 * 10_000 + 3), getTransaction(2, 199 * 10_000 + 19)],
    ],
    [
      "a batch with a transaction past them",
      [getTransaction(1, 5 * 10_000 + 3), getTransaction(2, 250 * 10_000)],
    ],
    [
      "a batch of rendered blocks with their transactions, beside a transaction",
      [getBlock(1, 0), getBlock(2, 199), getTransaction(3, 7 * 10_000 + 2)],
    ],
    ["a batch with a block past them", [getBlock(1, 5), getBlock(2, 250)]],
    ["another method", { jsonrpc: "2.0", id: 3, method: "eth_chainId", params: [] }],
  ])("answers %s with the bytes it would build", async (_, body) => {
    const expected = await post(built.url, body);
    expect(JSON.parse(expected)).toBeTruthy();
    expect(await post(rendered.url, body)).toBe(expected);
  });
});
