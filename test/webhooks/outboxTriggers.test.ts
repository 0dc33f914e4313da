import DatabaseConstructor from "better-sqlite3";
import type { Hex } from "viem";
import { packRows } from "../../src/rows/packedRows.js";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import type { Config } from "../../src/config/types.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { createLogWriter } from "../../src/store/sqlite/logWriter.js";
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

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE = "0x00000000000000000000000000000000000a11ce";
const BOB = "0x0000000000000000000000000000000000000b0b";
const HOOK = "http://127.0.0.1:1/hook";

function transfer(block: number, logIndex: number, txByte = block): RpcLog {
  return {
    address: TOKEN,
    topics: [TRANSFER_TOPIC, word(ALICE), word(BOB)],
    data: word("f4240"),
    blockNumber: block,
    blockHash: word(`b${block}`),
    blockTimestamp: 1_700_000_000 + block,
    transactionHash: word(`ab${txByte.toString(16)}`),
    transactionIndex: 0,
    logIndex,
    removed: false,
  };
}

function rows(
  logs: RpcLog[],
  status: "confirmed" | "finalized" | "preconfirmed",
  source: "backfill" | "head" | "pending_ws" = "backfill",
) {
  return toLogRows(logs, { chainId: 8453, statusOf: () => status, source, timestampOf: () => 0 })
    .rows;
}

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
  const raw = await backend.reader(config.database as Config["database"]);
  open.push(raw);
  return { store, raw };
}

const events = async (raw: TableReader) =>
  (
    await raw.all<{ type: string; block: number | null; payload: string }>(
      "SELECT type, block_number AS block, payload FROM webhook_events ORDER BY id",
    )
  ).map((e) => ({
    ...e,
    payload: JSON.parse(e.payload) as Record<string, any>,
  }));

/** A head block's rows applied as the realtime follower does. */
const applyBlock = (
  store: Store,
  number: number,
  blockRows: ReturnType<typeof rows>,
  now: number,
) =>
  store.applyChainChange(
    { kind: "head_block", orphaned: [], blocks: [{ number, rows: blockRows }], synced: [] },
    now,
  );

/** A backfill window through the bulk writer (its own transaction with its synced range). */
async function commitWindow(store: Store, logs: RpcLog[], tokens: readonly Hex[] = [TOKEN]) {
  const writer = store.openWindowWriter({ bulk: false });
  try {
    const blocks = logs.map((l) => l.blockNumber);
    return await writer.commit(
      {
        from: Math.min(...blocks),
        to: Math.max(...blocks),
        tokens,
        rows: packRows(rows(logs, "confirmed")),
        attribution: { batches: [] },
      },
      1,
    );
  } finally {
    await writer.close();
  }
}

