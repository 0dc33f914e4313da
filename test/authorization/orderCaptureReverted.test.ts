import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  stringToHex,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  readTokenDomain,
  signTransferAuthorization,
  type TokenDomain,
} from "../../src/authorization/eip3009.js";
import { loadConfig } from "../../src/config/loadConfig.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { waitFor } from "../helpers/fixtures.js";
import { httpRpc } from "../helpers/httpRpc.js";

/*
 * `order capture` exits 0 only for a transfer the chain made (issue 40): two orders of 0.8 from a
 * payer holding 1.0, both sent before either is pre-confirmed (the devnet makes flashblocks only
 * when told), one reverts; its command exits 8 and its order records why.
 */

let devnet: Devnet;
let chain: PublicClient;
let domain: TokenDomain;
let dir: string;
let configPath: string;
let store: Store;

const admin = <T = unknown>(method: string, params: unknown[] = []) =>
  httpRpc<T>(devnet.httpUrl, method, params);

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
  chain = createPublicClient({ transport: http(devnet.httpUrl) });
  domain = await readTokenDomain(chain, devnet.token);
  dir = mkdtempSync(join(tmpdir(), "flashindex-capture-reverted-"));
  configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    database: { path: join(dir, "index.db") },
    metrics: { enabled: false },
    cancel: { receiptTimeoutMs: 20_000 },
  });
  store = await openStore(loadConfig(configPath), {
    metrics: createMetrics({ defaultMetrics: false }),
  });
}, 60_000);

afterAll(async () => {
  await store?.close();
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

async function signedOrder(payer: PrivateKeyAccount, value: bigint) {
  const message = {
    from: payer.address,
    to: privateKeyToAccount(devnet.privateKeys[2]!).address,
    value,
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600),
    nonce: keccak256(stringToHex(`reverted ${Math.random()}`)),
  };
  const { signature } = await signTransferAuthorization(payer, domain, message);
  return store.addOrder(
    {
      chainId: devnet.chainId,
      token: devnet.token,
      authorizer: payer.address,
      payee: message.to,
      value,
      validAfter: 0,
      validBefore: Number(message.validBefore),
      nonce: message.nonce,
      kind: "transfer",
      signature,
    },
    Date.now(),
  );
}

describe("order capture of a transfer that reverts", () => {
  test("exits 8 (reverted) while the other order of the same payer exits 0; the reverted order is authorized again with cause capture_reverted", async () => {
    const payer = privateKeyToAccount(keccak256(stringToHex(`reverted payer ${Math.random()}`)));
    const deployer = createWalletClient({
      account: privateKeyToAccount(devnet.privateKeys[0]!),
      transport: http(devnet.httpUrl),
    });
    await deployer.writeContract({
      address: devnet.token,
      abi: flashTestTokenAbi,
      functionName: "mint",
      args: [payer.address, 1_000_000n],
      chain: null,
      nonce: await chain.getTransactionCount({
        address: deployer.account.address,
        blockTag: "pending",
      }),
    });
    await admin("devnet_flashblock");
    await admin("devnet_mine");
    const orders = [await signedOrder(payer, 800_000n), await signedOrder(payer, 800_000n)];

    const runs = [];
    for (const [i, order] of orders.entries()) {
      // Two relayers: one key's nonces shared by two processes are another matter.
      const run = spawnCli(
        ["order", "capture", String(order.id), "--config", configPath, "--json"],
        { FLASHINDEX_RELAYER_KEY: devnet.privateKeys[8 - i]! },
      );
      runs.push({
        run,
        exited: new Promise<number | null>((resolve) => run.once("exit", resolve)),
      });
      // The second is sent after the first, both before any flashblock.
      await waitFor(
        async () => ((await store.captures.get(order.id))?.broadcasts ?? 0) > 0 || undefined,
        30_000,
        `order ${order.id}'s capture sent\n${run.output().stderr}`,
        20,
      );
    }
    await admin("devnet_flashblock");
    const codes = await Promise.all(runs.map((r) => r.exited));
    expect(codes, runs.map((r) => r.run.output().stderr).join("\n")).toEqual([0, 8]);
    const lost = runs[1]!.run.output().stderr;
    expect(lost).toContain("reverted");

    const txHash = (await store.captures.get(orders[1]!.id))!.txHash;
    expect(lost).toContain(txHash);
    await admin("devnet_mine");
    expect((await chain.getTransactionReceipt({ hash: txHash as Hex })).status).toBe("reverted");
    expect(await store.getOrder(orders[1]!.id)).toMatchObject({ state: "authorized" });
    expect((await store.listTransitions(orders[1]!.id)).at(-1)).toMatchObject({
      toState: "authorized",
      cause: "capture_reverted",
      txHash,
    });
    expect((await store.captures.get(orders[1]!.id))?.status).toBe("abandoned");
  }, 90_000);
});
