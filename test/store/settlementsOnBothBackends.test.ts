import type { Address, Hex } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { PRECONFIRMED_BLOCK_HASH as ZERO_HASH, type RpcLog } from "../../src/rows/rpcLog.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createMetrics } from "../../src/ops/metrics.js";
import type { NewOrder } from "../../src/store/orderStates.js";
import { captureHolder } from "../../src/store/nonceBook.js";
import { openStore } from "../../src/store/openStore.js";
import type { Store } from "../../src/store/store.js";
import { BACKENDS, stopFileBackends } from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";

const TOKEN: Address = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE: Address = "0x00000000000000000000000000000000000a11ce";
const SHOP: Address = "0x0000000000000000000000000000000000005409";
const word = (hex: string) => `0x${hex.replace(/^0x/, "").padStart(64, "0")}` as Hex;
const NOW = 1_700_000_000_000;
const OPEN = { kind: "open", staleBefore: NOW - 60_000 } as const;

const open: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
afterAll(() => stopFileBackends());

/** Two stores (two connections, as two processes have) on one fresh database. */
async function twoStores(database: Record<string, unknown>): Promise<[Store, Store]> {
  const config = testConfig({ rpc: { http: ["http://127.0.0.1:9"] }, database });
  const first = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  open.push(first);
  const second = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
  open.push(second);
  return [first, second];
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
    source: "x402",
  };
}

function captureLogs(nonce: Hex, txHash: Hex, block: number) {
  const base = {
    address: TOKEN,
    blockNumber: block,
    blockHash: ZERO_HASH,
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
    statusOf: () => "preconfirmed",
    source: "pending",
    timestampOf: () => 0,
  }).rows;
}

