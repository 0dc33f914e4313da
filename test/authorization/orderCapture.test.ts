import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPublicClient,
  createWalletClient,
  getAddress,
  http,
  keccak256,
  stringToHex,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createCaptureRelay } from "../../src/authorization/captureRelay.js";
import {
  readTokenDomain,
  signReceiveAuthorization,
  signTransferAuthorization,
  type TokenDomain,
  type TransferAuthorization,
} from "../../src/authorization/eip3009.js";
import { createRpcClient, type RpcClient } from "../../src/chain/rpcClient.js";
import { loadConfig } from "../../src/config/loadConfig.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import type { Order } from "../../src/store/orderStates.js";
import { runCli, spawnCli, writeConfig } from "../helpers/cli.js";
import { createMemoryLogger, testConfig, testDeps } from "../helpers/context.js";
import { waitFor } from "../helpers/fixtures.js";

let devnet: Devnet;
let client: PublicClient;
let rpcClient: RpcClient;
let domain: TokenDomain;
let buyer: PrivateKeyAccount;
let payee: PrivateKeyAccount;
let relayer: PrivateKeyAccount;
let dir: string;
let configPath: string;
let daemon: ReturnType<typeof spawnCli> | undefined;
let nonceCounter = 0;

const nextNonce = (): Hex =>
  keccak256(stringToHex(`orderCapture nonce ${++nonceCounter} ${Date.now()}`));
const relayerKey = () => devnet.privateKeys[6]!;
/** The receipt once the transaction is in a block (a pre-confirmed receipt has a zero block hash and no state at latest yet). */
async function minedReceipt(hash: Hex) {
  return waitFor(
    async () => {
      const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined);
      return receipt !== undefined && receipt.blockHash !== `0x${"0".repeat(64)}`
        ? receipt
        : undefined;
    },
    20_000,
    `a mined receipt of ${hash}`,
    50,
  );
}
const pendingNonceOf = (address: Address) =>
  client.getTransactionCount({ address, blockTag: "pending" });
const authorizationState = (authorizer: Address, nonce: Hex) =>
  client.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "authorizationState",
    args: [authorizer, nonce],
  });

/** Signs an authorization from the buyer to the payee and stores it with `order add`; returns the order. */
async function addOrder(
  options: { kind?: "transfer" | "receive"; value?: bigint; payer?: PrivateKeyAccount } = {},
): Promise<{ order: Order; message: TransferAuthorization }> {
  const kind = options.kind ?? "transfer";
  const payer = options.payer ?? buyer;
  const validBefore = (await client.getBlock()).timestamp + 3600n;
  const message = {
    from: payer.address,
    to: payee.address,
    value: options.value ?? 1_500n,
    validAfter: 0n,
    validBefore,
    nonce: nextNonce(),
  };
  const { signature } =
    kind === "transfer"
      ? await signTransferAuthorization(payer, domain, message)
      : await signReceiveAuthorization(payer, domain, message);
  const added = await runCli([
    "order",
    "add",
    "--config",
    configPath,
    "--json",
    "--token",
    devnet.token,
    "--from",
    message.from,
    "--to",
    message.to,
    "--value",
    message.value.toString(),
    "--valid-after",
    "0",
    "--valid-before",
    validBefore.toString(),
    "--nonce",
    message.nonce,
    "--signature",
    signature,
    "--kind",
    kind,
  ]);
  expect(added.code, added.stderr).toBe(0);
  return { order: JSON.parse(added.stdout) as Order, message };
}

/** `order show --json`: the order with its transitions, keys in snake_case as printed. */
type ShownOrder = {
  id: number;
  state: string;
  event_status: string | null;
  event_tx_hash: Hex | null;
  transitions: Array<{
    from_state: string | null;
    to_state: string;
    cause: string;
    tx_hash: string | null;
  }>;
};

async function showOrder(id: number): Promise<ShownOrder> {
  const shown = await runCli(["order", "show", String(id), "--config", configPath, "--json"]);
  expect(shown.code, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout);
}

const capture = (
  id: number,
  args: string[] = [],
  env: NodeJS.ProcessEnv = { FLASHINDEX_RELAYER_KEY: relayerKey() },
) => runCli(["order", "capture", String(id), "--config", configPath, ...args], env);

beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 400, flashblockIntervalMs: 50, port: 0 });
  client = createPublicClient({ transport: http(devnet.httpUrl) });
  rpcClient = createRpcClient(
    testDeps(
      testConfig({ chainId: devnet.chainId, rpc: { http: [devnet.httpUrl] }, logLevel: "silent" }),
    ),
  );
  domain = await readTokenDomain(client, devnet.token);
  buyer = privateKeyToAccount(devnet.privateKeys[1]!);
  payee = privateKeyToAccount(devnet.privateKeys[2]!);
  relayer = privateKeyToAccount(relayerKey());
  dir = mkdtempSync(join(tmpdir(), "flashindex-capture-"));
  configPath = writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 50 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    finality: { depth: 0 },
    realtime: { headPollIntervalMs: 100, pendingPollIntervalMs: 100 },
    database: { path: join(dir, "index.db") },
    metrics: { enabled: false },
    cancel: { confirmations: 1, receiptTimeoutMs: 20_000 },
  });
  // The daemon indexes the captures and drives the intents; it holds no relayer key of its own.
  daemon = spawnCli(["start", "--config", configPath]);
  await waitFor(
    () => daemon!.output().stdout.includes("Started flashindex"),
    30_000,
    `the daemon to start\n${daemon.output().stdout}`,
    100,
  );
}, 60_000);

