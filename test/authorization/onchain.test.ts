import { mkdtempSync } from "node:fs";
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
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import type { Config } from "../../src/config/types.js";
import { createOrderUpkeep } from "../../src/authorization/orderUpkeep.js";
import { createSqliteStore } from "../../src/store/sqlite/sqliteStore.js";
import { createSqliteOrders } from "../../src/store/sqlite/orders.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import {
  readTokenDomain,
  signCancelAuthorization,
  signTransferAuthorization,
  type TransferAuthorization,
} from "../../src/authorization/eip3009.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { AUTHORIZATION_USED_TOPIC } from "../../src/rows/paymentEvents.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { createSqliteLifecycle } from "../../src/store/sqlite/lifecycle.js";
import { openDatabase } from "../../src/store/sqlite/openDatabase.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { runCli, writeConfig } from "../helpers/cli.js";
import { createMemoryLogger } from "../helpers/context.js";
import { waitFor } from "../helpers/devnetPayments.js";
import { startFollower } from "../helpers/followerHarness.js";
import { word } from "../helpers/fixtures.js";

const open: Array<{ stop: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.stop();
});
afterAll(() => stopFileBackends());

let nonceCounter = 0;
const nextNonce = (): Hex =>
  keccak256(stringToHex(`orders onchain ${Date.now()} ${++nonceCounter}`));

/** The buyer (key 1, funded) signs; the merchant (key 2) submits, with local nonces (automine is off). */
async function parties(devnet: Devnet) {
  const buyer = privateKeyToAccount(devnet.privateKeys[1]!);
  const merchant = privateKeyToAccount(devnet.privateKeys[2]!);
  const publicClient = createPublicClient({ transport: http(devnet.httpUrl) });
  const wallet = createWalletClient({ account: merchant, transport: http(devnet.httpUrl) });
  const domain = await readTokenDomain(publicClient, devnet.token);
  let nonce = await publicClient.getTransactionCount({
    address: merchant.address,
    blockTag: "pending",
  });
  const rpc = (method: string) => publicClient.request({ method, params: [] } as never);
  const latest = (await publicClient.getBlock()).timestamp;
  const authorization = (
    overrides: Partial<TransferAuthorization> = {},
  ): TransferAuthorization => ({
    from: buyer.address,
    to: merchant.address,
    value: 2_500_000n,
    validAfter: 0n,
    validBefore: latest + 3600n,
    nonce: nextNonce(),
    ...overrides,
  });
  return {
    buyer,
    merchant,
    publicClient,
    domain,
    authorization,
    sign: (m: TransferAuthorization, signer: PrivateKeyAccount = buyer) =>
      signTransferAuthorization(signer, domain, m),
    /** Explicit gas: a capture that will revert is still mined. */
    capture: (m: TransferAuthorization, sig: { v: number; r: Hex; s: Hex }) =>
      wallet.writeContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "transferWithAuthorization",
        args: [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, sig.v, sig.r, sig.s],
        chain: null,
        gas: 300_000n,
        nonce: nonce++,
      }),
    cancel: async (m: TransferAuthorization) => {
      const sig = await signCancelAuthorization(buyer, domain, {
        authorizer: m.from,
        nonce: m.nonce,
      });
      return wallet.writeContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "cancelAuthorization",
        args: [m.from, m.nonce, sig.v, sig.r, sig.s],
        chain: null,
        gas: 300_000n,
        nonce: nonce++,
      });
    },
    flashblock: () => rpc("devnet_flashblock"),
    mine: () => rpc("devnet_mine"),
  };
}

function orderOf(devnet: Devnet, m: TransferAuthorization, signature: Hex) {
  return {
    chainId: devnet.chainId,
    token: devnet.token,
    authorizer: m.from,
    payee: m.to,
    value: m.value,
    validAfter: Number(m.validAfter),
    validBefore: Number(m.validBefore),
    nonce: m.nonce,
    kind: "transfer" as const,
    signature,
  };
}

