import { Attribution as OxAttribution } from "ox/erc8021";
import { concat, createWalletClient, encodeFunctionData, http, pad, toHex, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createAttributor } from "../../src/attribution/attributeLogs.js";
import { createHttpTransport, type HttpTransport } from "../../src/chain/httpTransport.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { unpackAttribution } from "../../src/rows/packedAttribution.js";
import { packAttribution } from "../../src/decode/packAttribution.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { createWindowDecoder } from "../../src/sync/historical/windowDecoder.js";
import { fetchWindowRows } from "../../src/sync/fetchLogRows.js";
import { testConfig, testDeps } from "../helpers/context.js";

/*
 * A backfill window's calldata against a real anvil: a block holding several of the window's
 * transactions is read whole, in one call; a block holding one, by that transaction's hash.
 */

let anvil: Anvil;
let token: Hex;
let blocks: { many: number; one: number };
const [sender, other] = ANVIL_PRIVATE_KEYS.slice(0, 2).map((key) =>
  privateKeyToAccount(key as Hex),
);
const holder = (n: number) => pad(toHex(0x5000 + n), { size: 20 });

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  ({ address: token } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0] as Hex,
  }));
  const rpc = (method: string, params: unknown[] = []) =>
    fetch(anvil.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    }).then(async (r) => ((await r.json()) as { result: unknown }).result);
  const send = (account: typeof sender, to: Hex, data: Hex) =>
    createWalletClient({ account: account!, transport: http(anvil.httpUrl) }).sendTransaction({
      to,
      data,
      gas: 300_000n,
      chain: null,
    });
  const emit = (n: number, suffix: Hex = "0x") =>
    concat([
      encodeFunctionData({
        abi: flashTestTokenAbi,
        functionName: "emitTransferEvents",
        args: [[holder(n)], [holder(n + 1)], [BigInt(n)]],
      }),
      suffix,
    ]);
  await rpc("evm_setAutomine", [false]);
  // One block: three token transactions (one with a builder code) among two that move no token.
  await send(sender, token, emit(1));
  await send(other, holder(90), "0xdeadbeef");
  await send(sender, token, emit(2, OxAttribution.toDataSuffix({ codes: ["bc_b8nos5a8"] })));
  await send(sender, token, emit(3));
  await send(other, holder(91), "0x");
  await rpc("evm_mine");
  // The next: one token transaction.
  await send(sender, token, emit(4));
  await rpc("evm_mine");
  const head = Number(await rpc("eth_blockNumber"));
  blocks = { many: head - 1, one: head };
}, 60_000);
afterAll(() => anvil?.stop());

describe("a backfill window's calldata", () => {
  test("costs one call per block: a block of several wanted transactions whole, a block of one by hash; attributed as by hash", async () => {
    const config = testConfig({
      rpc: { http: [anvil.httpUrl] },
      tokens: [{ address: token, startBlock: blocks.many }],
    });
    const deps = testDeps(config);
    const inner = createHttpTransport({ timeoutMs: 5_000, maxResponseBytes: 1e8 });
    const sent: string[] = [];
    // No settings: every request is sent from this thread, where it is counted.
    const transport: HttpTransport = (url, body, signal, timeoutMs) => {
      const calls = [JSON.parse(body) as { method: string } | Array<{ method: string }>].flat();
      sent.push(...calls.map((call) => call.method));
      return inner(url, body, signal, timeoutMs);
    };
    const client = createRpcClient(deps, { transport });
    const decoder = createWindowDecoder({ threadAfterLogs: Number.MAX_SAFE_INTEGER });
    const filter = {
      from: blocks.many,
      to: blocks.one,
      addresses: [token.toLowerCase() as Hex],
      topic0: [...PAYMENT_TOPICS],
    };
    const window = await fetchWindowRows(
      { client, logger: deps.logger, metrics: deps.metrics, chainId: config.chainId },
      decoder,
      filter,
      blocks.one,
    );
    expect(window.rows.count).toBe(4);
    expect(window.blocks.map(([number]) => number)).toEqual([blocks.many, blocks.one]);

    const attributor = createAttributor({
      metrics: deps.metrics,
      chainId: config.chainId,
      store: { unattributed: async (hashes) => [...hashes] },
    });
    sent.length = 0;
    const byWindow = unpackAttribution(await attributor.attributeWindow(client, decoder, window));
    expect(sent.sort()).toEqual(["eth_getBlockByNumber", "eth_getTransactionByHash"]);

    // The same transactions by hash, one call each (the live path), attribute to the same rows.
    const byHash = unpackAttribution(
      packAttribution(await attributor.attribute(client, window.txHashes), 0),
    );
    const withoutFetchedAt = (rows: typeof byWindow) =>
      rows
        .map((t) => ({ ...t, transaction: t.transaction.slice(0, -1) }))
        .sort((a, b) => String(a.transaction[0]).localeCompare(String(b.transaction[0])));
    expect(byWindow).toHaveLength(4);
    expect(withoutFetchedAt(byWindow)).toEqual(withoutFetchedAt(byHash));
    expect(byWindow.some((t) => t.transaction.includes("codes"))).toBe(true);
    await decoder.close();
  });
});
