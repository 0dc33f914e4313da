import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { addOrder } from "../../src/store/orders.js";
import type { RpcLog } from "../../src/chain/rpcLog.js";
import { toLogRows } from "../../src/decode/logRow.js";
import { AUTHORIZATION_USED_TOPIC, TRANSFER_TOPIC } from "../../src/decode/paymentEvents.js";
import { createLifecycle } from "../../src/store/lifecycle.js";
import { createLogWriter } from "../../src/store/logWriter.js";
import { openDatabase } from "../../src/store/openDatabase.js";
import { createWebhookOutbox } from "../../src/store/webhookOutbox.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const word = (hex: string) => `0x${hex.replace(/^0x/, "").padStart(64, "0")}` as `0x${string}`;
const ALICE = "0x00000000000000000000000000000000000a11ce";
const BOB = "0x0000000000000000000000000000000000000b0b";

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

function rows(logs: RpcLog[], status: "confirmed" | "finalized" | "preconfirmed", source: "backfill" | "head" | "pending_ws" = "backfill") {
  return toLogRows(logs, { chainId: 8453, statusOf: () => status, source, timestampOf: () => 0 }).rows;
}

function freshDb() {
  return openDatabase(join(mkdtempSync(join(tmpdir(), "flashindex-outbox-")), "test.db"), 8453);
}

const events = (db: ReturnType<typeof freshDb>) =>
  (db.prepare("SELECT type, block_number AS block, payload FROM webhook_events ORDER BY id").all() as Array<{ type: string; block: number | null; payload: string }>).map((e) => ({
    ...e,
    payload: JSON.parse(e.payload) as Record<string, any>,
  }));

describe("webhook outbox triggers", () => {
  test("with no subscription a backfill writes no event; with one, only blocks from its start block do, in the same transaction", () => {
    const db = freshDb();
    const writer = createLogWriter(db);
    db.transaction(() => writer.insertRows(rows([transfer(5, 0)], "finalized"), 1))();
    expect(events(db)).toEqual([]);

    createWebhookOutbox(db).syncSubscriptions(["http://127.0.0.1:1/hook"], 100, 1);
    db.transaction(() => writer.insertRows(rows([transfer(99, 0), transfer(100, 0), transfer(101, 3)], "confirmed"), 1))();
    expect(events(db).map((e) => [e.type, e.block])).toEqual([["payment.confirmed", 100], ["payment.confirmed", 101]]);
    const [first] = events(db);
    expect(first!.payload).toMatchObject({
      status: "confirmed",
      payment: { token: TOKEN, from: ALICE, to: BOB, value: "1000000" },
      log: { block_number: 100, log_index: 0, tx_hash: word("ab64") },
    });

    // A rolled-back write leaves no event behind.
    expect(() =>
      db.transaction(() => {
        writer.insertRows(rows([transfer(102, 0)], "confirmed"), 1);
        throw new Error("crash");
      })(),
    ).toThrow("crash");
    expect(events(db)).toHaveLength(2);
  });

  test("status changes (promotion, finality, removal, drop) each write one event; an inactive subscription stops them", () => {
    const db = freshDb();
    const outbox = createWebhookOutbox(db);
    outbox.syncSubscriptions(["http://127.0.0.1:1/hook"], 0, 1);
    const lifecycle = createLifecycle(db);
    const pending = { ...transfer(10, 0), blockHash: word("0") };
    db.transaction(() => lifecycle.insertPreconfirmed(rows([pending], "preconfirmed", "pending_ws"), 1))();
    db.transaction(() => lifecycle.applyCanonicalBlock(10, rows([transfer(10, 0)], "confirmed", "head"), 2))();
    db.transaction(() => lifecycle.finalizeThrough(10, 3))();
    db.transaction(() => lifecycle.insertPreconfirmed(rows([{ ...transfer(11, 0), blockHash: word("0") }], "preconfirmed", "pending_ws"), 4))();
    db.transaction(() => lifecycle.applyCanonicalBlock(11, [], 5))();
    db.transaction(() => lifecycle.applyCanonicalBlock(12, rows([transfer(12, 0)], "confirmed", "head"), 6))();
    db.transaction(() => lifecycle.removeBlock({ number: 12, hash: word("b12") }, 7))();
    expect(events(db).map((e) => `${e.type}:${e.payload.status}`)).toEqual([
      "payment.preconfirmed:preconfirmed",
      "payment.confirmed:confirmed",
      "payment.finalized:finalized",
      "payment.preconfirmed:preconfirmed",
      "payment.removed:dropped",
      "payment.confirmed:confirmed",
      "payment.removed:removed",
    ]);
    expect(events(db)[1]!.payload.log.block_hash).toBe(word("b10"));

    outbox.syncSubscriptions([], 0, 8);
    db.transaction(() => lifecycle.applyCanonicalBlock(13, rows([transfer(13, 0)], "confirmed", "head"), 9))();
    expect(events(db)).toHaveLength(7);
  });

  test("an authorization event and the order state change it causes are written with it", () => {
    const db = freshDb();
    createWebhookOutbox(db).syncSubscriptions(["http://127.0.0.1:1/hook"], 0, 1);
    const nonce = word("n1");
    addOrder(db, { chainId: 8453, token: TOKEN, authorizer: ALICE, payee: BOB, value: 1_000_000n, validAfter: 0, validBefore: 2_000_000_000, nonce, kind: "transfer", signature: `0x${"11".repeat(65)}` }, 1);
    const used: RpcLog = { ...transfer(20, 0), topics: [AUTHORIZATION_USED_TOPIC, word(ALICE), nonce], data: "0x" };
    db.transaction(() => createLogWriter(db).insertRows(rows([used, transfer(20, 1, 20)], "confirmed", "head"), 2))();
    const written = events(db);
    expect(written.map((e) => e.type)).toEqual(["authorization.captured", "order.state_changed", "payment.confirmed"]);
    expect(written[0]!.payload.authorization).toEqual({ token: TOKEN, authorizer: ALICE, nonce, kind: "used" });
    expect(written[1]!.payload.order).toMatchObject({ from_state: "authorized", to_state: "captured", voided_then_captured: false, value: "1000000" });
  });
});

