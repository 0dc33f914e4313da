import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import DatabaseConstructor from "better-sqlite3";
import { createPublicClient, createWalletClient, http, keccak256, stringToHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  readTokenDomain,
  signCancelAuthorization,
  signTransferAuthorization,
  type TransferAuthorization,
} from "../../src/authorization/eip3009.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { startDevnet, type Devnet } from "../../src/devnet/startDevnet.js";
import type { Config } from "../../src/config/types.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { spawnCli, writeConfig } from "../helpers/cli.js";
import { testConfig } from "../helpers/context.js";
import { createPayer, waitFor } from "../helpers/devnetPayments.js";

const ORDERS = 8;
const KILLS = 5;
const SHOP = "0x000000000000000000000000000000000000c0de";

let devnet: Devnet;
let dir: string;
beforeAll(async () => {
  devnet = await startDevnet({ blockTimeMs: 800, flashblockIntervalMs: 200 });
  dir = mkdtempSync(join(tmpdir(), "flashindex-crash-"));
}, 60_000);
afterAll(async () => {
  await devnet?.stop();
  await stopFileBackends();
});

/** The buyer (key 1) signs authorizations; the merchant (key 2) captures them or the buyer's cancels, with local nonces. */
async function merchantDesk() {
  const buyer = privateKeyToAccount(devnet.privateKeys[1]!);
  const merchant = privateKeyToAccount(devnet.privateKeys[2]!);
  const publicClient = createPublicClient({ transport: http(devnet.httpUrl) });
  const wallet = createWalletClient({ account: merchant, transport: http(devnet.httpUrl) });
  const domain = await readTokenDomain(publicClient, devnet.token);
  const latest = (await publicClient.getBlock()).timestamp;
  let nonce = await publicClient.getTransactionCount({
    address: merchant.address,
    blockTag: "pending",
  });
  const authorizations: Array<
    TransferAuthorization & { signature: Awaited<ReturnType<typeof signTransferAuthorization>> }
  > = [];
  for (let i = 0; i < ORDERS; i++) {
    const m: TransferAuthorization = {
      from: buyer.address,
      to: merchant.address,
      value: 1_000_000n + BigInt(i),
      validAfter: 0n,
      validBefore: latest + 7200n,
      nonce: keccak256(stringToHex(`crash test ${Date.now()} ${i}`)),
    };
    authorizations.push({ ...m, signature: await signTransferAuthorization(buyer, domain, m) });
  }
  const write = (functionName: string, args: readonly unknown[]) =>
    wallet.writeContract({
      address: devnet.token,
      abi: flashTestTokenAbi,
      functionName,
      args,
      chain: null,
      gas: 300_000n,
      nonce: nonce++,
    } as never);
  return {
    authorizations,
    capture: (i: number) => {
      const a = authorizations[i]!;
      return write("transferWithAuthorization", [
        a.from,
        a.to,
        a.value,
        a.validAfter,
        a.validBefore,
        a.nonce,
        a.signature.v,
        a.signature.r,
        a.signature.s,
      ]);
    },
    cancel: async (i: number) => {
      const a = authorizations[i]!;
      const sig = await signCancelAuthorization(buyer, domain, {
        authorizer: a.from,
        nonce: a.nonce,
      });
      return write("cancelAuthorization", [a.from, a.nonce, sig.v, sig.r, sig.s]);
    },
  };
}