function cliConfig(devnet: Devnet, database: Partial<Config["database"]>): string {
  const dir = mkdtempSync(join(tmpdir(), "flashindex-orders-cli-"));
  return writeConfig(dir, {
    chainId: devnet.chainId,
    rpc: { http: [devnet.httpUrl], retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 } },
    tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
    database,
    metrics: { enabled: false },
  });
}

describe("orders on chain", () => {
  test("a capture moves the order to captured pre-confirmed, then confirmed; `auth` agrees with the contract and reports not seen", async () => {
    const { db, devnet, config } = await startFollower({}, open);
    const p = await parties(devnet);
    const m = p.authorization();
    const sig = await p.sign(m);
    const id = createSqliteOrders(db).add(orderOf(devnet, m, sig.signature), Date.now()).id;

    const txHash = await p.capture(m, sig);
    await p.flashblock();
    await waitFor(
      () => createSqliteOrders(db).get(id)?.state === "captured",
      5_000,
      "pre-confirmed capture",
    );
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      eventStatus: "preconfirmed",
      eventTxHash: txHash,
    });
    await p.mine();
    await waitFor(
      () => createSqliteOrders(db).get(id)?.eventStatus === "confirmed",
      5_000,
      "confirmed capture",
    );
    expect(
      createSqliteOrders(db)
        .transitions(id)
        .map((t) => `${t.toState}:${t.eventStatus ?? ""}`),
    ).toEqual(["authorized:", "captured:preconfirmed", "captured:confirmed"]);

    const path = cliConfig(devnet, config.database);
    const auth = await runCli(["auth", devnet.token, m.from, m.nonce, "--config", path, "--json"]);
    expect(auth.code, auth.stderr).toBe(0);
    expect(JSON.parse(auth.stdout)).toMatchObject({
      state: "captured",
      contract_used: true,
      comparison: "agree",
      indexed: {
        status: "confirmed",
        captured_from: m.from.toLowerCase(),
        captured_to: m.to.toLowerCase(),
        captured_value: "2500000",
        tx_hash: txHash,
      },
    });
    const unseen = await runCli(["auth", devnet.token, m.from, nextNonce(), "--config", path]);
    expect(unseen.code, unseen.stderr).toBe(0);
    expect(unseen.stdout).toContain("not seen");
    expect(unseen.stdout).toContain("authorizationState: false (unused)");

    // A database claiming a confirmed capture of a nonce the contract says unused: reported, exit 1.
    const fakePath = join(mkdtempSync(join(tmpdir(), "flashindex-fake-")), "index.db");
    const fake = openDatabase(fakePath, devnet.chainId);
    const unused = nextNonce();
    const fakeLog = {
      address: devnet.token.toLowerCase() as Address,
      topics: [AUTHORIZATION_USED_TOPIC, word(m.from.slice(2).toLowerCase()), unused] as Hex[],
      data: "0x" as Hex,
      blockNumber: 1,
      blockHash: word("f1"),
      blockTimestamp: 1,
      transactionHash: word("f2"),
      transactionIndex: 0,
      logIndex: 0,
      removed: false,
    };
    fake
      .transaction(() =>
        createSqliteLifecycle(fake).applyCanonicalBlock(
          1,
          toLogRows([fakeLog], {
            chainId: devnet.chainId,
            statusOf: () => "confirmed",
            source: "head",
            timestampOf: () => 1,
          }).rows,
          Date.now(),
        ),
      )
      .immediate();
    fake.close();
    const disagree = await runCli([
      "auth",
      devnet.token,
      m.from,
      unused,
      "--config",
      cliConfig(devnet, { path: fakePath }),
    ]);
    expect(disagree.code).toBe(1);
    expect(disagree.stdout).toContain(
      "DISAGREEMENT: the indexer says captured (confirmed) but the contract says unused",
    );
  });

  test("a cancel moves the order to canceled; the capture after it reverts and the order stays canceled", async () => {
    const { db, devnet } = await startFollower({}, open);
    const p = await parties(devnet);
    const m = p.authorization();
    const sig = await p.sign(m);
    const id = createSqliteOrders(db).add(orderOf(devnet, m, sig.signature), Date.now()).id;
    createSqliteOrders(db).void(id, Date.now());

    const cancelTx = await p.cancel(m);
    const captureTx = await p.capture(m, sig);
    await p.flashblock();
    await p.mine();
    await waitFor(
      () => createSqliteOrders(db).get(id)?.eventStatus === "confirmed",
      5_000,
      "confirmed cancel",
    );
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      state: "canceled",
      eventTxHash: cancelTx,
      voidedThenCaptured: false,
    });
    expect((await p.publicClient.getTransactionReceipt({ hash: cancelTx })).status).toBe("success");
    expect((await p.publicClient.getTransactionReceipt({ hash: captureTx })).status).toBe(
      "reverted",
    );
    expect(
      createSqliteOrders(db)
        .transitions(id)
        .some((t) => t.toState === "captured"),
    ).toBe(false);
  });

  test("a voided order captured anyway is flagged, logged at error level and counted", async () => {
    const { db, devnet } = await startFollower({}, open);
    const p = await parties(devnet);
    const m = p.authorization();
    const sig = await p.sign(m);
    const id = createSqliteOrders(db).add(orderOf(devnet, m, sig.signature), Date.now()).id;
    createSqliteOrders(db).void(id, Date.now());
    const { logger, lines } = createMemoryLogger();
    const metrics = createMetrics({ defaultMetrics: false });
    const upkeep = createOrderUpkeep({
      logger,
      metrics,
      store: createSqliteStore({ db, chainId: devnet.chainId, metrics }),
    });
    expect((await upkeep.tick(Date.now())).flagged).toEqual([]);

    await p.capture(m, sig);
    await p.flashblock();
    await waitFor(
      () => createSqliteOrders(db).get(id)?.state === "captured",
      5_000,
      "capture of the voided order",
    );
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      voidedThenCaptured: true,
      offchainState: "voided_offchain",
    });
    expect((await upkeep.tick(Date.now())).flagged).toEqual([id]);
    expect((await upkeep.tick(Date.now())).flagged).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines.filter((l) => l.msg === "Captured a voided order")).toMatchObject([
      { level: "error", order_id: id },
    ]);
    expect(
      (
        await metrics.registry.getSingleMetricAsString(
          "flashindex_orders_voided_then_captured_total",
        )
      )
        .split("\n")
        .at(-1),
    ).toBe("flashindex_orders_voided_then_captured_total 1");
    // A restarted daemon does not alert again.
    expect(
      (
        await createOrderUpkeep({
          logger,
          metrics,
          store: createSqliteStore({ db, chainId: devnet.chainId, metrics }),
        }).tick(Date.now())
      ).flagged,
    ).toEqual([]);
  });

  test("`order add` takes a smart wallet's (ERC-1271) long signature and stores what the token accepts; one the wallet refuses exits 1", async () => {
    const { devnet, config } = await startFollower({ pendingPoll: 0 }, open);
    const p = await parties(devnet);
    const path = cliConfig(devnet, config.database);
    const wallet = devnet.wallet!;
    expect(wallet).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const m = p.authorization({ from: wallet });
    const flags = (signature: Hex) =>
      Object.entries({
        "--token": devnet.token,
        "--from": m.from,
        "--to": m.to,
        "--value": m.value.toString(),
        "--valid-after": m.validAfter.toString(),
        "--valid-before": m.validBefore.toString(),
        "--nonce": m.nonce,
        "--signature": signature,
      }).flat();
    // The devnet wallet's owner is the buyer's key; the wallet ignores the data after the first 65 bytes.
    const long = `${(await p.sign(m, p.buyer)).signature}${"cd".repeat(100)}` as Hex;

    const refused = await runCli([
      "order",
      "add",
      "--config",
      path,
      ...flags((await p.sign(m, privateKeyToAccount(devnet.privateKeys[4]!))).signature),
    ]);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain("isValidSignature refuses");

    const added = await runCli(["order", "add", "--config", path, "--json", ...flags(long)]);
    expect(added.code, added.stderr).toBe(0);
    const order = JSON.parse(added.stdout) as {
      id: number;
      state: string;
      signature: Hex;
      authorizer: string;
    };
    expect(order).toMatchObject({
      state: "authorized",
      signature: long.toLowerCase(),
      authorizer: wallet.toLowerCase(),
    });

    // The stored signature captures on chain through the bytes overload.
    const merchant = createWalletClient({ account: p.merchant, transport: http(devnet.httpUrl) });
    const hash = await merchant.writeContract({
      address: devnet.token,
      abi: flashTestTokenAbi,
      functionName: "transferWithAuthorization",
      chain: null,
      gas: 300_000n,
      args: [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, order.signature],
      nonce: await p.publicClient.getTransactionCount({
        address: p.merchant.address,
        blockTag: "pending",
      }),
    });
    await p.flashblock();
    await p.mine();
    expect((await p.publicClient.getTransactionReceipt({ hash })).status).toBe("success");
  }, 120_000);
});

