import type { Address, Hex } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { PRECONFIRMED_BLOCK_HASH as ZERO_HASH, type RpcLog } from "../../src/rows/rpcLog.js";
import type { Config } from "../../src/config/types.js";
import { type LogStatus } from "../../src/rows/logRow.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createMetrics } from "../../src/ops/metrics.js";
import {
  ORDER_TRANSITIONS,
  OrderExistsError,
  OrderStateError,
  type NewOrder,
} from "../../src/store/orderStates.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import {
  BACKENDS,
  stopFileBackends,
  type TableReader,
  type TestBackend,
} from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";
import { waitFor } from "../helpers/devnetPayments.js";
import { word } from "../helpers/fixtures.js";

const TOKEN: Address = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE: Address = "0x00000000000000000000000000000000000a11ce";
const SHOP: Address = "0x0000000000000000000000000000000000005409";
const NOW = 1_700_000_000_000;

const open: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
afterAll(() => stopFileBackends());

async function freshStore(
  backend: TestBackend,
): Promise<{ store: Store; raw: TableReader; database: Config["database"] }> {
  const config = testConfig({
    rpc: { http: ["http://127.0.0.1:9"] },
    database: await backend.freshDatabase(),
  });
  const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  open.push(store);
  const raw = await backend.reader(config.database as Config["database"], { writable: true });
  open.push(raw);
  return { store, raw, database: config.database };
}

function order(nonce: Hex): NewOrder {
  return {
    chainId: 8453,
    token: TOKEN,
    authorizer: ALICE,
    payee: SHOP,
    value: 1_000_000n,
    validAfter: 0,
    validBefore: NOW / 1000 + 3600,
    nonce,
    kind: "transfer",
    signature: `0x${"11".repeat(65)}`,
  };
}

/** A capture's logs (AuthorizationUsed + Transfer in one transaction) as the store takes them. */
function capture(nonce: Hex, block: number, status: LogStatus) {
  const base = {
    address: TOKEN,
    blockNumber: block,
    blockHash: status === "preconfirmed" ? ZERO_HASH : word(`b${block}`),
    blockTimestamp: 1_700_000_000,
    transactionHash: word(`c${nonce.slice(-6)}`),
    transactionIndex: 0,
    removed: false,
  };
  const logs: RpcLog[] = [
    { ...base, topics: [AUTHORIZATION_USED_TOPIC, word(ALICE), nonce], data: "0x", logIndex: 0 },
    {
      ...base,
      topics: [TRANSFER_TOPIC, word(ALICE), word(SHOP)],
      data: word("f4240"),
      logIndex: 1,
    },
  ];
  return toLogRows(logs, {
    chainId: 8453,
    statusOf: () => status,
    source: status === "preconfirmed" ? "pending" : "head",
    timestampOf: () => 0,
  }).rows;
}

const confirmBlock = (store: Store, block: number, rows: ReturnType<typeof capture>) =>
  store.applyChainChange(
    { kind: "head_block", orphaned: [], blocks: [{ number: block, rows }], synced: [] },
    NOW,
  );

const trail = async (store: Store, id: number) =>
  (await store.listTransitions(id)).map(
    (t) =>
      `${t.fromState ?? "-"}>${t.toState}${t.eventStatus ? `(${t.eventStatus})` : ""}:${t.cause}`,
  );