describe.each(BACKENDS)("realtime crash safety on $name", (backend) => {
  test("kill -9 at random moments (pre-confirmations, promotions, reorgs, order changes), then a restart: live rows equal the chain and every order matches its events", async () => {
    const database = (await backend.freshDatabase()) as Config["database"];
    const config = writeConfig(
      dir,
      {
        chainId: devnet.chainId,
        rpc: {
          http: [devnet.httpUrl],
          ws: devnet.wsUrl,
          preconfWs: devnet.wsUrl,
          retry: { maxAttempts: 4, initialDelayMs: 20, maxDelayMs: 200 },
        },
        tokens: [{ address: devnet.token, startBlock: devnet.tokenDeployBlock }],
        finality: { depth: 6 },
        realtime: { headPollIntervalMs: 200, pendingPollIntervalMs: 200 },
        database,
        metrics: { enabled: false },
        logLevel: "info",
      },
      `${backend.name}.json`,
    );
    const desk = await merchantDesk();
    const setup = await openStore(
      testConfig({ chainId: devnet.chainId, rpc: { http: [devnet.httpUrl] }, database }),
      { metrics: createMetrics({ defaultMetrics: false }) },
    );
    for (const a of desk.authorizations)
      await setup.addOrder(
        {
          chainId: devnet.chainId,
          token: devnet.token,
          authorizer: a.from,
          payee: a.to,
          value: a.value,
          validAfter: 0,
          validBefore: Number(a.validBefore),
          nonce: a.nonce,
          kind: "transfer",
          signature: a.signature.signature,
        },
        Date.now(),
      );
    await setup.close();

    // Traffic runs for the whole test: payments, captures and cancels of the orders, and reorgs.
    const payer = createPayer(devnet);
    let running = true;
    const traffic = (async () => {
      for (let step = 0; running; step++) {
        await payer.pay(SHOP, 1 + (step % 3)).catch(() => payer.resync());
        if (step % 4 === 1 && step / 4 < ORDERS)
          await (Math.floor(step / 4) % 2 === 0
            ? desk.capture(Math.floor(step / 4))
            : desk.cancel(Math.floor(step / 4)));
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    })();

    const kills: string[] = [];
    for (let k = 0; k < KILLS; k++) {
      const daemon = spawnCli(["start", "--config", config]);
      const exited = new Promise<number | null>((resolve) =>
        daemon.on("exit", (code) => resolve(code)),
      );
      await waitFor(
        () => daemon.output().stdout.includes("Caught up with the head"),
        30_000,
        `catch-up ${k}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 1_500));
      // Every other kill lands while a reorg is being applied.
      if (k % 2 === 1) {
        await payer.rpc("devnet_reorg", [2]);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 150));
      }
      daemon.kill("SIGKILL");
      await exited;
      kills.push(k % 2 === 1 ? "during a reorg" : "while following");
    }
    running = false;
    await traffic;
    expect(kills).toHaveLength(KILLS);

    const daemon = spawnCli(["start", "--config", config]);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      daemon.on("exit", (code, signal) => resolve({ code, signal })),
    );
    // Up before it is judged (and signalled): a SIGTERM that lands while Node still loads the modules,
    // before the daemon's handlers exist, ends it by the signal, as it would any process.
    await waitFor(
      () => daemon.output().stdout.includes("Caught up with the head"),
      30_000,
      "final catch-up",
    );
    const reader = await backend.reader(database);
    try {
      const canonical = async () =>
        (
          await payer.rpc<Array<{ blockHash: string; logIndex: string }>>("eth_getLogs", [
            {
              fromBlock: "0x0",
              toBlock: "latest",
              address: devnet.token,
              topics: [[...PAYMENT_TOPICS]],
            },
          ])
        )
          .map((l) => `${l.blockHash}:${Number(l.logIndex)}`)
          .sort()
          .join();
      const live = async () =>
        (
          await reader.all<{ block_hash: string; log_index: number }>(
            "SELECT block_hash, log_index FROM logs WHERE status IN ('confirmed', 'finalized')",
          )
        )
          .map((r) => `${r.block_hash}:${r.log_index}`)
          .sort()
          .join();
      const stalePreconfirmed = async () =>
        Number(
          (
            await reader.all<{ n: number }>(
              "SELECT COUNT(*) AS n FROM logs WHERE status = 'preconfirmed'",
            )
          )[0]!.n,
        );
      const settled = async () =>
        (await live()) === (await canonical()) && (await stalePreconfirmed()) === 0;
      await waitFor(settled, 30_000, "live rows equal the chain").catch(() => undefined);
      const chainLogs = (await canonical()).split(",");
      const liveLogs = (await live()).split(",");
      expect({
        missing: chainLogs.filter((l) => !liveLogs.includes(l)),
        extra: liveLogs.filter((l) => !chainLogs.includes(l)),
        duplicates: liveLogs.length - new Set(liveLogs).size,
        stalePreconfirmed: await stalePreconfirmed(),
      }).toEqual({ missing: [], extra: [], duplicates: 0, stalePreconfirmed: 0 });
      const mismatched = await reader.all(
        "SELECT * FROM order_chain_targets WHERE current_state IS DISTINCT FROM target_state OR current_status IS DISTINCT FROM event_status",
      );
      expect(mismatched).toEqual([]);
      const states = await reader.all(
        "SELECT state, COUNT(*) AS n FROM orders GROUP BY state ORDER BY state",
      );
      expect(states).toEqual([
        { state: "canceled", n: ORDERS / 2 },
        { state: "captured", n: ORDERS / 2 },
      ]);
      if (backend.name === "sqlite") {
        const file = new DatabaseConstructor(database.path, { readonly: true });
        expect(file.pragma("integrity_check", { simple: true })).toBe("ok");
        file.close();
      }
    } finally {
      await reader.close();
      daemon.kill("SIGTERM");
    }
    expect(await exited, daemon.output().stderr.slice(-2_000)).toEqual({ code: 0, signal: null });
  }, 240_000);
});
