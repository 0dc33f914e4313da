import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import type { Config } from "../../src/config/types.js";
import { ANVIL_PRIVATE_KEYS } from "../../src/devnet/anvil.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import { topicWord } from "../../src/sync/watchedLogs.js";
import { tokenCheckpoint } from "../../src/sync/watchScope.js";
import {
  BACKENDS,
  stopFileBackends,
  type TableReader,
  type TestBackend,
} from "../helpers/backends.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

// The payment chain's actors (helpers/paymentChain.ts): the buyer pays recipients 0x…01, 0x…02, … and,
// by transferWithAuthorization, the relayer; it cancels one authorization per round too.
const actor = (i: number) =>
  privateKeyToAccount(ANVIL_PRIVATE_KEYS[i] as Hex).address.toLowerCase() as Hex;
const BUYER = actor(1);
const RELAYER = actor(2);
const SHOP = `0x${"2".padStart(40, "0")}` as Hex;

let chain: PaymentChain;
let head: number;
beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(4);
  head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
}, 60_000);
afterAll(async () => {
  await chain?.stop();
  await stopFileBackends();
});

type LogRecord = {
  topic0: string;
  topic1: string | null;
  topic2: string | null;
  tx_hash: string;
  [column: string]: unknown;
};

/** Every column of `logs` a user reads but the row id, our clock and the twin position (counted among the logs fetched). */
const readLogs = (db: TableReader) =>
  db.all<LogRecord>(
    "SELECT chain_id, address, topic0, topic1, topic2, topic3, data, block_number, block_hash, block_timestamp, tx_hash, tx_index, log_index, status FROM logs ORDER BY block_number, log_index",
  );

/** The logs of an unscoped index that concern `watched`: transfers from or to them, their authorizations, and the AuthorizationUsed of the payments they received. */
function concerning(all: readonly LogRecord[], watched: readonly Hex[]): LogRecord[] {
  const words = new Set(watched.map(topicWord));
  const received = new Set(
    all
      .filter((l) => l.topic0 === TRANSFER_TOPIC && words.has(l.topic2 as Hex))
      .map((l) => `${l.tx_hash}:${l.topic1}`),
  );
  return all.filter((l) => {
    if (l.topic0 === TRANSFER_TOPIC)
      return words.has(l.topic1 as Hex) || words.has(l.topic2 as Hex);
    return (
      words.has(l.topic1 as Hex) ||
      (l.topic0 === AUTHORIZATION_USED_TOPIC && received.has(`${l.tx_hash}:${l.topic1}`))
    );
  });
}

async function setUp(
  backend: TestBackend,
  database: Record<string, unknown>,
  watch: readonly Hex[] | undefined,
) {
  const config = testConfig({
    attribution: { enabled: false },
    rpc: { http: [chain.anvil.httpUrl] },
    tokens: [
      {
        address: chain.token,
        startBlock: chain.deployBlock,
        ...(watch === undefined ? {} : { watch: { addresses: watch } }),
      },
    ],
    backfill: { windowBlocks: 3, concurrency: 3 },
    finality: { depth: 0 },
    database,
  });
  const deps = testDeps(config);
  const client = createRpcClient(deps);
  const store = await openStore(config, { metrics: deps.metrics });
  const reader = await backend.reader(config.database as Config["database"]);
  const run = () =>
    backfill(createSyncDeps({ ...deps, client }, store), { to: head, finalized: head });
  return {
    ...deps,
    store,
    reader,
    run,
    close: async () => (await store.close(), await reader.close()),
  };
}