describe("webhook outbox pruning", () => {
  test("prune() deletes old delivered events with their attempts, never a pending or parked one, one a subscription has not passed, or the newest", () => {
    const db = freshDb();
    const outbox = createWebhookOutbox(db);
    const sub = outbox.syncSubscriptions(["http://127.0.0.1:1/hook"], 0, 1).get("http://127.0.0.1:1/hook");
    const writer = createLogWriter(db);
    db.transaction(() => writer.insertRows(rows([1, 2, 3, 4, 5, 6].map((b) => transfer(b, 0)), "confirmed", "head"), 1))();
    const ids = db.prepare("SELECT id FROM webhook_events ORDER BY id").pluck().all() as number[];
    expect(ids).toHaveLength(6);
    // Events 1-4 fanned out: 1 and 2 delivered, 3 parked, 4 pending; 5 and 6 not reached by the cursor.
    outbox.fanOut(sub!, ids.slice(0, 4), ids[3]!, 1);
    const attempt = (eventId: number, state: "delivered" | "parked") =>
      outbox.recordAttempt({ subscriptionId: sub!, eventId, attempt: 1, at: 1, durationMs: 1, httpStatus: 200, error: null }, { state, nextAttemptAt: 1 });
    attempt(ids[0]!, "delivered");
    attempt(ids[1]!, "delivered");
    attempt(ids[2]!, "parked");
    const later = Date.now() + 1_000;
    expect(outbox.prune(0, 100)).toBe(0);
    expect(outbox.prune(later, 1)).toBe(1);
    expect(outbox.prune(later, 100)).toBe(1);
    expect(db.prepare("SELECT id FROM webhook_events ORDER BY id").pluck().all()).toEqual(ids.slice(2));
    expect(db.prepare("SELECT COUNT(*) FROM webhook_attempts WHERE event_id IN (?, ?)").pluck().get(ids[0], ids[1])).toBe(0);
    // Once the subscription has passed 5 and 6 (filtered out, say), 5 goes; 6 stays as the newest.
    outbox.fanOut(sub!, [], ids[5]!, 1);
    expect(outbox.prune(later, 100)).toBe(1);
    expect(db.prepare("SELECT id FROM webhook_events ORDER BY id").pluck().all()).toEqual([ids[2], ids[3], ids[5]]);
    // A new event still gets a fresh id.
    db.transaction(() => writer.insertRows(rows([transfer(7, 0)], "confirmed", "head"), 1))();
    expect(outbox.maxEventId()).toBeGreaterThan(ids[5]!);
  });
});