afterAll(async () => {
  if (daemon !== undefined && daemon.exitCode === null) {
    const exited = new Promise((resolve) => daemon!.once("exit", resolve));
    daemon.kill("SIGTERM");
    await exited;
  }
  await devnet?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("flashindex order capture", () => {
  test("sends the authorization once: pre-confirmed, then captured by the daemon, with the audit trail", async () => {
    const { order, message } = await addOrder();
    const before = await pendingNonceOf(relayer.address);
    const result = await capture(order.id, ["--json"]);
    expect(result.code, result.stderr).toBe(0);
    const parsed = JSON.parse(result.stdout) as {
      tx_hash: Hex;
      already_sent: boolean;
      status: string;
      relayer: Address;
    };
    expect(parsed).toMatchObject({ already_sent: false, relayer: relayer.address });
    expect(["preconfirmed", "confirmed"]).toContain(parsed.status);
    expect(result.stdout + result.stderr).not.toContain(relayerKey().slice(2));

    const receipt = await minedReceipt(parsed.tx_hash);
    expect(receipt.status).toBe("success");
    expect(receipt.from.toLowerCase()).toBe(relayer.address.toLowerCase());
    expect(await authorizationState(message.from, message.nonce)).toBe(true);
    expect(await pendingNonceOf(relayer.address)).toBe(before + 1);

    const captured = await waitFor(
      async () => {
        const shown = await showOrder(order.id);
        return shown.state === "captured" && shown.event_status !== "preconfirmed"
          ? shown
          : undefined;
      },
      20_000,
      "the daemon to see the capture",
      200,
    );
    expect(captured.event_tx_hash).toBe(parsed.tx_hash);
    expect(
      captured.transitions
        .map((t) => `${t.from_state ?? "-"}>${t.to_state}:${t.cause}`)
        .slice(0, 3),
    ).toEqual([
      "->authorized:added",
      "authorized>capturing:capture_sent",
      expect.stringMatching(/^capturing>captured:captured$/),
    ]);

    // Idempotent: the same order again sends nothing and reports the same transaction.
    const again = await capture(order.id, ["--json", "--confirmations", "1"]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      tx_hash: parsed.tx_hash,
      already_sent: true,
      status: "confirmed",
    });
    expect(await pendingNonceOf(relayer.address)).toBe(before + 1);
  }, 90_000);

  test("a voided order is refused (exit 1, one line, nothing sent); so is a void of a capturing order", async () => {
    const { order, message } = await addOrder();
    const voided = await runCli(["order", "void", String(order.id), "--config", configPath]);
    expect(voided.code, voided.stderr).toBe(0);
    const before = await pendingNonceOf(relayer.address);
    const refused = await capture(order.id);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain(
      `order ${order.id} is voided_offchain: it cannot become capturing`,
    );
    expect(await pendingNonceOf(relayer.address)).toBe(before);
    expect(await authorizationState(message.from, message.nonce)).toBe(false);

    const second = await addOrder();
    const sent = await capture(second.order.id, ["--json"]);
    expect(sent.code, sent.stderr).toBe(0);
    const lateVoid = await runCli([
      "order",
      "void",
      String(second.order.id),
      "--config",
      configPath,
    ]);
    expect(lateVoid.code).toBe(1);
    expect(lateVoid.stderr).toMatch(/is (capturing|captured): it cannot become voided_offchain/);
  }, 90_000);

  test("a receive-kind order with a relayer key that is not the payee's exits 2 with nothing sent; the payee's key captures it", async () => {
    const { order, message } = await addOrder({ kind: "receive" });
    const before = await pendingNonceOf(relayer.address);
    const refused = await capture(order.id);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`accepts only from the payee ${getAddress(payee.address)}`);
    expect(await pendingNonceOf(relayer.address)).toBe(before);
    expect((await showOrder(order.id)).state).toBe("authorized");

    const keyFile = join(dir, "payee.key");
    writeFileSync(keyFile, devnet.privateKeys[2]!);
    const byPayee = await capture(order.id, ["--relayer-key-file", keyFile, "--json"], {});
    expect(byPayee.code, byPayee.stderr).toBe(0);
    const receipt = await minedReceipt((JSON.parse(byPayee.stdout) as { tx_hash: Hex }).tx_hash);
    expect(receipt.status).toBe("success");
    expect(await authorizationState(message.from, message.nonce)).toBe(true);
  }, 90_000);

  test("a capture the token would refuse (more than the balance) exits 8 with the token's reason; the order stays authorized", async () => {
    // A payer of its own: this test moves its money away.
    const payer = privateKeyToAccount(devnet.privateKeys[4]!);
    const balance = await client.readContract({
      address: devnet.token,
      abi: flashTestTokenAbi,
      functionName: "balanceOf",
      args: [payer.address],
    });
    // order add simulates too: an authorization for more than the balance is not stored at all.
    const validBefore = (await client.getBlock()).timestamp + 3600n;
    const message = {
      from: payer.address,
      to: payee.address,
      value: balance + 1n,
      validAfter: 0n,
      validBefore,
      nonce: nextNonce(),
    };
    const { signature } = await signTransferAuthorization(payer, domain, message);
    const tooMuch = await runCli([
      "order",
      "add",
      "--config",
      configPath,
      "--token",
      devnet.token,
      "--from",
      message.from,
      "--to",
      message.to,
      "--value",
      message.value.toString(),
      "--valid-after",
      "0",
      "--valid-before",
      validBefore.toString(),
      "--nonce",
      message.nonce,
      "--signature",
      signature,
    ]);
    expect(tooMuch.code).toBe(1);
    expect(tooMuch.stderr).toContain("ERC20: transfer amount exceeds balance");
    expect(tooMuch.stderr).toContain("not stored");

    // Stored while it was fine, refused at capture: the payer moved the money away meanwhile.
    const { order } = await addOrder({ value: balance, payer });
    await minedReceipt(await transferAway(payer, 1n));
    const before = await pendingNonceOf(relayer.address);
    const refused = await capture(order.id);
    expect(refused.code, refused.stderr).toBe(8);
    expect(refused.stderr).toContain("ERC20: transfer amount exceeds balance");
    expect(await pendingNonceOf(relayer.address)).toBe(before);
    expect((await showOrder(order.id)).state).toBe("authorized");
  }, 90_000);

  test("kill -9 after the intent is stored: the next capture re-sends the same bytes, and the daemon drives a stored intent by itself", async () => {
    // A relay whose process dies between storing the intent and sending it: eth_sendRawTransaction never goes out.
    const config = loadConfig(configPath);
    const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
    const crashing: RpcClient = {
      ...rpcClient,
      request: ((method: string, params: unknown[], parse?: (r: unknown) => unknown) => {
        if (method === "eth_sendRawTransaction")
          return Promise.reject(new Error("killed before sending"));
        return rpcClient.request(method, params, parse as never);
      }) as RpcClient["request"],
    };
    const relay = createCaptureRelay({
      client: crashing,
      store,
      chainId: devnet.chainId,
      relayer,
      logger: createMemoryLogger("silent").logger,
    });
    try {
      const first = await addOrder();
      await expect(relay.capture(first.order.id)).rejects.toThrow("killed before sending");
      const stored = await store.captures.get(first.order.id);
      expect(stored).toMatchObject({ status: "sent", broadcasts: 0 });
      expect((await store.getOrder(first.order.id))?.state).toBe("capturing");

      const rerun = await capture(first.order.id, ["--json"]);
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(JSON.parse(rerun.stdout)).toMatchObject({
        tx_hash: stored!.txHash,
        already_sent: true,
      });
      const receipt = await minedReceipt(stored!.txHash);
      expect(receipt.status).toBe("success");
      expect(await authorizationState(first.message.from, first.message.nonce)).toBe(true);

      // The second one is left to the daemon: no command runs again.
      const second = await addOrder();
      await expect(relay.capture(second.order.id)).rejects.toThrow("killed before sending");
      const left = (await store.captures.get(second.order.id))!;
      await waitFor(
        async () => (await store.getOrder(second.order.id))?.state === "captured",
        20_000,
        "the daemon to send the stored capture",
        200,
      );
      expect((await store.getOrder(second.order.id))?.eventTxHash).toBe(left.txHash);
      expect((await store.captures.get(second.order.id))?.txHash).toBe(left.txHash);
    } finally {
      await store.close();
    }
  }, 90_000);

  test("a real kill -9 of order capture once it reported the send: a re-run reports the same transaction", async () => {
    const { order } = await addOrder();
    const child = spawnCli(
      ["order", "capture", String(order.id), "--config", configPath, "--confirmations", "50"],
      { FLASHINDEX_RELAYER_KEY: relayerKey() },
    );
    await waitFor(
      () => /sent (0x[0-9a-f]{64})/.exec(child.output().stderr)?.[1],
      30_000,
      "the send",
      20,
    );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    const txHash = /sent (0x[0-9a-f]{64})/.exec(child.output().stderr)![1]!;
    const rerun = await capture(order.id, ["--json"]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(JSON.parse(rerun.stdout)).toMatchObject({ tx_hash: txHash, already_sent: true });
    await waitFor(
      async () => (await showOrder(order.id)).state === "captured",
      20_000,
      "captured",
      200,
    );
  }, 90_000);

  test("a pre-confirmed capture that never lands is sent again by the daemon, with the same bytes", async () => {
    const { order, message } = await addOrder();
    // Blocks wait while the pending view runs ahead, so the drop below comes before the capture's block.
    await client.request({ method: "devnet_setPendingLag", params: [1_000] } as never);
    let txHash: Hex;
    try {
      const result = await capture(order.id, ["--json"]);
      expect(result.code, result.stderr).toBe(0);
      txHash = (JSON.parse(result.stdout) as { tx_hash: Hex; status: string }).tx_hash;
      expect(JSON.parse(result.stdout)).toMatchObject({ status: "preconfirmed" });
      // The node forgets it after pre-confirming it (base/base#3274): it never makes a block.
      expect(
        await client.request({ method: "devnet_dropPreconfirmed", params: [txHash] } as never),
      ).toBe(true);
    } finally {
      await client.request({ method: "devnet_setPendingLag", params: [0] } as never);
    }
    const shown = await waitFor(
      async () => {
        const o = await showOrder(order.id);
        return o.state === "captured" &&
          o.event_status !== "preconfirmed" &&
          o.transitions.some((t) => t.cause === "event_removed")
          ? o
          : undefined;
      },
      30_000,
      `the capture to land after the drop: ${JSON.stringify(await showOrder(order.id))}\n${daemonLog(/capture|order|dropped/i)}`,
      200,
    );
    expect(shown.event_tx_hash).toBe(txHash);
    expect(shown.transitions.map((t) => `${t.from_state}>${t.to_state}`)).toContain(
      "captured>capturing",
    );
    expect(await authorizationState(message.from, message.nonce)).toBe(true);
  }, 90_000);
});

/** The daemon's log lines matching `pattern`, for failure messages. */
function daemonLog(pattern: RegExp): string {
  return daemon!
    .output()
    .stdout.split("\n")
    .filter((line) => pattern.test(line))
    .slice(-30)
    .join("\n");
}

/** A plain token transfer by `from` (its own gas) of all but `keep` of its balance. */
async function transferAway(from: PrivateKeyAccount, keep: bigint): Promise<Hex> {
  const balance = await client.readContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "balanceOf",
    args: [from.address],
  });
  const wallet = createWalletClient({ account: from, transport: http(devnet.httpUrl) });
  return wallet.writeContract({
    address: devnet.token,
    abi: flashTestTokenAbi,
    functionName: "transfer",
    args: [privateKeyToAccount(devnet.privateKeys[3]!).address, balance - keep],
    chain: null,
    nonce: await pendingNonceOf(from.address),
  });
}
