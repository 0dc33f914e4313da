import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { readTokenDomainOverRpc } from "../../src/authorization/tokenReads.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { withViem } from "../../src/chain/viemOverRpcClient.js";
import { ANVIL_PRIVATE_KEYS, startAnvil } from "../../src/devnet/anvil.js";
import { deployTestToken } from "../../src/devnet/deployToken.js";
import { FatalError, RetryableError } from "../../src/errors/base.js";
import { testConfig, testDeps } from "../helpers/context.js";

let anvil: Awaited<ReturnType<typeof startAnvil>>;
let token: `0x${string}`;
/** Answers every request with HTTP 503: an endpoint that is down. */
const down = createServer((_request, response) => response.writeHead(503).end());

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 8453 });
  ({ address: token } = await deployTestToken({
    rpcUrl: anvil.httpUrl,
    privateKey: ANVIL_PRIVATE_KEYS[0],
    mint: [],
  }));
  await new Promise<void>((resolve) => down.listen(0, "127.0.0.1", resolve));
}, 60_000);
afterAll(async () => {
  await anvil?.stop();
  down.close();
});

const downUrl = () => `http://127.0.0.1:${(down.address() as AddressInfo).port}`;

describe("viem actions over the project's RpcClient", () => {
  test("read the token's domain through the client's failover, and count the calls in its metrics", async () => {
    const deps = testDeps(
      testConfig({
        rpc: {
          http: [downUrl(), anvil.httpUrl],
          retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 2 },
        },
        logLevel: "silent",
      }),
    );
    const client = createRpcClient(deps);
    const domain = await readTokenDomainOverRpc(client, token, 8453);
    expect(domain).toEqual({
      name: "USD Coin",
      version: "2",
      chainId: 8453,
      verifyingContract: token,
    });
    const calls = (
      await deps.metrics.registry.getSingleMetricAsString("flashindex_rpc_requests_total")
    )
      .split("\n")
      .filter((l) => l.includes('method="eth_call"'));
    expect(calls.some((l) => l.includes('outcome="ok"'))).toBe(true);
    expect(calls.some((l) => l.includes('outcome="retryable"'))).toBe(true);
  });

  test("an endpoint that stays down is the client's RetryableError (exit 75), not viem's; what viem cannot decode is a FatalError", async () => {
    const deps = testDeps(
      testConfig({
        rpc: { http: [downUrl()], retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 } },
        logLevel: "silent",
      }),
    );
    await expect(readTokenDomainOverRpc(createRpcClient(deps), token, 8453)).rejects.toBeInstanceOf(
      RetryableError,
    );
    const live = createRpcClient(
      testDeps(testConfig({ rpc: { http: [anvil.httpUrl] }, logLevel: "silent" })),
    );
    // An address without code answers "0x" to name().
    await expect(
      withViem(live, (viem) =>
        viem.readContract({
          address: "0x000000000000000000000000000000000000dEaD",
          abi: [
            {
              type: "function",
              name: "name",
              inputs: [],
              outputs: [{ type: "string" }],
              stateMutability: "view",
            },
          ],
          functionName: "name",
        }),
      ),
    ).rejects.toBeInstanceOf(FatalError);
  });
});
