import { createPublicClient, http, pad, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
} from "../../src/authorization/eip3009.js";
import { startDemoTraffic } from "../../src/devnet/demoTraffic.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { waitFor } from "../helpers/devnetPayments.js";

let devnet: Devnet;

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 200, flashblockIntervalMs: 50, port: 0 });
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
});

describe("startDemoTraffic()", () => {
  test("some payments and cancels come from the devnet's smart-contract wallet, with its long ERC-1271 signatures", async () => {
    expect(devnet.wallet).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const client = createPublicClient({ transport: http(devnet.httpUrl) });
    const errors: unknown[] = [];
    const traffic = startDemoTraffic(devnet, {
      paymentsPerSecond: 40,
      onError: (error) => errors.push(error),
    });
    const walletTopic = pad(devnet.wallet!.toLowerCase() as Hex);
    try {
      const logs = await waitFor(
        async () => {
          const found = await client.getLogs({
            address: devnet.token,
            fromBlock: 0n,
            toBlock: "latest",
          });
          const fromWallet = found.filter((log) => log.topics[1] === walletTopic);
          const used = fromWallet.filter((log) => log.topics[0] === AUTHORIZATION_USED_TOPIC);
          const canceled = fromWallet.filter(
            (log) => log.topics[0] === AUTHORIZATION_CANCELED_TOPIC,
          );
          return used.length >= 2 && canceled.length >= 1 && { used, canceled };
        },
        30_000,
        "authorizations of the wallet to be used and canceled",
      );
      const tx = await client.getTransaction({ hash: logs.used[0]!.transactionHash! });
      // transferWithAuthorization or receiveWithAuthorization, bytes overload.
      expect(["0xcf092995", "0x88b7ab63"]).toContain(tx.input.slice(0, 10));
    } finally {
      traffic.stop();
    }
    expect(errors).toEqual([]);
  }, 60_000);
});
