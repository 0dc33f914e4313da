import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  stringToHex,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  AlreadyCanceledError,
  AlreadyCapturedError,
  AlreadyUsedError,
  BadSignatureError,
  CancelTimeoutError,
  EXIT_ALREADY_CANCELED,
  EXIT_ALREADY_CAPTURED,
  EXIT_ALREADY_USED,
  EXIT_WRONG_SIGNER,
  WrongSignerError,
} from "../../src/errors/cancel.js";
import {
  estimateCancelCost,
  prepareCancel,
  relayCancel,
  type CancelAuthority,
  type CancelRelayDeps,
} from "../../src/authorization/cancelRelay.js";
import { createIndexedStateLookup } from "../../src/authorization/indexedAuthorizationState.js";
import { loadConfig } from "../../src/config/loadConfig.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openReadOnlyStore } from "../../src/store/openStore.js";
import type { RelayerNonces } from "../../src/authorization/relayerNonces.js";
import type { Store } from "../../src/store/store.js";
import { testRelayerNonces } from "../helpers/nonceBook.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import {
  readTokenDomain,
  signCancelAuthorization,
  signTransferAuthorization,
  type TokenDomain,
} from "../../src/authorization/eip3009.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { runCli, writeConfig } from "../helpers/cli.js";
import { PRECONFIRMED_BLOCK_HASH } from "../../src/rows/rpcLog.js";

const abi = flashTestTokenAbi;
let devnet: Devnet;
let client: PublicClient;
let rpcClient: RpcClient;
let relayerNonces: RelayerNonces;
let nonceStore: Store;
let domain: TokenDomain;
let buyer: PrivateKeyAccount;
let stranger: PrivateKeyAccount;
let relayer: PrivateKeyAccount;
let payee: PrivateKeyAccount;
let dir: string;
let configPath: string;
let dbPath: string;
let nonceCounter = 0;

const nextNonce = (): Hex =>
  keccak256(stringToHex(`cancelRelay nonce ${++nonceCounter} ${Date.now()}`));
const pendingNonceOf = (address: Address) =>
  client.getTransactionCount({ address, blockTag: "pending" });
const authorizationState = (authorizer: Address, nonce: Hex) =>
  client.readContract({
    address: devnet.token,
    abi,
    functionName: "authorizationState",
    args: [authorizer, nonce],
  });
const deps = (overrides: Partial<CancelRelayDeps> = {}): CancelRelayDeps => ({
  client: rpcClient,
  relayer,
  relayerNonces,
  confirmations: 2,
  receiptTimeoutMs: 20_000,
  pollingIntervalMs: 50,
  ...overrides,
});
const cancelSignature = (
  account: PrivateKeyAccount,
  nonce: Hex,
  authorizer: Address = buyer.address,
) => signCancelAuthorization(account, domain, { authorizer, nonce });

/** Captures an authorization with transferWithAuthorization from the payee; `gas` set skips the estimate so a revert still mines. */
async function capture(nonce: Hex, gas?: bigint) {
  const validBefore = (await client.getBlock()).timestamp + 3600n;
  const message = {
    from: buyer.address,
    to: payee.address,
    value: 1_000n,
    validAfter: 0n,
    validBefore,
    nonce,
  };
  const { v, r, s } = await signTransferAuthorization(buyer, domain, message);
  const wallet = createWalletClient({ account: payee, transport: http(devnet.httpUrl) });
  const hash = await wallet.writeContract({
    address: devnet.token,
    abi,
    functionName: "transferWithAuthorization",
    args: [
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      nonce,
      v,
      r,
      s,
    ],
    chain: null,
    nonce: await pendingNonceOf(payee.address),
    ...(gas === undefined ? {} : { gas }),
  });
  return minedReceipt(hash);
}

/**
 * The receipt of the canonical block. Note: the devnet, like a Base node, answers a pre-confirmed
 * transaction's receipt with a zero block hash before its block exists (base/base flashblocks rpc/eth.rs); a wait
 * for "a receipt" would return before the state it changes is readable at "latest".
 */
