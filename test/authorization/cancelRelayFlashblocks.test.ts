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
  prepareCancel,
  relayCancel,
  type CancelRelayDeps,
  type CancelResult,
} from "../../src/authorization/cancelRelay.js";
import {
  readTokenDomain,
  signCancelAuthorization,
  type TokenDomain,
} from "../../src/authorization/eip3009.js";
import type { RelayerNonces } from "../../src/authorization/relayerNonces.js";
import type { Store } from "../../src/store/store.js";
import { testRelayerNonces } from "../helpers/nonceBook.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { waitFor } from "../helpers/devnetPayments.js";

// A devnet whose flashblocks and blocks happen only when a test says so: the test decides when the
// cancel is pre-confirmed and when its block (and the next) become canonical.
let devnet: Devnet;
let client: PublicClient;
let rpcClient: RpcClient;
let relayerNonces: RelayerNonces;
let nonceStore: Store;
let domain: TokenDomain;
let buyer: PrivateKeyAccount;
let relayer: PrivateKeyAccount;
let dir: string;
let counter = 0;

const ZERO_HASH = `0x${"0".repeat(64)}`;
const nextNonce = (): Hex =>
  keccak256(stringToHex(`flashblocks cancel ${++counter} ${Date.now()}`));
const admin = (method: string) => client.request({ method, params: [] } as never);
const flashblock = () => admin("devnet_flashblock");
const mine = () => admin("devnet_mine");
const authorizationState = (nonce: Hex) =>
  client.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "authorizationState",
    args: [buyer.address, nonce],
  });
/** Transactions in anvil's pool: sent, not yet pre-confirmed or mined. */
const poolSize = async () =>
  (
    (await createPublicClient({ transport: http(devnet.anvilUrl) }).request({
      method: "eth_getBlockByNumber",
      params: ["pending", false],
    } as never)) as { transactions: Hex[] }
  ).transactions.length;
const settled = async (promise: Promise<unknown>) =>
  Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise((resolve) => setTimeout(() => resolve(false), 50)),
  ]);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 0, flashblockIntervalMs: 0, port: 0 });
  client = createPublicClient({ transport: http(devnet.httpUrl) });
  rpcClient = createRpcClient(
    testDeps(
      testConfig({ chainId: devnet.chainId, rpc: { http: [devnet.httpUrl] }, logLevel: "silent" }),
    ),
  );
  ({ store: nonceStore, nonces: relayerNonces } = await testRelayerNonces(
    rpcClient,
    devnet.chainId,
  ));
  domain = await readTokenDomain(client, devnet.token);
  buyer = privateKeyToAccount(devnet.privateKeys[1]!);
  relayer = privateKeyToAccount(devnet.privateKeys[6]!);
  dir = mkdtempSync(join(tmpdir(), "flashindex-cancel-fb-"));
}, 60_000);

