import DatabaseConstructor from "better-sqlite3";
import type { Address, Hex } from "viem";
import { afterEach, describe, expect, test } from "vitest";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  TRANSFER_TOPIC,
} from "../../src/rows/paymentEvents.js";
import { type LogStatus } from "../../src/rows/logRow.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { createSqliteOrders } from "../../src/store/sqlite/orders.js";
import {
  ORDER_TRANSITIONS,
  OrderExistsError,
  OrderStateError,
  type NewOrder,
} from "../../src/store/orderStates.js";
import { PRECONFIRMED_BLOCK_HASH as ZERO_HASH } from "../../src/rows/rpcLog.js";
import { createSqliteLifecycle } from "../../src/store/sqlite/lifecycle.js";
import { openDatabase, type Database } from "../../src/store/sqlite/openDatabase.js";
import { freshDbPath, word } from "../helpers/fixtures.js";

const TOKEN: Address = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE: Address = "0x00000000000000000000000000000000000a11ce";
const SHOP: Address = "0x0000000000000000000000000000000000005409";
const NOW = 1_700_000_000_000;

const open: Database[] = [];
afterEach(() => {
  for (const db of open.splice(0)) db.close();
});

function freshDb(): { db: Database; path: string } {
  const path = freshDbPath("flashindex-orders-");
  const db = openDatabase(path, 8453);
  open.push(db);
  return { db, path };
}

function order(nonce: Hex, overrides: Partial<NewOrder> = {}): NewOrder {
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
    ...overrides,
  };
}

/** The logs of a capture (AuthorizationUsed + Transfer) or a cancel, in one transaction. */
function eventLogs(
  kind: "capture" | "cancel",
  nonce: Hex,
  at: { block: number; hash?: Hex; tx: Hex },
): RpcLog[] {
  const base = {
    address: TOKEN,
    blockNumber: at.block,
    blockHash: at.hash ?? word(`b${at.block}`),
    blockTimestamp: 1_700_000_000,
    transactionHash: at.tx,
    transactionIndex: 0,
    removed: false,
  };
  if (kind === "cancel")
    return [
      {
        ...base,
        topics: [AUTHORIZATION_CANCELED_TOPIC, word(ALICE), nonce],
        data: "0x",
        logIndex: 0,
      },
    ];
  return [
    { ...base, topics: [AUTHORIZATION_USED_TOPIC, word(ALICE), nonce], data: "0x", logIndex: 0 },
    {
      ...base,
      topics: [TRANSFER_TOPIC, word(ALICE), word(SHOP)],
      data: word("f4240"),
      logIndex: 1,
    },
  ];
}

function rowsOf(logs: RpcLog[], status: LogStatus) {
  return toLogRows(logs, {
    chainId: 8453,
    statusOf: () => status,
    source: status === "preconfirmed" ? "pending" : "head",
    timestampOf: () => 0,
  }).rows;
}

/** Writes like the daemon: each lifecycle step in one transaction. */
function chain(db: Database) {
  const lifecycle = createSqliteLifecycle(db);
  return {
    preconfirm: (logs: RpcLog[]) =>
      db
        .transaction(() =>
          lifecycle.insertPreconfirmed(
            rowsOf(
              logs.map((l) => ({ ...l, blockHash: ZERO_HASH })),
              "preconfirmed",
            ),
            NOW,
          ),
        )
        .immediate(),
    confirm: (block: number, logs: RpcLog[]) =>
      db
        .transaction(() => lifecycle.applyCanonicalBlock(block, rowsOf(logs, "confirmed"), NOW))
        .immediate(),
    finalize: (block: number) =>
      db.transaction(() => lifecycle.finalizeThrough(block, NOW)).immediate(),
    remove: (block: number, hash: Hex = word(`b${block}`)) =>
      db.transaction(() => lifecycle.removeBlock({ number: block, hash }, NOW)).immediate(),
  };
}

const states = (db: Database, id: number) =>
  createSqliteOrders(db)
    .transitions(id)
    .map(
      (t) =>
        `${t.fromState ?? "-"}>${t.toState}${t.eventStatus ? `(${t.eventStatus})` : ""}:${t.cause}`,
    );

