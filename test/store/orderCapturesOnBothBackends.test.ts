import type { Address, Hex } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { PRECONFIRMED_BLOCK_HASH as ZERO_HASH, type RpcLog } from "../../src/rows/rpcLog.js";
import type { Config } from "../../src/config/types.js";
import { type LogStatus } from "../../src/rows/logRow.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createMetrics } from "../../src/ops/metrics.js";
import {
  OrderStateError,
  type CaptureTransaction,
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
import { captureHolder } from "../../src/store/nonceBook.js";

const TOKEN: Address = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE: Address = "0x00000000000000000000000000000000000a11ce";
const SHOP: Address = "0x0000000000000000000000000000000000005409";
const RELAYER: Address = "0x000000000000000000000000000000000000beef";
const word = (hex: string) => `0x${hex.replace(/^0x/, "").padStart(64, "0")}` as Hex;
const NOW = 1_700_000_000_000;

const open: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
afterAll(() => stopFileBackends());

async function freshStore(backend: TestBackend): Promise<{ store: Store; raw: TableReader }> {
  const config = testConfig({
    rpc: { http: ["http://127.0.0.1:9"] },
    database: await backend.freshDatabase(),
  });
  const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  open.push(store);
  const raw = await backend.reader(config.database as Config["database"], { writable: true });
  open.push(raw);
  return { store, raw };
}

function order(nonce: Hex, source: NewOrder["source"] = "merchant"): NewOrder {
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
    source,
  };
}

function signed(tag: string, relayerNonce = 7): CaptureTransaction {
  return {
    relayer: RELAYER,
    relayerNonce,
    txHash: word(tag),
    rawTx: `0x02${tag.padStart(8, "0")}`,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  };
}