describe.each(BACKENDS)("a watched backfill on $name", (backend) => {
  test("stores exactly the rows of an unscoped one that concern the watched addresses; an address added later gets its history, one removed keeps its rows", async () => {
    const whole = await setUp(backend, await backend.freshDatabase(), undefined);
    await whole.run();
    const all = await readLogs(whole.reader);
    await whole.close();

    const database = await backend.freshDatabase();
    const shop = await setUp(backend, database, [SHOP, RELAYER]);
    await shop.run();
    const stored = await readLogs(shop.reader);
    const expected = concerning(all, [SHOP, RELAYER]);
    // The relayer's payments by authorization bring their AuthorizationUsed (authorizer: the buyer, not watched); the buyer's cancels stay out.
    expect(expected.some((l) => l.topic0 === AUTHORIZATION_USED_TOPIC)).toBe(true);
    expect(expected.length).toBeLessThan(all.length / 2);
    expect(stored).toEqual(expected);
    const states = await shop.reader.all("SELECT * FROM authorization_states ORDER BY nonce");
    expect(states.length).toBeGreaterThan(0);
    await shop.close();

    // The buyer added: its history (every transfer it sent, its cancels) is fetched; nothing else is asked again.
    const more = await setUp(backend, database, [SHOP, RELAYER, BUYER]);
    const token = more.config.tokens[0]!;
    expect(await tokenCheckpoint(more.store, token)).toBe(chain.deployBlock - 1);
    await more.run();
    expect(await tokenCheckpoint(more.store, token)).toBe(head);
    expect(await readLogs(more.reader)).toEqual(concerning(all, [SHOP, RELAYER, BUYER]));
    expect(more.lines.find((l) => l.msg === "Changed the watch list")).toMatchObject({
      added: [BUYER],
      removed: [],
      backfill_from_block: chain.deployBlock,
    });
    const fetched = more.lines.find((l) => l.msg === "Started backfill");
    expect(fetched).toMatchObject({ from_block: chain.deployBlock, to_block: head });
    await more.close();

    // Removing addresses keeps their rows; nothing is fetched for the ones left.
    const fewer = await setUp(backend, database, [SHOP]);
    await fewer.run();
    expect(await readLogs(fewer.reader)).toEqual(concerning(all, [SHOP, RELAYER, BUYER]));
    expect(fewer.lines.find((l) => l.msg === "Changed the watch list")).toMatchObject({
      added: [],
      removed: [BUYER, RELAYER].sort(),
    });
    expect(fewer.lines.some((l) => l.msg === "Started backfill")).toBe(false);
    await fewer.close();

    // Back to every log: the ranges synced for addresses cover no other; the whole history is fetched and nothing stored twice.
    const everything = await setUp(backend, database, undefined);
    await everything.run();
    expect(await readLogs(everything.reader)).toEqual(all);
    expect(everything.lines.find((l) => l.msg === "Changed the watch list")).toMatchObject({
      watched_now: "every log",
      backfill_from_block: chain.deployBlock,
    });
    await everything.close();
  }, 120_000);

  test("asks for the authorizations of a stored order's authorizer, and the order follows them", async () => {
    const whole = await setUp(backend, await backend.freshDatabase(), undefined);
    await whole.run();
    const all = await readLogs(whole.reader);
    await whole.close();

    const shop = await setUp(backend, await backend.freshDatabase(), [SHOP]);
    // The buyer's first canceled nonce (helpers/paymentChain.ts): an order the shop holds, canceled on chain.
    const nonce = `0x${"2".padStart(64, "0")}` as Hex;
    const order = await shop.store.addOrder(
      {
        chainId: 8453,
        token: chain.token,
        authorizer: BUYER,
        payee: SHOP,
        value: 1n,
        validAfter: 0,
        validBefore: 4_000_000_000,
        nonce,
        kind: "transfer",
        signature: `0x${"11".repeat(65)}`,
      },
      Date.now(),
    );
    await shop.run();
    const byBuyer = all.filter((l) => l.topic0 !== TRANSFER_TOPIC && l.topic1 === topicWord(BUYER));
    expect(byBuyer.length).toBeGreaterThan(4);
    expect(await readLogs(shop.reader)).toEqual(
      all.filter((l) => concerning(all, [SHOP]).includes(l) || byBuyer.includes(l)),
    );
    expect((await shop.store.getOrder(order.id))?.state).toBe("canceled");
    await shop.close();
  }, 120_000);
});