async function minedReceipt(hash: Hex) {
  let receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  while (receipt.blockHash === PRECONFIRMED_BLOCK_HASH) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    receipt = await client.getTransactionReceipt({ hash });
  }
  return receipt;
}

beforeAll(async () => {
  // Automatic blocks every 200 ms, so confirmations keep arriving while the relay waits.
  devnet = await startDevnet({ blockTimeMs: 200, flashblockIntervalMs: 50, port: 0 });
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
  payee = privateKeyToAccount(devnet.privateKeys[2]!);
  stranger = privateKeyToAccount(devnet.privateKeys[4]!);
  relayer = privateKeyToAccount(devnet.privateKeys[6]!);
  dir = mkdtempSync(join(tmpdir(), "flashindex-cancel-"));
  dbPath = join(dir, "index.db");
  configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    database: { path: dbPath },
    metrics: { enabled: false },
    cancel: { confirmations: 2, receiptTimeoutMs: 20_000 },
  });
}, 60_000);

afterAll(async () => {
  await nonceStore?.close();
  await devnet?.stop();
  await stopFileBackends();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("relayCancel()", () => {
  test.each(["v,r,s", "65 bytes", "buyer key"] as const)(
    "cancels with a signature given as %s and returns after its confirmations",
    async (form) => {
      const nonce = nextNonce();
      const signed = await cancelSignature(buyer, nonce);
      const authority: CancelAuthority =
        form === "v,r,s"
          ? { kind: "vrs", v: signed.v, r: signed.r, s: signed.s }
          : form === "65 bytes"
            ? { kind: "signature", signature: signed.signature }
            : { kind: "key", account: buyer };
      const relayerNonce = await pendingNonceOf(relayer.address);
      const confirmations = 3;

      const prepared = await prepareCancel(deps({ confirmations }), {
        token: devnet.token,
        authorizer: buyer.address,
        nonce,
        authority,
      });
      const result = await relayCancel(deps({ confirmations }), prepared);

      const head = await client.getBlockNumber({ cacheTime: 0 });
      expect(result.blockNumber + BigInt(confirmations) - 1n).toBeLessThanOrEqual(head);
      expect(result.confirmations).toBeGreaterThanOrEqual(confirmations);
      expect(result.relayerNonce).toBe(relayerNonce);
      expect(result.authorizationState).toBe(true);
      expect(await authorizationState(buyer.address, nonce)).toBe(true);
      const receipt = await client.getTransactionReceipt({ hash: result.txHash });
      expect(receipt.status).toBe("success");
      expect(receipt.from.toLowerCase()).toBe(relayer.address.toLowerCase());
    },
  );

  test("a wrong signer is refused before anything is sent", async () => {
    const nonce = nextNonce();
    const before = await pendingNonceOf(relayer.address);
    const byStranger = await cancelSignature(stranger, nonce);
    const request = { token: devnet.token, authorizer: buyer.address, nonce };
    await expect(
      prepareCancel(deps(), {
        ...request,
        authority: { kind: "signature", signature: byStranger.signature },
      }),
    ).rejects.toThrow(WrongSignerError);
    await expect(
      prepareCancel(deps(), { ...request, authority: { kind: "key", account: stranger } }),
    ).rejects.toThrow(WrongSignerError);
    // Signed by the buyer, but for another nonce: recovers to someone else.
    const otherNonce = await cancelSignature(buyer, nextNonce());
    await expect(
      prepareCancel(deps(), {
        ...request,
        authority: { kind: "signature", signature: otherNonce.signature },
      }),
    ).rejects.toThrow(WrongSignerError);
    expect(await pendingNonceOf(relayer.address)).toBe(before);
    expect(await authorizationState(buyer.address, nonce)).toBe(false);
  });

  test("a signature the token would refuse (bad v, high s) is a bad signature", async () => {
    const nonce = nextNonce();
    const { r, s } = await cancelSignature(buyer, nonce);
    const request = { token: devnet.token, authorizer: buyer.address, nonce };
    await expect(
      prepareCancel(deps(), { ...request, authority: { kind: "vrs", v: 29, r, s } }),
    ).rejects.toThrow(BadSignatureError);
    const highS =
      `0x${(0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n - BigInt(s)).toString(16).padStart(64, "0")}` as Hex;
    await expect(
      prepareCancel(deps(), { ...request, authority: { kind: "vrs", v: 27, r, s: highS } }),
    ).rejects.toThrow(BadSignatureError);
  });

  test("a capture after the cancel reverts on chain", async () => {
    const nonce = nextNonce();
    await relayCancel(
      deps(),
      await prepareCancel(deps(), {
        token: devnet.token,
        authorizer: buyer.address,
        nonce,
        authority: { kind: "key", account: buyer },
      }),
    );
    const receipt = await capture(nonce, 300_000n);
    expect(receipt.status).toBe("reverted");
    expect(await authorizationState(buyer.address, nonce)).toBe(true);
  });

  test("gives up with a timeout error (exit 75) when the confirmations do not arrive in time", async () => {
    const nonce = nextNonce();
    const slow = deps({ confirmations: 1_000, receiptTimeoutMs: 1_000 });
    const prepared = await prepareCancel(slow, {
      token: devnet.token,
      authorizer: buyer.address,
      nonce,
      authority: { kind: "key", account: buyer },
    });
    const error = await relayCancel(slow, prepared).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CancelTimeoutError);
    expect((error as CancelTimeoutError).exitCode).toBe(75);
    expect((error as CancelTimeoutError).txHash).toMatch(/^0x[0-9a-f]{64}$/);
  });

  test("estimateCancelCost() prices the on-chain path and sends nothing", async () => {
    const nonce = nextNonce();
    const before = await pendingNonceOf(relayer.address);
    const prepared = await prepareCancel(deps({ relayer: undefined }), {
      token: devnet.token,
      authorizer: buyer.address,
      nonce,
      authority: { kind: "key", account: buyer },
    });
    const cost = await estimateCancelCost(deps({ relayer: undefined }), prepared);
    expect(cost.gas).toBeGreaterThan(21_000n);
    expect(cost.costWei).toBe(cost.gas * cost.gasPriceWei);
    expect(await pendingNonceOf(relayer.address)).toBe(before);
    expect(await authorizationState(buyer.address, nonce)).toBe(false);
  });
});

describe.each(BACKENDS)("flashindex cancel with a database on $name", (backend) => {
  test("an already canceled or captured nonce is refused, told apart by the indexed database; a fresh one is relayed", async () => {
    const configPath = writeConfig(
      dir,
      {
        chainId: devnet.chainId,
        rpc: {
          http: [devnet.httpUrl],
          retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 },
        },
        tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
        finality: { depth: 0 },
        database:
          backend.name === "sqlite"
            ? { path: join(dir, "told-apart.db") }
            : await backend.freshDatabase(),
        metrics: { enabled: false },
        cancel: { confirmations: 2, receiptTimeoutMs: 20_000 },
      },
      `told-apart-${backend.name}.json`,
    );
    const canceledNonce = nextNonce();
    await relayCancel(
      deps({ confirmations: 1 }),
      await prepareCancel(deps(), {
        token: devnet.token,
        authorizer: buyer.address,
        nonce: canceledNonce,
        authority: { kind: "key", account: buyer },
      }),
    );
    const capturedNonce = nextNonce();
    expect((await capture(capturedNonce)).status).toBe("success");
    const before = await pendingNonceOf(relayer.address);
    const request = (nonce: Hex) => ({
      token: devnet.token,
      authorizer: buyer.address,
      nonce,
      authority: { kind: "key", account: buyer } as const,
    });

    // Without the database the chain cannot tell the two apart.
    await expect(prepareCancel(deps(), request(canceledNonce))).rejects.toThrow(AlreadyUsedError);
    await expect(prepareCancel(deps(), request(capturedNonce))).rejects.toThrow(AlreadyUsedError);

    // Index the chain into a real database with the real CLI, then ask again.
    const backfill = await runCli(["backfill", "--config", configPath, "--log-level", "silent"]);
    expect(backfill.code, backfill.stderr).toBe(0);
    const lookupIndexedState = createIndexedStateLookup(() =>
      openReadOnlyStore(loadConfig(configPath), createMetrics({ defaultMetrics: false })),
    );
    expect((await lookupIndexedState(devnet.token, buyer.address, canceledNonce))?.state).toBe(
      "canceled",
    );
    await expect(
      prepareCancel(deps({ lookupIndexedState }), request(canceledNonce)),
    ).rejects.toThrow(AlreadyCanceledError);
    await expect(
      prepareCancel(deps({ lookupIndexedState }), request(capturedNonce)),
    ).rejects.toThrow(AlreadyCapturedError);
    expect(await pendingNonceOf(relayer.address)).toBe(before);

    const env = {
      FLASHINDEX_BUYER_KEY: devnet.privateKeys[1]!,
      FLASHINDEX_RELAYER_KEY: devnet.privateKeys[6]!,
    };
    const args = (nonce: Hex) => [
      "cancel",
      "--config",
      configPath,
      "--authorizer",
      buyer.address,
      "--nonce",
      nonce,
    ];
    const canceled = await runCli(args(canceledNonce), env);
    expect(canceled.code, canceled.stderr).toBe(EXIT_ALREADY_CANCELED);
    expect(canceled.stderr).toContain("already canceled");
    const captured = await runCli(args(capturedNonce), env);
    expect(captured.code, captured.stderr).toBe(EXIT_ALREADY_CAPTURED);
    expect(captured.stderr).toContain("already captured");
    // A nonce used after the last backfill: the database does not know it.
    const lateNonce = nextNonce();
    expect((await capture(lateNonce)).status).toBe("success");
    expect((await runCli(args(lateNonce), env)).code).toBe(EXIT_ALREADY_USED);
    // A nonce nobody used: relayed, confirmed, and the chain agrees.
    const freshNonce = nextNonce();
    const relayed = await runCli([...args(freshNonce), "--json"], env);
    expect(relayed.code, relayed.stderr).toBe(0);
    expect(JSON.parse(relayed.stdout)).toMatchObject({ authorization_state: true });
    expect(await authorizationState(buyer.address, freshNonce)).toBe(true);
  }, 90_000);
});