describe.each(BACKENDS)("orders through the CLI on $name", (backend) => {
  test("`order add` verifies the signature over the RPC: a wrong signer exits 1, bad flags exit 2 naming the flag", async () => {
    const { devnet, config } = await startFollower({ pendingPoll: 0, backend }, open);
    const p = await parties(devnet);
    const path = cliConfig(devnet, config.database);
    const m = p.authorization();
    const flags = (signature: Hex, overrides: Record<string, string> = {}) =>
      Object.entries({
        "--token": devnet.token,
        "--from": m.from,
        "--to": m.to,
        "--value": m.value.toString(),
        "--valid-after": m.validAfter.toString(),
        "--valid-before": m.validBefore.toString(),
        "--nonce": m.nonce,
        "--signature": signature,
        ...overrides,
      }).flat();

    const stranger = privateKeyToAccount(devnet.privateKeys[4]!);
    const wrong = await runCli([
      "order",
      "add",
      "--config",
      path,
      ...flags((await p.sign(m, stranger)).signature),
    ]);
    expect(wrong.code, wrong.stderr).toBe(1);
    expect(wrong.stderr).toContain(`signature was made by ${stranger.address}, not by from`);

    const good = (await p.sign(m)).signature;
    for (const [flag, value] of [
      ["--value", "1.5"],
      ["--nonce", "0x1234"],
      ["--from", "0xnope"],
      ["--signature", "0xdea"],
      ["--kind", "pull"],
      ["--valid-before", "0"],
    ] as const) {
      const bad = await runCli([
        "order",
        "add",
        "--config",
        path,
        ...flags(good, { [flag]: value }),
      ]);
      expect(bad.code, `${flag} ${bad.stderr}`).toBe(2);
      expect(bad.stderr.trim().split("\n")).toHaveLength(1);
      expect(bad.stderr).toContain(flag);
    }
    // The value signed is not the value claimed: the signature recovers to someone else.
    expect(
      (await runCli(["order", "add", "--config", path, ...flags(good, { "--value": "9" })])).code,
    ).toBe(1);
    // Hex bytes, but not the 65 bytes an authorizer without code must sign with: the token would refuse it.
    const short = await runCli(["order", "add", "--config", path, ...flags("0xdead")]);
    expect(short.code, short.stderr).toBe(1);
    expect(short.stderr).toContain("exactly 65 bytes");

    const added = await runCli(["order", "add", "--config", path, "--json", ...flags(good)]);
    expect(added.code, added.stderr).toBe(0);
    const order = JSON.parse(added.stdout) as { id: number; state: string };
    expect(order.state).toBe("authorized");
    expect((await runCli(["order", "void", String(order.id), "--config", path])).stdout).toContain(
      `order ${order.id} voided_offchain`,
    );
    const again = await runCli(["order", "void", String(order.id), "--config", path]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("is voided_offchain: it cannot become voided_offchain");
    const list = await runCli([
      "order",
      "list",
      "--state",
      "voided_offchain",
      "--json",
      "--config",
      path,
    ]);
    expect((JSON.parse(list.stdout) as Array<{ id: number }>).map((o) => o.id)).toEqual([order.id]);
    const show = await runCli(["order", "show", String(order.id), "--config", path]);
    expect(show.stdout).toContain("authorized -> voided_offchain  voided");
    expect((await runCli(["order", "show", "999", "--config", path])).code).toBe(1);
  }, 120_000);
});