describe.each(BACKENDS)("webhook outbox triggers on $name", (backend) => {
  test("with no subscription a backfill writes no event; with one, only blocks from its start block do, in the same transaction", async () => {
    const { store, raw } = await freshStore(backend);
    await commitWindow(store, [transfer(5, 0)]);
    expect(await events(raw)).toEqual([]);

    const subscriptions = await store.webhooks.syncSubscriptions([HOOK], 100, 1);
    expect(subscriptions.get(HOOK)).toMatchObject({ fromBlock: 100 });
    await commitWindow(store, [transfer(99, 0), transfer(100, 0), transfer(101, 3)]);
    expect((await events(raw)).map((e) => [e.type, e.block])).toEqual([
      ["payment.confirmed", 100],
      ["payment.confirmed", 101],
    ]);
    const [first] = await events(raw);
    expect(first!.payload).toMatchObject({
      status: "confirmed",
      payment: { token: TOKEN, from: ALICE, to: BOB, value: "1000000" },
      log: { block_number: 100, log_index: 0, tx_hash: word("ab64") },
    });

    // A rolled-back window (its synced range is refused: no token) leaves no event behind.
    await expect(
      commitWindow(store, [transfer(102, 0)], [null as unknown as Hex]),
    ).rejects.toThrow();
    expect(await events(raw)).toHaveLength(2);
  });

  test("status changes (promotion, finality, removal, drop) each write one event; an inactive subscription stops them", async () => {
    const { store, raw } = await freshStore(backend);
    await store.webhooks.syncSubscriptions([HOOK], 0, 1);
    await store.insertPreconfirmed(
      rows([{ ...transfer(10, 0), blockHash: word("0") }], "preconfirmed", "pending_ws"),
      1,
    );
    await applyBlock(store, 10, rows([transfer(10, 0)], "confirmed", "head"), 2);
    await store.finalizeThrough(10, 3);
    await store.insertPreconfirmed(
      rows([{ ...transfer(11, 0), blockHash: word("0") }], "preconfirmed", "pending_ws"),
      4,
    );
    await applyBlock(store, 11, [], 5);
    await applyBlock(store, 12, rows([transfer(12, 0)], "confirmed", "head"), 6);
    await store.applyChainChange(
      { kind: "reorg", orphaned: [{ number: 12, hash: word("b12") }], blocks: [], synced: [] },
      7,
    );
    expect((await events(raw)).map((e) => `${e.type}:${e.payload.status}`)).toEqual([
      "payment.preconfirmed:preconfirmed",
      "payment.confirmed:confirmed",
      "payment.finalized:finalized",
      "payment.preconfirmed:preconfirmed",
      "payment.removed:dropped",
      "payment.confirmed:confirmed",
      "payment.removed:removed",
    ]);
    expect((await events(raw))[1]!.payload.log.block_hash).toBe(word("b10"));

    await store.webhooks.syncSubscriptions([], 0, 8);
    await applyBlock(store, 13, rows([transfer(13, 0)], "confirmed", "head"), 9);
    expect(await events(raw)).toHaveLength(7);
  });

  test("an authorization event and the order state change it causes are written with it", async () => {
    const { store, raw } = await freshStore(backend);
    await store.webhooks.syncSubscriptions([HOOK], 0, 1);
    const nonce = word("n1");
    await store.addOrder(
      {
        chainId: 8453,
        token: TOKEN,
        authorizer: ALICE,
        payee: BOB,
        value: 1_000_000n,
        validAfter: 0,
        validBefore: 2_000_000_000,
        nonce,
        kind: "transfer",
        signature: `0x${"11".repeat(65)}`,
      },
      1,
    );
    const used: RpcLog = {
      ...transfer(20, 0),
      topics: [AUTHORIZATION_USED_TOPIC, word(ALICE), nonce],
      data: "0x",
    };
    await applyBlock(store, 20, rows([used, transfer(20, 1, 20)], "confirmed", "head"), 2);
    const written = await events(raw);
    // Note: the order of a block's payment and authorization events differs by backend (SQLite writes
    // log by log, Postgres table by table); an order change always follows the authorization causing it.
    const types = written.map((e) => e.type);
    expect([...types].sort()).toEqual([
      "authorization.captured",
      "order.state_changed",
      "payment.confirmed",
    ]);
    expect(types.indexOf("order.state_changed")).toBe(types.indexOf("authorization.captured") + 1);
    const byType = new Map(written.map((e) => [e.type, e.payload]));
    expect(byType.get("authorization.captured")!.authorization).toEqual({
      token: TOKEN,
      authorizer: ALICE,
      nonce,
      kind: "used",
    });
    expect(byType.get("order.state_changed")!.order).toMatchObject({
      from_state: "authorized",
      to_state: "captured",
      voided_then_captured: false,
      value: "1000000",
    });
    expect(byType.get("order.state_changed")!.status).toBe("confirmed");

    // An off-chain void is an order event too.
    const other = await store.addOrder(
      {
        chainId: 8453,
        token: TOKEN,
        authorizer: ALICE,
        payee: BOB,
        value: 5n,
        validAfter: 0,
        validBefore: 2_000_000_000,
        nonce: word("n2"),
        kind: "transfer",
        signature: `0x${"11".repeat(65)}`,
      },
      3,
    );
    await store.voidOrder(other.id, 4);
    expect((await events(raw)).at(-1)!.payload.order).toMatchObject({
      id: other.id,
      from_state: "authorized",
      to_state: "voided_offchain",
      value: "5",
    });
  });

  test.runIf(backend.name === "sqlite")(
    "the row triggers exist only while a subscription is active, and a connection prepared before sees the change",
    async () => {
      const { store, raw } = await freshStore(backend);
      const triggers = async () =>
        (
          await raw.all<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'webhook_%' ORDER BY name",
          )
        ).map((t) => t.name);
      // A fresh database has no subscription: only the order and settlement triggers, whose
      // conditions are per change (schema 16 added the settlement's; schema 17 its outcomes).
      expect(await triggers()).toEqual([
        "webhook_order_state_changed",
        "webhook_settlement_answered",
        "webhook_settlement_contradicted",
        "webhook_settlement_resolved",
      ]);
      // Another connection (the window writer thread's) prepares its insert before the subscription exists.
      const other = new DatabaseConstructor(
        (await raw.all<{ file: string }>("PRAGMA database_list"))[0]!.file,
      );
      open.push({ close: async () => void other.close() });
      const writer = createLogWriter(other);
      const write = (block: number) =>
        other
          .transaction(() => writer.insertRows(rows([transfer(block, 0)], "confirmed"), 1))
          .immediate();
      write(1);

      await store.webhooks.syncSubscriptions([HOOK], 0, 1);
      expect(await triggers()).toEqual([
        "webhook_authorization_inserted",
        "webhook_order_state_changed",
        "webhook_payment_inserted",
        "webhook_payment_status_changed",
        "webhook_settlement_answered",
        "webhook_settlement_contradicted",
        "webhook_settlement_resolved",
      ]);
      // Created in their schema v9 form: no list SQLite would turn into a table per row.
      expect(
        (
          await raw.all<{ sql: string }>(
            "SELECT sql FROM sqlite_master WHERE name = 'webhook_authorization_inserted'",
          )
        )[0]!.sql,
      ).toContain("(NEW.status = 'preconfirmed' OR");
      write(2);
      await applyBlock(store, 3, rows([transfer(3, 0)], "confirmed", "head"), 2);
      expect((await events(raw)).map((e) => [e.type, e.block])).toEqual([
        ["payment.confirmed", 2],
        ["payment.confirmed", 3],
      ]);

      await store.webhooks.syncSubscriptions([], 0, 3);
      expect(await triggers()).toEqual([
        "webhook_order_state_changed",
        "webhook_settlement_answered",
        "webhook_settlement_contradicted",
        "webhook_settlement_resolved",
      ]);
      write(4);
      await store.finalizeThrough(4, 4);
      expect(await events(raw)).toHaveLength(2);
    },
  );

  test.runIf(backend.name === "postgres")(
    "event ids grow in commit order: a store transaction waits for another writer holding the outbox lock",
    async () => {
      const { store, raw } = await freshStore(backend);
      await store.webhooks.syncSubscriptions([HOOK], 0, 1);
      const order = await store.addOrder(
        {
          chainId: 8453,
          token: TOKEN,
          authorizer: ALICE,
          payee: BOB,
          value: 5n,
          validAfter: 0,
          validBefore: 2_000_000_000,
          nonce: word("n3"),
          kind: "transfer",
          signature: `0x${"11".repeat(65)}`,
        },
        1,
      );
      // Another writer (say an open transaction that already wrote an event) holds the outbox lock.
      await raw.all("BEGIN");
      await raw.all(
        "SELECT pg_advisory_xact_lock(hashtext('flashindex:outbox:' || current_schema()))",
      );
      let voided = false;
      const voiding = store.voidOrder(order.id, 2).then(() => (voided = true));
      await waitFor(
        async () =>
          (await raw.all("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"))
            .length > 0,
        10_000,
        "the void waiting for the outbox lock",
      );
      expect(voided).toBe(false);
      await raw.all("COMMIT");
      await voiding;
      expect((await events(raw)).at(-1)!.payload.order).toMatchObject({
        id: order.id,
        to_state: "voided_offchain",
      });
    },
  );

  test("prune() deletes old delivered events with their attempts, never a pending or parked one, one a subscription has not passed, or the newest", async () => {
    const { store, raw } = await freshStore(backend);
    const outbox = store.webhooks;
    const sub = (await outbox.syncSubscriptions([HOOK], 0, 1)).get(HOOK)!.id;
    await applyBlock(
      store,
      1,
      rows(
        [1, 2, 3, 4, 5, 6].map((b) => transfer(b, 0)),
        "confirmed",
        "head",
      ),
      1,
    );
    const eventIds = async () =>
      (await raw.all<{ id: number }>("SELECT id FROM webhook_events ORDER BY id")).map((r) =>
        Number(r.id),
      );
    const ids = await eventIds();
    expect(ids).toHaveLength(6);
    // Events 1-4 fanned out: 1 and 2 delivered, 3 parked, 4 pending; 5 and 6 not reached by the cursor.
    await outbox.fanOut(sub, ids.slice(0, 4), ids[3]!, 1);
    expect(await outbox.cursorOf(sub)).toBe(ids[3]);
    expect(await outbox.oldestOpen(sub)).toMatchObject({
      id: ids[0],
      type: "payment.confirmed",
      attempts: 0,
      nextAttemptAt: 1,
    });
    const attempt = (eventId: number, state: "delivered" | "parked") =>
      outbox.recordAttempt(
        {
          subscriptionId: sub,
          eventId,
          attempt: 1,
          at: 1,
          durationMs: 1,
          httpStatus: 200,
          error: null,
        },
        { state, nextAttemptAt: 1 },
      );
    await attempt(ids[0]!, "delivered");
    await attempt(ids[1]!, "delivered");
    await attempt(ids[2]!, "parked");
    expect(await outbox.backlog()).toEqual({ pending: 1, parked: 1, subscriptions: 1 });
    expect(
      (await outbox.list(["parked"], 10)).map((d) => [d.eventId, d.state, d.attempts, d.url]),
    ).toEqual([[ids[2], "parked", 1, HOOK]]);
    expect((await outbox.lastAttempts(1))[0]).toMatchObject({
      eventId: ids[2],
      type: "payment.confirmed",
      httpStatus: 200,
    });
    const later = Date.now() + 1_000;
    expect(await outbox.prune(0, 100)).toBe(0);
    expect(await outbox.prune(later, 1)).toBe(1);
    expect(await outbox.prune(later, 100)).toBe(1);
    expect(await eventIds()).toEqual(ids.slice(2));
    expect(
      await raw.all("SELECT event_id FROM webhook_attempts WHERE event_id IN (?, ?)", [
        ids[0],
        ids[1],
      ]),
    ).toEqual([]);
    // Once the subscription has passed 5 and 6 (filtered out, say), 5 goes; 6 stays as the newest.
    await outbox.fanOut(sub, [], ids[5]!, 1);
    expect(await outbox.prune(later, 100)).toBe(1);
    expect(await eventIds()).toEqual([ids[2], ids[3], ids[5]]);
    // A new event still gets a fresh id; a parked delivery goes back to pending on requeue.
    await applyBlock(store, 7, rows([transfer(7, 0)], "confirmed", "head"), 1);
    expect(await outbox.maxEventId()).toBeGreaterThan(ids[5]!);
    expect([
      await outbox.requeue(ids[3]!, 2),
      await outbox.requeue("all", 2),
      await outbox.requeue("all", 2),
    ]).toEqual([0, 1, 0]);
  });
});