describe.each(BACKENDS)("x402 settle claims on $name", (backend) => {
  test("of ten claims at once from two connections exactly one wins; only its holder records the answer", async () => {
    const [a, b] = await twoStores(await backend.freshDatabase());
    const { id } = await a.addOrder(order(word("a1")), NOW);
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).settlements.claim(id, `claim-${i}`, OPEN, NOW),
      ),
    );
    const winners = claims.filter((c) => c.claimed);
    expect(winners).toHaveLength(1);
    const holder = winners[0]!.settlement.claim;
    expect(
      claims.every((c) => c.settlement.claim === holder && c.settlement.state === "settling"),
    ).toBe(true);

    expect(
      await b.settlements.answer(
        id,
        "claim-other",
        { state: "succeeded", txHash: word("t1"), answer: "{}" },
        NOW + 1,
      ),
    ).toBe(false);
    expect(
      await a.settlements.answer(
        id,
        holder,
        { state: "succeeded", txHash: word("t1"), answer: '{"success":true}' },
        NOW + 2,
      ),
    ).toBe(true);
    // Answered once: the holder cannot answer again, and nobody claims a success.
    expect(
      await a.settlements.answer(
        id,
        holder,
        { state: "failed", txHash: null, answer: "{}" },
        NOW + 3,
      ),
    ).toBe(false);
    expect((await b.settlements.claim(id, "late", OPEN, NOW + 4)).claimed).toBe(false);
    expect((await b.settlements.claim(id, "late", { kind: "pending" }, NOW + 4)).claimed).toBe(
      false,
    );
    expect(await b.settlements.get(id)).toMatchObject({
      state: "succeeded",
      txHash: word("t1"),
      answer: '{"success":true}',
      answeredAt: NOW + 2,
      contradictedAt: null,
    });
  });

  test("addAndClaim() records the order and its claim in one step; of two at once on two connections one wins, the other finds the order", async () => {
    const [a, b] = await twoStores(await backend.freshDatabase());
    const results = await Promise.allSettled([
      a.settlements.addAndClaim(order(word("d1")), "one", NOW),
      b.settlements.addAndClaim(order(word("d1")), "two", NOW),
    ]);
    const won = results.filter((r) => r.status === "fulfilled");
    expect(won).toHaveLength(1);
    expect(results.find((r) => r.status === "rejected")).toMatchObject({
      reason: { name: "OrderExistsError" },
    });
    const { id } = (won[0] as PromiseFulfilledResult<{ id: number }>).value;
    expect(await a.getOrder(id)).toMatchObject({ state: "authorized", source: "x402" });
    const holder = (await b.settlements.get(id))!;
    expect(holder).toMatchObject({ state: "settling", claimedAt: NOW });
    expect(["one", "two"]).toContain(holder.claim);
    expect((await a.settlements.claim(id, "three", OPEN, NOW + 1)).claimed).toBe(false);
  });

  test("a pending answer is followed up once; a failure may be claimed again; a claim nobody answered is taken over after its lease", async () => {
    const [a, b] = await twoStores(await backend.freshDatabase());
    const pending = await a.addOrder(order(word("b1")), NOW);
    expect((await a.settlements.claim(pending.id, "first", OPEN, NOW)).claimed).toBe(true);
    expect(
      await a.settlements.answer(
        pending.id,
        "first",
        { state: "pending", txHash: word("t2"), answer: "{}" },
        NOW,
      ),
    ).toBe(true);
    // A first /settle's claim does not take a pending one: only its follow-up does, and only one of them.
    expect((await b.settlements.claim(pending.id, "x", OPEN, NOW + 1)).claimed).toBe(false);
    const followUps = await Promise.all(
      [a, b, a, b].map((s, i) =>
        s.settlements.claim(pending.id, `f${i}`, { kind: "pending" }, NOW + 2),
      ),
    );
    expect(followUps.filter((c) => c.claimed)).toHaveLength(1);

    const failed = await a.addOrder(order(word("b2")), NOW);
    await a.settlements.claim(failed.id, "first", OPEN, NOW);
    await a.settlements.answer(
      failed.id,
      "first",
      { state: "failed", txHash: word("t3"), answer: "{}" },
      NOW,
    );
    expect((await b.settlements.claim(failed.id, "retry", OPEN, NOW + 1)).claimed).toBe(true);

    const stale = await a.addOrder(order(word("b3")), NOW);
    await a.settlements.claim(stale.id, "died", OPEN, NOW);
    expect(
      (
        await b.settlements.claim(
          stale.id,
          "early",
          { kind: "open", staleBefore: NOW - 1 },
          NOW + 1,
        )
      ).claimed,
    ).toBe(false);
    expect(
      (
        await b.settlements.claim(
          stale.id,
          "later",
          { kind: "open", staleBefore: NOW + 1 },
          NOW + 2,
        )
      ).claimed,
    ).toBe(true);
    // The process that died and came back finds its claim gone: it must not answer.
    expect(
      await a.settlements.answer(
        stale.id,
        "died",
        { state: "succeeded", txHash: word("t4"), answer: "{}" },
        NOW + 3,
      ),
    ).toBe(false);
  });

  test("a success the chain contradicts later is flagged by the order's transition and raised as settlement.contradicted", async () => {
    const [store] = await twoStores(await backend.freshDatabase());
    await store.webhooks.syncSubscriptions(["http://127.0.0.1:9/hook"], 0, NOW);
    const { id } = await store.addOrder(order(word("c1")), NOW);
    // The relay reserves the nonce in the book before it stores the intent (schema 15).
    await store.nonces.reserve(
      { relayer: SHOP, floor: 1, holder: captureHolder(id), owner: "test" },
      NOW,
    );
    await store.captures.start(
      id,
      {
        relayer: SHOP,
        relayerNonce: 1,
        txHash: word("c1"),
        rawTx: "0x02aa",
        maxFeePerGas: 1n,
        maxPriorityFeePerGas: 1n,
      },
      NOW,
      "test",
    );
    await store.settlements.claim(id, "mine", OPEN, NOW);
    await store.insertPreconfirmed(captureLogs(word("c1"), word("c1"), 10), NOW);
    expect(
      await store.settlements.answer(
        id,
        "mine",
        { state: "succeeded", txHash: word("c1"), answer: "{}" },
        NOW,
      ),
    ).toBe(true);
    expect(await store.settlements.contradicted()).toBe(0);

    // Block 10 seals without the transaction: the pre-confirmed success did not happen (yet).
    await store.applyChainChange(
      { kind: "head_block", orphaned: [], blocks: [{ number: 10, rows: [] }], synced: [] },
      NOW,
    );
    expect(await store.getOrder(id)).toMatchObject({ state: "capturing" });
    expect(await store.settlements.get(id)).toMatchObject({
      state: "succeeded",
      contradiction: "captured -> capturing (event_removed)",
    });
    expect((await store.settlements.get(id))?.contradictedAt).toBeGreaterThan(0);
    expect(await store.settlements.contradicted()).toBe(1);
    const events = await store.webhooks.eventsAfter(0, 100);
    const raised = events.filter((e) => e.type === "settlement.contradicted");
    expect(raised).toHaveLength(1);
    expect(JSON.parse(raised[0]!.payload)).toMatchObject({
      settlement: {
        order_id: id,
        tx_hash: word("c1"),
        contradiction: "captured -> capturing (event_removed)",
      },
    });
  });

  test("every settle's final outcome is raised (schema 17): settled with its block once, failed with why, a pending one when the chain resolves it", async () => {
    const [store] = await twoStores(await backend.freshDatabase());
    await store.webhooks.syncSubscriptions(["http://127.0.0.1:9/hook"], 0, NOW);
    /** An x402 order with a stored capture intent and a claim held by "mine". */
    const capturing = async (tag: string, relayerNonce: number) => {
      const { id } = await store.addOrder(order(word(tag)), NOW);
      await store.nonces.reserve(
        { relayer: SHOP, floor: relayerNonce, holder: captureHolder(id), owner: "test" },
        NOW,
      );
      await store.captures.start(
        id,
        {
          relayer: SHOP,
          relayerNonce,
          txHash: word(tag),
          rawTx: "0x02aa",
          maxFeePerGas: 1n,
          maxPriorityFeePerGas: 1n,
        },
        NOW,
        "test",
      );
      await store.settlements.claim(id, "mine", OPEN, NOW);
      return id;
    };
    const outcomes = async () =>
      (await store.webhooks.eventsAfter(0, 100))
        .filter((e) => e.type === "settlement.settled" || e.type === "settlement.failed")
        .map((e) => ({
          type: e.type,
          ...(JSON.parse(e.payload) as { settlement: Record<string, unknown> }).settlement,
        }));

    // Answered: a success with the block its receipt was pre-confirmed for; a failure with its reason.
    const paid = await capturing("d1", 1);
    await store.settlements.answer(
      paid,
      "mine",
      { state: "succeeded", txHash: word("d1"), answer: "{}", blockNumber: 10n },
      NOW,
    );
    const refused = await capturing("d2", 2);
    await store.settlements.answer(
      refused,
      "mine",
      {
        state: "failed",
        txHash: word("d2"),
        answer: '{"success":false,"errorReason":"invalid_exact_evm_transaction_failed"}',
      },
      NOW,
    );
    expect(await outcomes()).toMatchObject([
      {
        type: "settlement.settled",
        order_id: paid,
        outcome: "settled",
        block_number: 10,
        tx_hash: word("d1"),
        reason: null,
      },
      {
        type: "settlement.failed",
        order_id: refused,
        outcome: "failed",
        reason: "invalid_exact_evm_transaction_failed",
        tx_hash: word("d2"),
      },
    ]);

    // Answered settlement_pending, then resolved by the chain: the capture's event lands in block 12.
    const pending = await capturing("d3", 3);
    await store.settlements.answer(
      pending,
      "mine",
      { state: "pending", txHash: word("d3"), answer: "{}" },
      NOW,
    );
    expect(await outcomes()).toHaveLength(2);
    await store.insertPreconfirmed(captureLogs(word("d3"), word("d3"), 12), NOW);
    expect(await store.getOrder(pending)).toMatchObject({ state: "captured" });
    // Its follow-up /settle answers success too: the merchant still hears of it once.
    await store.settlements.claim(pending, "follow-up", { kind: "pending" }, NOW + 1);
    await store.settlements.answer(
      pending,
      "follow-up",
      { state: "succeeded", txHash: word("d3"), answer: "{}", blockNumber: 12n },
      NOW + 1,
    );
    // Another pending one whose capture reverted: failed, with the order's cause.
    const reverted = await capturing("d4", 4);
    await store.settlements.answer(
      reverted,
      "mine",
      { state: "pending", txHash: word("d4"), answer: "{}" },
      NOW,
    );
    await store.captures.abandon(reverted, NOW + 2, {
      cause: "capture_reverted",
      txHash: word("d4"),
    });
    expect((await outcomes()).slice(2)).toMatchObject([
      {
        type: "settlement.settled",
        order_id: pending,
        outcome: "settled",
        block_number: 12,
        tx_hash: word("d3"),
      },
      {
        type: "settlement.failed",
        order_id: reverted,
        outcome: "failed",
        reason: "capture_reverted",
      },
    ]);
    expect(await outcomes()).toHaveLength(4);
  });
});