/** A capture's logs (AuthorizationUsed + Transfer in one transaction) as the store takes them. */
function captureLogs(nonce: Hex, txHash: Hex, block: number, status: LogStatus) {
  const base = {
    address: TOKEN,
    blockNumber: block,
    blockHash: status === "preconfirmed" ? ZERO_HASH : word(`b${block}`),
    blockTimestamp: 1_700_000_000,
    transactionHash: txHash,
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

/** Reserves the transaction's nonce for the order in the book, as the relay does, then starts the capture. */
async function start(store: Store, orderId: number, tx: CaptureTransaction, now: number) {
  await store.nonces.reserve(
    { relayer: tx.relayer, floor: tx.relayerNonce, holder: captureHolder(orderId), owner: "test" },
    now,
  );
  return store.captures.start(orderId, tx, now, "test");
}

const trail = async (store: Store, id: number) =>
  (await store.listTransitions(id)).map(
    (t) =>
      `${t.fromState ?? "-"}>${t.toState}${t.eventStatus ? `(${t.eventStatus})` : ""}:${t.cause}`,
  );

describe.each(BACKENDS)("capture intents through the store on $name", (backend) => {
  test("start() moves authorized → capturing with the signed bytes in one step; a second start returns the first intent", async () => {
    const { store } = await freshStore(backend);
    const added = await store.addOrder(order(word("c1"), "x402"), NOW);
    expect(added.source).toBe("x402");
    const first = await start(store, added.id, signed("aa"), NOW + 1);
    expect(first.created).toBe(true);
    expect(first.order).toMatchObject({ state: "capturing", eventStatus: null });
    expect(first.capture).toMatchObject({
      orderId: added.id,
      relayer: RELAYER,
      relayerNonce: 7,
      txHash: word("aa"),
      rawTx: "0x02000000aa",
      status: "sent",
      broadcasts: 0,
      maxFeePerGas: 2_000_000_000n,
    });

    const second = await start(store, added.id, signed("bb", 8), NOW + 2);
    expect(second.created).toBe(false);
    expect(second.capture.txHash).toBe(word("aa"));
    expect((await store.captures.get(added.id))?.rawTx).toBe("0x02000000aa");
    expect(await trail(store, added.id)).toEqual([
      "->authorized:added",
      "authorized>capturing:capture_sent",
    ]);
    expect((await store.listTransitions(added.id)).at(-1)?.txHash).toBe(word("aa"));
    await expect(store.voidOrder(added.id, NOW)).rejects.toThrow(OrderStateError);
    expect((await store.captures.pending()).map((p) => p.order.id)).toEqual([added.id]);
  });

  test("recordGas() keeps what the paid receipt says the capture cost (schema 17), null until then", async () => {
    const { store, raw } = await freshStore(backend);
    const added = await store.addOrder(order(word("g1"), "x402"), NOW);
    const started = await start(store, added.id, signed("ga"), NOW + 1);
    expect(started.capture).toMatchObject({ gasUsed: null, effectiveGasPrice: null });
    // Beyond 2^64: the columns hold any uint256 the node says.
    await store.captures.recordGas(
      added.id,
      word("ga"),
      { gasUsed: 61_234n, effectiveGasPrice: 2n ** 70n },
      NOW + 2,
    );
    expect(await store.captures.get(added.id)).toMatchObject({
      gasUsed: 61_234n,
      effectiveGasPrice: 2n ** 70n,
    });
    expect(await raw.all("SELECT gas_tx_hash FROM order_captures")).toEqual([
      { gas_tx_hash: word("ga") },
    ]);
    await store.captures.recordGas(
      added.id,
      word("ga"),
      { gasUsed: 61_234n, effectiveGasPrice: null },
      NOW + 3,
    );
    expect(await store.captures.get(added.id)).toMatchObject({
      gasUsed: 61_234n,
      effectiveGasPrice: null,
    });
  });

  test("capturedWithoutGas() lists the captured orders whose gas no process recorded, changed since a time, until it is recorded", async () => {
    const { store } = await freshStore(backend);
    const captured = await store.addOrder(order(word("h1")), NOW);
    await start(store, captured.id, signed("h1", 7), NOW);
    await store.captures.recordBroadcast(captured.id, word("h1"), NOW + 1);
    const capturing = await store.addOrder(order(word("h2")), NOW);
    await start(store, capturing.id, signed("h2", 8), NOW);
    await store.captures.recordBroadcast(capturing.id, word("h2"), NOW + 1);
    expect(await store.captures.capturedWithoutGas(NOW)).toEqual([]);

    await store.applyChainChange(
      {
        kind: "head_block",
        orphaned: [],
        blocks: [{ number: 12, rows: captureLogs(word("h1"), word("h1"), 12, "confirmed") }],
        synced: [],
      },
      NOW,
    );
    const found = await store.captures.capturedWithoutGas(NOW);
    expect(found.map((f) => [f.order.id, f.order.state, f.capture.txHash])).toEqual([
      [captured.id, "captured", word("h1")],
    ]);
    // Still listed once its event is final (the intent landed): a restart may come after that.
    await store.finalizeThrough(12, NOW);
    expect((await store.captures.get(captured.id))?.status).toBe("landed");
    expect((await store.captures.capturedWithoutGas(NOW)).map((f) => f.order.id)).toEqual([
      captured.id,
    ]);
    // Not changed since: left out.
    expect(await store.captures.capturedWithoutGas(Date.now() + 60_000)).toEqual([]);
    await store.captures.recordGas(
      captured.id,
      word("h1"),
      { gasUsed: 60_001n, effectiveGasPrice: 3n },
      NOW + 2,
    );
    expect(await store.captures.capturedWithoutGas(NOW)).toEqual([]);
  });

  test("start() refuses a voided, expired or captured order and stores nothing", async () => {
    const { store, raw } = await freshStore(backend);
    const voided = await store.addOrder(order(word("d1")), NOW);
    await store.voidOrder(voided.id, NOW);
    await expect(start(store, voided.id, signed("d1"), NOW)).rejects.toThrow(
      /is voided_offchain: it cannot become capturing/,
    );
    const expired = await store.addOrder(order(word("d2")), NOW);
    await store.expireOrders(NOW + 10_000_000_000);
    await expect(start(store, expired.id, signed("d2"), NOW)).rejects.toThrow(/is expired/);
    expect(await raw.all("SELECT order_id FROM order_captures")).toEqual([]);
  });

  test("the event lands the order; a dropped pre-confirmation sends it back to capturing, not authorized; finality ends the intent", async () => {
    const { store } = await freshStore(backend);
    const added = await store.addOrder(order(word("e1")), NOW);
    await start(store, added.id, signed("e1"), NOW);
    await store.insertPreconfirmed(captureLogs(word("e1"), word("e1"), 10, "preconfirmed"), NOW);
    expect(await store.getOrder(added.id)).toMatchObject({
      state: "captured",
      eventStatus: "preconfirmed",
      eventTxHash: word("e1"),
    });
    expect(await store.captures.pending()).toEqual([]);

    // Block 10 comes without the transaction: the pre-confirmation is dropped.
    await store.applyChainChange(
      { kind: "head_block", orphaned: [], blocks: [{ number: 10, rows: [] }], synced: [] },
      NOW,
    );
    expect(await store.getOrder(added.id)).toMatchObject({ state: "capturing", eventStatus: null });
    expect((await store.captures.pending()).map((p) => p.capture.txHash)).toEqual([word("e1")]);

    await store.applyChainChange(
      {
        kind: "head_block",
        orphaned: [],
        blocks: [{ number: 11, rows: captureLogs(word("e1"), word("e1"), 11, "confirmed") }],
        synced: [],
      },
      NOW,
    );
    expect(await store.getOrder(added.id)).toMatchObject({
      state: "captured",
      eventStatus: "confirmed",
    });
    expect((await store.captures.get(added.id))?.status).toBe("sent");
    await store.finalizeThrough(11, NOW);
    expect(await store.getOrder(added.id)).toMatchObject({
      state: "captured",
      eventStatus: "finalized",
    });
    expect((await store.captures.get(added.id))?.status).toBe("landed");
    expect(await trail(store, added.id)).toEqual([
      "->authorized:added",
      "authorized>capturing:capture_sent",
      "capturing>captured(preconfirmed):captured",
      "captured>capturing:event_removed",
      "capturing>captured(confirmed):captured",
      "captured>captured(finalized):event_finalized",
    ]);
  });

  test("replace() keeps the old hash; abandon() sends the order back to authorized; expiry ends a live intent", async () => {
    const { store } = await freshStore(backend);
    const added = await store.addOrder(order(word("f1")), NOW);
    await start(store, added.id, signed("f1"), NOW);
    await store.captures.recordBroadcast(added.id, word("f1"), NOW + 5);
    expect(await store.captures.get(added.id)).toMatchObject({
      broadcasts: 1,
      lastBroadcastAt: NOW + 5,
    });
    const replaced = await store.captures.replace(
      added.id,
      { ...signed("f2"), maxFeePerGas: 3_000_000_000n },
      NOW + 6,
    );
    expect(replaced).toMatchObject({
      txHash: word("f2"),
      replacedTxHashes: [word("f1")],
      broadcasts: 0,
      lastBroadcastAt: null,
      maxFeePerGas: 3_000_000_000n,
    });
    expect(await store.captures.abandon(added.id, NOW + 7)).toMatchObject({ state: "authorized" });
    expect((await store.captures.get(added.id))?.status).toBe("abandoned");
    // Abandoned: a new capture may start over.
    expect((await start(store, added.id, signed("f3", 9), NOW + 8)).created).toBe(true);

    expect(await store.expireOrders(NOW + 10_000_000_000)).toEqual([added.id]);
    expect((await store.captures.get(added.id))?.status).toBe("expired");
    expect(await trail(store, added.id)).toEqual([
      "->authorized:added",
      "authorized>capturing:capture_sent",
      "capturing>authorized:capture_abandoned",
      "authorized>capturing:capture_sent",
      "capturing>expired:expired",
    ]);
  });

  test("findOrder() and payment ids: the first binding holds", async () => {
    const { store } = await freshStore(backend);
    const added = await store.addOrder(order(word("0A")), NOW);
    expect(
      (await store.captures.findOrder(8453, TOKEN.toUpperCase() as Address, ALICE, word("0a")))?.id,
    ).toBe(added.id);
    expect(await store.captures.findOrder(1, TOKEN, ALICE, word("0a"))).toBeUndefined();
    const binding = { paymentId: "pay_0123456789abcdef", fingerprint: "0xaa", orderId: added.id };
    expect(await store.captures.bindPaymentId(binding, NOW)).toEqual(binding);
    expect(await store.captures.bindPaymentId({ ...binding, fingerprint: "0xbb" }, NOW)).toEqual(
      binding,
    );
    expect(await store.captures.getPaymentId("pay_0123456789abcdef")).toEqual(binding);
    expect(await store.captures.getPaymentId("pay_other_id_0000000")).toBeUndefined();
  });
});