afterAll(async () => {
  await nonceStore?.close();
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("the stand-in's receipts", () => {
  test("a pre-confirmed transaction has a receipt with a zero block hash and the pending block's number; once mined, the canonical one", async () => {
    const payee = privateKeyToAccount(devnet.privateKeys[2]!).address;
    const hash = await createWalletClient({
      account: buyer,
      transport: http(devnet.httpUrl),
    }).writeContract({
      address: devnet.token,
      abi: flashTestTokenAbi,
      functionName: "transfer",
      args: [payee, 1n],
      chain: null,
      gas: 100_000n,
      nonce: await client.getTransactionCount({ address: buyer.address, blockTag: "pending" }),
    });
    expect(
      await client.request({ method: "eth_getTransactionReceipt", params: [hash] }),
    ).toBeNull();
    const head = await client.getBlockNumber({ cacheTime: 0 });
    await flashblock();
    const preconfirmed = (await client.request({
      method: "eth_getTransactionReceipt",
      params: [hash],
    })) as Record<string, unknown> & { logs: Array<{ blockHash: string }> };
    expect(preconfirmed).toMatchObject({
      transactionHash: hash,
      blockHash: ZERO_HASH,
      blockNumber: `0x${(head + 1n).toString(16)}`,
      status: "0x1",
    });
    expect(preconfirmed.logs).toHaveLength(1);
    expect(preconfirmed.logs[0]!.blockHash).toBe(ZERO_HASH);
    await mine();
    const canonical = await client.getTransactionReceipt({ hash });
    expect(canonical.blockHash).not.toBe(ZERO_HASH);
    expect(canonical.blockNumber).toBe(head + 1n);
  });
});

describe("flashindex cancel on a Flashblocks node", () => {
  test.each([1, 2])(
    "with %i confirmation(s) it reports the pre-confirmation, keeps waiting, and exits 0 once its canonical blocks exist",
    async (confirmations) => {
      const nonce = nextNonce();
      // The first endpoint is down: the relay must fail over like every other RPC use of flashindex.
      const configPath = writeConfig(
        dir,
        {
          chainId: devnet.chainId,
          rpc: {
            http: ["http://127.0.0.1:9", devnet.httpUrl],
            timeoutMs: 2_000,
            retry: { maxAttempts: 3, initialDelayMs: 10, maxDelayMs: 50 },
          },
          tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
          database: { path: join(dir, `fb-${confirmations}.db`) },
          metrics: { enabled: false },
          cancel: { confirmations, receiptTimeoutMs: 60_000 },
        },
        `fb-${confirmations}.json`,
      );
      const { signature } = await signCancelAuthorization(buyer, domain, {
        authorizer: buyer.address,
        nonce,
      });
      const head = await client.getBlockNumber({ cacheTime: 0 });
      const child = spawnCli(
        [
          "cancel",
          "--config",
          configPath,
          "--authorizer",
          buyer.address,
          "--nonce",
          nonce,
          "--signature",
          signature,
          "--json",
        ],
        {
          FLASHINDEX_RELAYER_KEY: devnet.privateKeys[6]!,
        },
      );
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
      await waitFor(
        async () => (await poolSize()) > 0 || child.exitCode !== null,
        30_000,
        "the cancel to be sent",
      );
      expect(child.exitCode, child.output().stderr).toBeNull();

      await flashblock();
      await waitFor(
        () => child.output().stderr.includes("pre-confirmed"),
        10_000,
        "the pre-confirmation to be reported",
      );
      // A pre-confirmed receipt is no confirmation: the relay is still waiting, and the nonce is not yet used on chain.
      await pause(800);
      expect(child.exitCode, child.output().stderr).toBeNull();
      expect(await authorizationState(nonce)).toBe(false);

      await mine();
      if (confirmations === 2) {
        await pause(800);
        expect(child.exitCode, child.output().stderr).toBeNull();
        await mine();
      }
      const code = await exited;
      const { stdout, stderr } = child.output();
      expect(code, stderr).toBe(0);
      const result = JSON.parse(stdout) as {
        block_number: number;
        confirmations: number;
        authorization_state: boolean;
      };
      expect(result).toMatchObject({
        block_number: Number(head) + 1,
        confirmations,
        authorization_state: true,
      });
      expect(await authorizationState(nonce)).toBe(true);
    },
    90_000,
  );
});

describe("relayCancel() on a Flashblocks node", () => {
  const deps = (overrides: Partial<CancelRelayDeps> = {}): CancelRelayDeps => ({
    client: rpcClient,
    relayer,
    relayerNonces,
    confirmations: 1,
    receiptTimeoutMs: 30_000,
    pollingIntervalMs: 50,
    ...overrides,
  });

  test("a second cancel sent before the first is pre-confirmed takes the next nonce, not the first one's", async () => {
    const shared = deps();
    const pendingBefore = await client.getTransactionCount({
      address: relayer.address,
      blockTag: "pending",
    });
    const nonces = [nextNonce(), nextNonce()];
    const prepared = await Promise.all(
      nonces.map((nonce) =>
        prepareCancel(shared, {
          token: devnet.token,
          authorizer: buyer.address,
          nonce,
          authority: { kind: "key", account: buyer },
        }),
      ),
    );
    const sent: number[] = [];
    const first = relayCancel(
      { ...shared, onSent: ({ relayerNonce }) => sent.push(relayerNonce) },
      prepared[0]!,
    );
    await waitFor(() => sent.length === 1, 10_000, "the first send");
    // The node's "pending" count has not moved: nothing is pre-confirmed yet (no mempool on Base).
    expect(
      await client.getTransactionCount({ address: relayer.address, blockTag: "pending" }),
    ).toBe(pendingBefore);
    const second = relayCancel(
      { ...shared, onSent: ({ relayerNonce }) => sent.push(relayerNonce) },
      prepared[1]!,
    );
    await waitFor(() => sent.length === 2, 10_000, "the second send");
    expect(sent).toEqual([pendingBefore, pendingBefore + 1]);
    expect(await settled(first)).toBe(false);

    await flashblock();
    await mine();
    const results: CancelResult[] = await Promise.all([first, second]);
    expect(results.map((r) => r.relayerNonce)).toEqual([pendingBefore, pendingBefore + 1]);
    expect(results.map((r) => r.authorizationState)).toEqual([true, true]);
    expect(await Promise.all(nonces.map(authorizationState))).toEqual([true, true]);
  }, 60_000);
});