describe("flashindex cancel", () => {
  const keys = () => ({
    buyer: devnet.privateKeys[1]!,
    relayer: devnet.privateKeys[6]!,
    stranger: devnet.privateKeys[4]!,
  });
  const expectNoKeys = (output: { stdout: string; stderr: string }) => {
    for (const key of Object.values(keys())) {
      expect(output.stdout + output.stderr).not.toContain(key.slice(2));
      expect((output.stdout + output.stderr).toLowerCase()).not.toContain(
        key.slice(2).toLowerCase(),
      );
    }
  };

  test("--dry-run sends nothing and prints the cost of both voiding paths", async () => {
    const nonce = nextNonce();
    const before = await pendingNonceOf(relayer.address);
    const result = await runCli(
      [
        "cancel",
        "--config",
        configPath,
        "--authorizer",
        buyer.address,
        "--nonce",
        nonce,
        "--dry-run",
      ],
      {
        FLASHINDEX_BUYER_KEY: keys().buyer,
        FLASHINDEX_RELAYER_KEY: keys().relayer,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("dry run: nothing was sent");
    expect(result.stdout).toMatch(
      /cost: off chain \(mark void, let validBefore pass\): no transaction, 0 gas, 0 ETH \| on chain \(cancelAuthorization\): 1 transaction, \d+ gas × [\d.]+ gwei = [\d.e-]+ ETH/,
    );
    expectNoKeys(result);
    expect(await pendingNonceOf(relayer.address)).toBe(before);
    expect(await authorizationState(buyer.address, nonce)).toBe(false);

    const json = await runCli(
      [
        "cancel",
        "--config",
        configPath,
        "--authorizer",
        buyer.address,
        "--nonce",
        nonce,
        "--dry-run",
        "--json",
      ],
      {
        FLASHINDEX_BUYER_KEY: keys().buyer,
      },
    );
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout) as {
      sent: boolean;
      cost: { off_chain: { gas: string }; on_chain: { gas: string } };
    };
    expect(parsed.sent).toBe(false);
    expect(parsed.cost.off_chain.gas).toBe("0");
    expect(Number(parsed.cost.on_chain.gas)).toBeGreaterThan(21_000);
  });

  test("a wrong signer exits 7 and sends nothing", async () => {
    const nonce = nextNonce();
    const before = await pendingNonceOf(relayer.address);
    const keyFile = join(dir, "stranger.key");
    writeFileSync(keyFile, `${keys().stranger}\n`);
    const result = await runCli(
      [
        "cancel",
        "--config",
        configPath,
        "--authorizer",
        buyer.address,
        "--nonce",
        nonce,
        "--buyer-key-file",
        keyFile,
      ],
      {
        FLASHINDEX_RELAYER_KEY: keys().relayer,
      },
    );
    expect(result.code, result.stderr).toBe(EXIT_WRONG_SIGNER);
    expect(result.stderr).toContain(`not the authorizer ${buyer.address}`);
    expectNoKeys(result);

    const { v, r, s } = await cancelSignature(stranger, nonce);
    const vrs = await runCli(
      [
        "cancel",
        "--config",
        configPath,
        "--authorizer",
        buyer.address,
        "--nonce",
        nonce,
        "--v",
        String(v),
        "--r",
        r,
        "--s",
        s,
      ],
      {
        FLASHINDEX_RELAYER_KEY: keys().relayer,
      },
    );
    expect(vrs.code, vrs.stderr).toBe(EXIT_WRONG_SIGNER);
    expect(await pendingNonceOf(relayer.address)).toBe(before);
    expect(await authorizationState(buyer.address, nonce)).toBe(false);
  });

  test("a real run from key files prints the transaction, its block, confirmations and the final state", async () => {
    const nonce = nextNonce();
    const relayerKeyFile = join(dir, "relayer.key");
    writeFileSync(relayerKeyFile, keys().relayer.slice(2));
    const { signature } = await cancelSignature(buyer, nonce);
    const result = await runCli([
      "cancel",
      "--config",
      configPath,
      "--authorizer",
      buyer.address,
      "--nonce",
      nonce,
      "--signature",
      signature,
      "--relayer-key-file",
      relayerKeyFile,
      "--confirmations",
      "2",
      "--json",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const parsed = JSON.parse(result.stdout) as {
      tx_hash: string;
      block_number: number;
      confirmations: number;
      authorization_state: boolean;
    };
    expect(parsed.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(parsed.confirmations).toBeGreaterThanOrEqual(2);
    expect(parsed.authorization_state).toBe(true);
    expect(await authorizationState(buyer.address, nonce)).toBe(true);
    expectNoKeys(result);
  });

  test("a smart wallet's long signature goes through the bytes overload (0xb7b72899); a signature the wallet refuses exits 7 with nothing sent", async () => {
    const wallet = devnet.wallet!;
    const walletNonceOf = (nonce: Hex) =>
      client.readContract({
        address: devnet.token,
        abi,
        functionName: "authorizationState",
        args: [wallet, nonce],
      });
    const before = await pendingNonceOf(relayer.address);
    const refusedNonce = nextNonce();
    const byStranger = await signCancelAuthorization(stranger, domain, {
      authorizer: wallet,
      nonce: refusedNonce,
    });
    const refused = await runCli(
      [
        "cancel",
        "--config",
        configPath,
        "--authorizer",
        wallet,
        "--nonce",
        refusedNonce,
        "--signature",
        byStranger.signature,
      ],
      {
        FLASHINDEX_RELAYER_KEY: keys().relayer,
      },
    );
    expect(refused.code, refused.stderr).toBe(EXIT_WRONG_SIGNER);
    expect(refused.stderr).toContain("isValidSignature refuses");
    expect(await pendingNonceOf(relayer.address)).toBe(before);
    expect(await walletNonceOf(refusedNonce)).toBe(false);

    // The devnet wallet's owner is the buyer; the wallet ignores what follows the first 65 bytes.
    const nonce = nextNonce();
    const long = `${(await signCancelAuthorization(buyer, domain, { authorizer: wallet, nonce })).signature}${"ef".repeat(135)}`;
    const result = await runCli(
      [
        "cancel",
        "--config",
        configPath,
        "--authorizer",
        wallet,
        "--nonce",
        nonce,
        "--signature",
        long,
        "--json",
      ],
      {
        FLASHINDEX_RELAYER_KEY: keys().relayer,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    const { tx_hash: txHash } = JSON.parse(result.stdout) as { tx_hash: Hex };
    const sent = await client.getTransaction({ hash: txHash });
    expect(sent.input.slice(0, 10)).toBe("0xb7b72899");
    expect(sent.input).toContain(long.slice(2).toLowerCase());
    expect(await walletNonceOf(nonce)).toBe(true);

    // With the owner's key instead of a ready signature: signed here, checked by the wallet, relayed.
    const keyNonce = nextNonce();
    const relayed = await relayCancel(
      deps(),
      await prepareCancel(deps(), {
        token: devnet.token,
        authorizer: wallet,
        nonce: keyNonce,
        authority: { kind: "key", account: buyer },
      }),
    );
    expect(relayed.authorizationState).toBe(true);
    expect((await client.getTransaction({ hash: relayed.txHash })).input.slice(0, 10)).toBe(
      "0xb7b72899",
    );
  }, 60_000);

  test("bad flags, bad keys and a missing key exit 2 without echoing a key; an unreachable RPC exits 75", async () => {
    const nonce = nextNonce();
    const base = ["cancel", "--config", configPath, "--authorizer", buyer.address];
    const env = { FLASHINDEX_BUYER_KEY: keys().buyer, FLASHINDEX_RELAYER_KEY: keys().relayer };
    const cases: Array<[string[], NodeJS.ProcessEnv]> = [
      [[...base, "--nonce", nonce, "--bogus"], env],
      [[...base], env],
      [[...base, "--nonce", "0x1234"], env],
      [[...base, "--nonce", nonce, "--confirmations", "0"], env],
      [[...base, "--nonce", nonce, "--v", "27"], env],
      [[...base, "--nonce", nonce, "--signature", "0xabc"], env],
      [["cancel", "--config", configPath, "--authorizer", "0x1234", "--nonce", nonce], env],
      // A key pasted where it does not belong.
      [[...base, "--nonce", nonce, keys().buyer], env],
      [[...base, "--nonce", nonce, `--relayer-key=${keys().relayer}`], env],
      [
        [...base, "--nonce", nonce],
        { FLASHINDEX_BUYER_KEY: keys().buyer, FLASHINDEX_RELAYER_KEY: "" },
      ],
      [
        [...base, "--nonce", nonce],
        { FLASHINDEX_BUYER_KEY: `${keys().buyer}ff`, FLASHINDEX_RELAYER_KEY: keys().relayer },
      ],
      [[...base, "--nonce", nonce, "--buyer-key-file", join(dir, "missing.key")], env],
    ];
    const results = await Promise.all(cases.map(([args, e]) => runCli(args, e)));
    results.forEach((result, i) => {
      expect(result.code, `case ${i}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(/^flashindex: error: /);
      expectNoKeys(result);
    });

    const offline = writeConfig(
      dir,
      {
        chainId: devnet.chainId,
        rpc: { http: ["http://127.0.0.1:9"], timeoutMs: 500, retry: { maxAttempts: 1 } },
        tokens: [{ address: devnet.token, startBlock: 0 }],
        metrics: { enabled: false },
      },
      "offline.json",
    );
    const down = await runCli(
      ["cancel", "--config", offline, "--authorizer", buyer.address, "--nonce", nonce, "--dry-run"],
      env,
    );
    expect(down.code, down.stderr).toBe(75);
    expect(down.stderr).toContain("RPC did not answer");
  }, 60_000);
});