describe("orders", () => {
  test("the SQL table of allowed transitions is exactly ORDER_TRANSITIONS", () => {
    const { db } = freshDb();
    const inSql = db
      .prepare("SELECT from_state || '>' || to_state FROM order_state_transitions ORDER BY 1")
      .pluck()
      .all();
    // A pair two actors may make (canceling -> expired: a failed cancel, or expiry) is one row.
    expect(inSql).toEqual([...new Set(ORDER_TRANSITIONS.map((t) => `${t.from}>${t.to}`))].sort());
  });

  test("addOrder() stores an authorized order once; the same nonce again is refused", () => {
    const { db } = freshDb();
    const added = createSqliteOrders(db).add(order(word("a1")), NOW);
    expect(added).toMatchObject({
      id: 1,
      state: "authorized",
      value: "1000000",
      eventStatus: null,
      voidedThenCaptured: false,
      authorizer: ALICE,
    });
    expect(() => createSqliteOrders(db).add(order(word("a1")), NOW)).toThrow(OrderExistsError);
    expect(states(db, added.id)).toEqual(["->authorized:added"]);
  });

  test("voidOrder() moves authorized to voided_offchain and refuses every other state", () => {
    const { db } = freshDb();
    const c = chain(db);
    const id = createSqliteOrders(db).add(order(word("a2")), NOW).id;
    expect(createSqliteOrders(db).void(id, NOW + 1)).toMatchObject({
      state: "voided_offchain",
      offchainState: "voided_offchain",
    });
    expect(() => createSqliteOrders(db).void(id, NOW + 2)).toThrow(
      /order 1 is voided_offchain: it cannot become voided_offchain \(only from authorized, by merchant\)/,
    );

    const captured = createSqliteOrders(db).add(order(word("a3")), NOW).id;
    c.confirm(5, eventLogs("capture", word("a3"), { block: 5, tx: word("c3") }));
    expect(() => createSqliteOrders(db).void(captured, NOW)).toThrow(OrderStateError);
    const expired = createSqliteOrders(db).add(
      order(word("a4"), { validBefore: NOW / 1000 - 1 }),
      NOW,
    ).id;
    expect(createSqliteOrders(db).expire(NOW)).toEqual([expired]);
    expect(() => createSqliteOrders(db).void(expired, NOW)).toThrow(/is expired/);
    expect(() => createSqliteOrders(db).void(99, NOW)).toThrow(/no order 99/);
  });

  test("SQLite refuses an illegal state change even from raw SQL", () => {
    const { db } = freshDb();
    const id = createSqliteOrders(db).add(order(word("a5")), NOW).id;
    createSqliteOrders(db).expire(NOW + 10_000_000_000);
    expect(() => db.prepare("UPDATE orders SET state = 'authorized' WHERE id = ?").run(id)).toThrow(
      /illegal order transition/,
    );
    expect(() =>
      db.prepare("UPDATE orders SET state = 'voided_offchain' WHERE id = ?").run(id),
    ).toThrow(/illegal order transition/);
    expect(createSqliteOrders(db).get(id)?.state).toBe("expired");
  });

  test("a capture moves the order to captured pre-confirmed, then its status follows to confirmed and finalized", () => {
    const { db } = freshDb();
    const c = chain(db);
    const id = createSqliteOrders(db).add(order(word("b1")), NOW).id;
    const logs = eventLogs("capture", word("b1"), { block: 7, tx: word("cb1") });
    c.preconfirm(logs);
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      state: "captured",
      eventStatus: "preconfirmed",
      eventTxHash: word("cb1"),
    });
    c.confirm(7, logs);
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      state: "captured",
      eventStatus: "confirmed",
    });
    c.finalize(7);
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      state: "captured",
      eventStatus: "finalized",
    });
    expect(states(db, id)).toEqual([
      "->authorized:added",
      "authorized>captured(preconfirmed):captured",
      "captured>captured(confirmed):event_confirmed",
      "captured>captured(finalized):event_finalized",
    ]);
  });

  test("a confirmed block that folds a pre-confirmed twin into an existing row keeps the order captured", () => {
    const { db } = freshDb();
    const c = chain(db);
    const id = createSqliteOrders(db).add(order(word("b2")), NOW).id;
    const logs = eventLogs("capture", word("b2"), { block: 8, tx: word("cb2") });
    c.preconfirm(logs);
    c.confirm(8, logs);
    c.preconfirm(logs); // a late pendingLogs copy is ignored, the confirmed row stays
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      state: "captured",
      eventStatus: "confirmed",
    });
  });

  test("a cancel moves authorized and voided orders to canceled", () => {
    const { db } = freshDb();
    const c = chain(db);
    const a = createSqliteOrders(db).add(order(word("c1")), NOW).id;
    const v = createSqliteOrders(db).add(order(word("c2")), NOW).id;
    createSqliteOrders(db).void(v, NOW);
    c.confirm(9, [
      ...eventLogs("cancel", word("c1"), { block: 9, tx: word("cc1") }),
      ...eventLogs("cancel", word("c2"), { block: 9, tx: word("cc2") }).map((l) => ({
        ...l,
        logIndex: 1,
        transactionIndex: 1,
      })),
    ]);
    expect(createSqliteOrders(db).get(a)).toMatchObject({
      state: "canceled",
      eventStatus: "confirmed",
      voidedThenCaptured: false,
    });
    expect(createSqliteOrders(db).get(v)).toMatchObject({
      state: "canceled",
      eventStatus: "confirmed",
      voidedThenCaptured: false,
    });
  });

  test("an order added after its event was indexed starts captured", () => {
    const { db } = freshDb();
    chain(db).confirm(10, eventLogs("capture", word("d1"), { block: 10, tx: word("cd1") }));
    const added = createSqliteOrders(db).add(order(word("d1")), NOW);
    expect(added).toMatchObject({ state: "captured", eventStatus: "confirmed" });
    expect(states(db, added.id)).toEqual([
      "->authorized:added",
      "authorized>captured(confirmed):captured",
    ]);
  });

  test("a voided order captured anyway becomes captured, flagged voided_then_captured, with a flagged audit row", () => {
    const { db } = freshDb();
    const id = createSqliteOrders(db).add(order(word("e1")), NOW).id;
    createSqliteOrders(db).void(id, NOW);
    chain(db).confirm(11, eventLogs("capture", word("e1"), { block: 11, tx: word("ce1") }));
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      state: "captured",
      offchainState: "voided_offchain",
      voidedThenCaptured: true,
    });
    expect(createSqliteOrders(db).voidedThenCapturedSince(0)).toMatchObject([
      { orderId: id, fromState: "voided_offchain", toState: "captured", txHash: word("ce1") },
    ]);
    expect(
      createSqliteOrders(db)
        .list({ state: "captured" })
        .map((o) => o.id),
    ).toEqual([id]);
  });

  test("a removed event rolls the order back to its off-chain state (authorized, or voided_offchain)", () => {
    const { db } = freshDb();
    const c = chain(db);
    const a = createSqliteOrders(db).add(order(word("f1")), NOW).id;
    const v = createSqliteOrders(db).add(order(word("f2")), NOW).id;
    createSqliteOrders(db).void(v, NOW);
    c.confirm(12, [
      ...eventLogs("capture", word("f1"), { block: 12, tx: word("cf1") }),
      ...eventLogs("cancel", word("f2"), { block: 12, tx: word("cf2") }).map((l) => ({
        ...l,
        logIndex: 2,
        transactionIndex: 1,
      })),
    ]);
    expect([createSqliteOrders(db).get(a)?.state, createSqliteOrders(db).get(v)?.state]).toEqual([
      "captured",
      "canceled",
    ]);
    c.remove(12);
    expect(createSqliteOrders(db).get(a)).toMatchObject({
      state: "authorized",
      eventStatus: null,
      eventTxHash: null,
    });
    expect(createSqliteOrders(db).get(v)).toMatchObject({
      state: "voided_offchain",
      eventStatus: null,
    });
    expect(states(db, a).at(-1)).toBe("captured>authorized:event_removed");
  });

  test("a dropped pre-confirmation rolls the order back; the re-included capture captures it again", () => {
    const { db } = freshDb();
    const c = chain(db);
    const id = createSqliteOrders(db).add(order(word("f3")), NOW).id;
    const logs = eventLogs("capture", word("f3"), { block: 13, tx: word("cf3") });
    c.preconfirm(logs);
    expect(createSqliteOrders(db).get(id)?.state).toBe("captured");
    c.confirm(13, []); // block 13 landed without it: the pre-confirmation is dropped
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      state: "authorized",
      eventStatus: null,
    });
    c.confirm(
      14,
      logs.map((l) => ({ ...l, blockNumber: 14, blockHash: word("b14") })),
    );
    expect(createSqliteOrders(db).get(id)).toMatchObject({
      state: "captured",
      eventStatus: "confirmed",
    });
  });

  test("expireOrders() expires authorized and voided orders past validBefore with no live event, and only those", () => {
    const { db } = freshDb();
    const c = chain(db);
    const nowS = NOW / 1000;
    const due = createSqliteOrders(db).add(order(word("g1"), { validBefore: nowS }), NOW).id;
    const dueVoided = createSqliteOrders(db).add(
      order(word("g2"), { validBefore: nowS - 5 }),
      NOW,
    ).id;
    createSqliteOrders(db).void(dueVoided, NOW);
    const later = createSqliteOrders(db).add(order(word("g3"), { validBefore: nowS + 1 }), NOW).id;
    const captured = createSqliteOrders(db).add(
      order(word("g4"), { validBefore: nowS - 5 }),
      NOW,
    ).id;
    c.confirm(15, eventLogs("capture", word("g4"), { block: 15, tx: word("cg4") }));
    expect(createSqliteOrders(db).expire(NOW)).toEqual([due, dueVoided]);
    expect(createSqliteOrders(db).expire(NOW)).toEqual([]);
    expect(
      [due, dueVoided, later, captured].map((id) => createSqliteOrders(db).get(id)?.state),
    ).toEqual(["expired", "expired", "authorized", "captured"]);
    // A capture indexed after our clock expired it (block time before validBefore) still wins.
    c.confirm(16, eventLogs("capture", word("g1"), { block: 16, tx: word("cg1") }));
    expect(createSqliteOrders(db).get(due)?.state).toBe("captured");
    // Its removal sends it back to authorized; the next pass expires it again.
    c.remove(16);
    expect(createSqliteOrders(db).get(due)?.state).toBe("authorized");
    expect(createSqliteOrders(db).expire(NOW)).toEqual([due]);
  });

  test("a void racing a capture cannot both win: the write lock serialises them, the loser sees the winner's state", () => {
    const { db, path } = freshDb();
    const daemon = new DatabaseConstructor(path);
    open.push(daemon);
    daemon.pragma("busy_timeout = 0");
    db.pragma("busy_timeout = 0");
    const lifecycle = createSqliteLifecycle(daemon);
    const first = createSqliteOrders(db).add(order(word("h1")), NOW).id;
    const second = createSqliteOrders(db).add(order(word("h2")), NOW).id;

    // Capture first: the daemon's write transaction is open (capture stored, not committed) when the void comes.
    daemon.prepare("BEGIN IMMEDIATE").run();
    lifecycle.applyCanonicalBlock(
      20,
      rowsOf(eventLogs("capture", word("h1"), { block: 20, tx: word("ch1") }), "confirmed"),
      NOW,
    );
    expect(() => createSqliteOrders(db).void(first, NOW)).toThrow(/database is locked/);
    daemon.prepare("COMMIT").run();
    expect(() => createSqliteOrders(db).void(first, NOW)).toThrow(
      /order 1 is captured: it cannot become voided_offchain/,
    );
    expect(createSqliteOrders(db).get(first)).toMatchObject({
      state: "captured",
      voidedThenCaptured: false,
    });

    // Void first: the merchant's void transaction holds the lock; the daemon's capture waits for it,
    // then lands on the voided order and is flagged.
    db.prepare("BEGIN IMMEDIATE").run();
    db.prepare(
      "UPDATE orders SET state = 'voided_offchain', offchain_state = 'voided_offchain' WHERE id = ? AND state = 'authorized'",
    ).run(second);
    expect(() => daemon.prepare("BEGIN IMMEDIATE").run()).toThrow(/database is locked/);
    db.prepare("COMMIT").run();
    daemon
      .transaction(() =>
        lifecycle.applyCanonicalBlock(
          21,
          rowsOf(eventLogs("capture", word("h2"), { block: 21, tx: word("ch2") }), "confirmed"),
          NOW,
        ),
      )
      .immediate();
    expect(createSqliteOrders(db).get(second)).toMatchObject({
      state: "captured",
      voidedThenCaptured: true,
    });
    expect(
      createSqliteOrders(db)
        .voidedThenCapturedSince(0)
        .map((t) => t.orderId),
    ).toEqual([second]);
  });
});