describe.each(BACKENDS)("orders through the store on $name", (backend) => {
  test("the allowed transitions in SQL are exactly ORDER_TRANSITIONS", async () => {
    const { raw } = await freshStore(backend);
    const rows = await raw.all<{ t: string }>(
      "SELECT from_state || '>' || to_state AS t FROM order_state_transitions",
    );
    expect(rows.map((r) => r.t).sort()).toEqual(
      [...new Set(ORDER_TRANSITIONS.map((t) => `${t.from}>${t.to}`))].sort(),
    );
  });

  test("add, void, capture by a pre-confirmed then confirmed event, with the audit trail; illegal changes refused in SQL", async () => {
    const { store, raw } = await freshStore(backend);
    const added = await store.addOrder(order(word("a1")), NOW);
    expect(added).toMatchObject({
      id: 1,
      state: "authorized",
      value: "1000000",
      eventStatus: null,
      voidedThenCaptured: false,
      authorizer: ALICE,
    });
    await expect(store.addOrder(order(word("a1")), NOW)).rejects.toThrow(OrderExistsError);

    await store.insertPreconfirmed(capture(word("a1"), 10, "preconfirmed"), NOW);
    expect(await store.getOrder(added.id)).toMatchObject({
      state: "captured",
      eventStatus: "preconfirmed",
    });
    await confirmBlock(store, 10, capture(word("a1"), 10, "confirmed"));
    expect(await store.getOrder(added.id)).toMatchObject({
      state: "captured",
      eventStatus: "confirmed",
    });
    await expect(store.voidOrder(added.id, NOW)).rejects.toThrow(OrderStateError);
    expect(await trail(store, added.id)).toEqual([
      "->authorized:added",
      "authorized>captured(preconfirmed):captured",
      "captured>captured(confirmed):event_confirmed",
    ]);

    const voided = await store.addOrder(order(word("a2")), NOW);
    expect(await store.voidOrder(voided.id, NOW)).toMatchObject({ state: "voided_offchain" });
    expect(await store.expireOrders(NOW + 10_000_000_000)).toEqual([voided.id]);
    // expired -> voided_offchain is not an allowed transition: the database itself refuses it.
    await expect(
      raw.all("UPDATE orders SET state = 'voided_offchain' WHERE id = ?", [voided.id]),
    ).rejects.toThrow(/illegal order transition/);
    expect((await store.listOrders({ state: "expired" })).map((o) => o.id)).toEqual([voided.id]);
  });
});

describe("orders on postgres: a void racing a capture on two connections", () => {
  const backend = BACKENDS.find((b) => b.name === "postgres")!;

  test("the capture waits for the uncommitted void, then lands on the voided order and is flagged", async () => {
    const { store, raw, database } = await freshStore(backend);
    const watcher = await backend.reader(database);
    open.push(watcher);
    const id = (await store.addOrder(order(word("h2")), NOW)).id;
    await raw.all("BEGIN");
    await raw.all(
      "UPDATE orders SET state = 'voided_offchain', offchain_state = 'voided_offchain' WHERE id = ? AND state = 'authorized'",
      [id],
    );
    const captured = confirmBlock(store, 21, capture(word("h2"), 21, "confirmed"));
    // The daemon's transaction is blocked on the order row the void holds.
    await waitFor(
      async () => {
        const [row] = await watcher.all<{ n: number }>(
          "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'flashindex' AND wait_event_type = 'Lock'",
        );
        return row!.n > 0;
      },
      10_000,
      "the capture waiting for the void's lock",
    );
    await raw.all("COMMIT");
    await captured;
    expect(await store.getOrder(id)).toMatchObject({
      state: "captured",
      offchainState: "voided_offchain",
      voidedThenCaptured: true,
    });
    expect(
      (await store.voidedThenCapturedSince(0)).map((t) => [t.orderId, t.fromState, t.toState]),
    ).toEqual([[id, "voided_offchain", "captured"]]);
  });

  test("a void after a committed capture is refused, whichever connection asks", async () => {
    const { store } = await freshStore(backend);
    const id = (await store.addOrder(order(word("h1")), NOW)).id;
    await confirmBlock(store, 20, capture(word("h1"), 20, "confirmed"));
    await expect(store.voidOrder(id, NOW)).rejects.toThrow(
      /order 1 is captured: it cannot become voided_offchain/,
    );
    expect(await store.getOrder(id)).toMatchObject({
      state: "captured",
      voidedThenCaptured: false,
    });
  });
});
