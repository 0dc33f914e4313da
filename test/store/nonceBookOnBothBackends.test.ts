import { spawn } from "node:child_process";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { PRECONFIRMED_BLOCK_HASH as ZERO_HASH, type RpcLog } from "../../src/rows/rpcLog.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  TRANSFER_TOPIC,
} from "../../src/rows/paymentEvents.js";
import { NonceLapsedError } from "../../src/errors/capture.js";
import { createMetrics } from "../../src/ops/metrics.js";
import { captureHolder, NONCE_RESERVATION_TTL_MS } from "../../src/store/nonceBook.js";
import { openStore } from "../../src/store/openStore.js";
import type { NewOrder } from "../../src/store/orderStates.js";
import type { Store } from "../../src/store/store.js";
import { BACKENDS, stopFileBackends, type TestBackend } from "../helpers/backends.js";
import { testConfig } from "../helpers/context.js";

const TOKEN: Address = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const ALICE: Address = "0x00000000000000000000000000000000000a11ce";
const SHOP: Address = "0x0000000000000000000000000000000000005409";
const RELAYER: Address = "0x000000000000000000000000000000000000beef";
const word = (hex: string) => `0x${hex.replace(/^0x/, "").padStart(64, "0")}` as Hex;
const NOW = 1_700_000_000_000;
const ROOT = join(import.meta.dirname, "..", "..");

const open: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});
afterAll(() => stopFileBackends());

async function freshStore(
  backend: TestBackend,
): Promise<{ store: Store; database: Record<string, unknown> }> {
  const database = await backend.freshDatabase();
  const store = await openStore(testConfig({ rpc: { http: ["http://127.0.0.1:9"] }, database }), {
    metrics: createMetrics({ defaultMetrics: false }),
  });
  open.push(store);
  return { store, database };
}

const order = (nonce: Hex): NewOrder => ({
  chainId: 8453,
  token: TOKEN,
  authorizer: ALICE,
  payee: SHOP,
  value: 5n,
  validAfter: 0,
  validBefore: NOW / 1000 + 3600,
  nonce,
  kind: "transfer",
  signature: `0x${"11".repeat(65)}`,
});
const reserve = (store: Store, holder: string, floor: number, now = NOW) =>
  store.nonces.reserve({ relayer: RELAYER, floor, holder, owner: "test" }, now);
const tx = (relayerNonce: number, tag: string) => ({
  relayer: RELAYER,
  relayerNonce,
  txHash: word(tag),
  rawTx: `0x02${tag}` as Hex,
  maxFeePerGas: 2n,
  maxPriorityFeePerGas: 1n,
});

/** The logs of a capture (AuthorizationUsed + Transfer) or of a cancel, pre-confirmed, as the store takes them. */
function eventLogs(kind: "used" | "canceled", nonce: Hex, txHash: Hex, block: number) {
  const base = {
    address: TOKEN,
    blockNumber: block,
    blockHash: ZERO_HASH,
    blockTimestamp: 1_700_000_000,
    transactionHash: txHash,
    transactionIndex: 0,
    removed: false,
  };
  const logs: RpcLog[] =
    kind === "canceled"
      ? [
          {
            ...base,
            topics: [AUTHORIZATION_CANCELED_TOPIC, word(ALICE), nonce],
            data: "0x",
            logIndex: 0,
          },
        ]
      : [
          {
            ...base,
            topics: [AUTHORIZATION_USED_TOPIC, word(ALICE), nonce],
            data: "0x",
            logIndex: 0,
          },
          {
            ...base,
            topics: [TRANSFER_TOPIC, word(ALICE), word(SHOP)],
            data: word("5"),
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

/** Runs test/helpers/reserveNonces.ts in a process of its own; resolves with the nonces it got. */
function reserveInProcess(
  database: Record<string, unknown>,
  prefix: string,
  count: number,
): Promise<number[]> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(ROOT, "test", "helpers", "reserveNonces.ts"),
      JSON.stringify(database),
      RELAYER,
      prefix,
      String(count),
    ],
    {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.on("exit", (code) =>
      code === 0
        ? resolve(JSON.parse(stdout) as number[])
        : reject(new Error(`reserveNonces exited ${code}: ${stderr}`)),
    ),
  );
}

describe.each(BACKENDS)("the relayers' nonce book on $name", (backend) => {
  test("hands out the floor, then the next free nonce; a released one comes back before a new one, a broadcast one never", async () => {
    const { store } = await freshStore(backend);
    expect(await reserve(store, "a", 5)).toBe(5);
    expect(await reserve(store, "b", 5)).toBe(6);
    expect(await reserve(store, "c", 5)).toBe(7);
    // A duplicate's loser gives its nonce back after a later one was handed out: no gap, it is reused.
    expect(await store.nonces.release({ relayer: RELAYER, nonce: 6, holder: "b" }, NOW)).toBe(true);
    expect(await reserve(store, "d", 5)).toBe(6);
    expect(
      await store.nonces.mark(
        { relayer: RELAYER, nonce: 7, holder: "c", state: "broadcast", txHash: word("c7") },
        NOW,
      ),
    ).toBe(true);
    expect(await store.nonces.release({ relayer: RELAYER, nonce: 7, holder: "c" }, NOW)).toBe(
      false,
    );
    // Another holder cannot move or release it.
    expect(await store.nonces.release({ relayer: RELAYER, nonce: 6, holder: "b" }, NOW)).toBe(
      false,
    );
    expect(await reserve(store, "e", 5)).toBe(8);
    // A floor above the book (transactions sent outside it) wins; the ones below it are landed.
    expect(await reserve(store, "f", 20)).toBe(20);
    const entries = await store.nonces.entries(RELAYER, 0);
    expect(entries.map((e) => [e.nonce, e.holder, e.state])).toEqual([
      [5, "a", "landed"],
      [6, "d", "landed"],
      [7, "c", "landed"],
      [8, "e", "landed"],
      [20, "f", "reserved"],
    ]);
  });

  test("a reservation its process never signed is handed out again after the TTL; the capture that held it is then refused", async () => {
    const { store } = await freshStore(backend);
    const added = await store.addOrder(order(word("a1")), NOW);
    expect(await reserve(store, captureHolder(added.id), 3)).toBe(3);
    expect(await reserve(store, "other", 3, NOW + NONCE_RESERVATION_TTL_MS)).toBe(3);
    await expect(store.captures.start(added.id, tx(3, "aa"), NOW, "test")).rejects.toThrow(
      NonceLapsedError,
    );
    expect((await store.getOrder(added.id))?.state).toBe("authorized");
  });

  test("a capture's nonce follows its intent: signed at start, broadcast when sent, released when abandoned unsent", async () => {
    const { store } = await freshStore(backend);
    const added = await store.addOrder(order(word("b1")), NOW);
    const holder = captureHolder(added.id);
    expect(await reserve(store, holder, 0)).toBe(0);
    await store.captures.start(added.id, tx(0, "b0"), NOW, "proc-a");
    expect((await store.nonces.entries(RELAYER, 0))[0]).toMatchObject({
      state: "signed",
      txHash: word("b0"),
      holder,
    });
    expect(await store.captures.get(added.id)).toMatchObject({
      owner: "proc-a",
      sendStartedAt: null,
    });
    await store.captures.abandon(added.id, NOW + 1, {
      nonceUnused: true,
      cause: "settle_never_sent",
    });
    expect((await store.nonces.entries(RELAYER, 0))[0]).toMatchObject({ state: "released" });
    expect(await store.captures.claimSend(added.id, word("b0"), NOW + 2)).toBe(false);
    expect((await store.listTransitions(added.id)).at(-1)).toMatchObject({
      fromState: "capturing",
      toState: "authorized",
      cause: "settle_never_sent",
    });

    // Captured again: the released nonce is the one handed out.
    expect(await reserve(store, holder, 0)).toBe(0);
    await store.captures.start(added.id, tx(0, "b2"), NOW + 3, "proc-b");
    expect(await store.captures.claimSend(added.id, word("b2"), NOW + 4)).toBe(true);
    await store.captures.recordBroadcast(added.id, word("b2"), NOW + 5);
    expect((await store.nonces.entries(RELAYER, 0))[0]).toMatchObject({
      state: "broadcast",
      txHash: word("b2"),
    });
    expect(await store.captures.get(added.id)).toMatchObject({
      sendStartedAt: NOW + 4,
      broadcasts: 1,
    });
  });

  test("two processes reserving at once get distinct nonces without a gap", async () => {
    const { database } = await freshStore(backend);
    const [first, second] = await Promise.all([
      reserveInProcess(database, "p1", 25),
      reserveInProcess(database, "p2", 25),
    ]);
    const all = [...first!, ...second!].sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: 50 }, (_, i) => i));
  }, 60_000);
});

describe.each(BACKENDS)("a cancel's order state on $name", (backend) => {
  test("begin() moves the order to canceling before anything is sent; capture is refused; fail() goes back with the cause", async () => {
    const { store } = await freshStore(backend);
    const voided = await store.addOrder(order(word("c1")), NOW);
    await store.voidOrder(voided.id, NOW);
    const begun = await store.cancels.begin(TOKEN, ALICE, word("c1"), NOW + 1);
    expect(begun).toMatchObject({ previous: "voided_offchain", order: { state: "canceling" } });
    // Run again (the first run killed before it sent): accepted as it is, nothing recorded twice.
    expect(await store.cancels.begin(TOKEN, ALICE, word("c1"), NOW + 2)).toMatchObject({
      previous: "voided_offchain",
      order: { state: "canceling" },
    });
    expect(await reserve(store, captureHolder(voided.id), 0)).toBe(0);
    await expect(store.captures.start(voided.id, tx(0, "c0"), NOW + 3, "test")).rejects.toThrow(
      /is canceling: it cannot become capturing/,
    );
    const back = await store.cancels.fail(voided.id, "cancel_reverted", NOW + 4);
    expect(back.state).toBe("voided_offchain");
    expect(
      (await store.listTransitions(voided.id))
        .slice(-2)
        .map((t) => `${t.fromState}>${t.toState}:${t.cause}`),
    ).toEqual([
      "voided_offchain>canceling:cancel_accepted",
      "canceling>voided_offchain:cancel_reverted",
    ]);
    expect(await store.cancels.begin(TOKEN, ALICE, word("ff"), NOW)).toBeUndefined();
  });

  test("a canceling order whose cancel never lands expires at validBefore", async () => {
    const { store } = await freshStore(backend);
    const added = await store.addOrder(order(word("g1")), NOW);
    await store.cancels.begin(TOKEN, ALICE, word("g1"), NOW);
    expect(await store.expireOrders(NOW + 3_601_000)).toEqual([added.id]);
    expect((await store.getOrder(added.id))?.state).toBe("expired");
  });

  test("the indexer moves a canceling order to canceled on its AuthorizationCanceled, and to captured when a capture landed first", async () => {
    const { store } = await freshStore(backend);
    const first = await store.addOrder(order(word("e1")), NOW);
    const second = await store.addOrder(order(word("e2")), NOW);
    await store.cancels.begin(TOKEN, ALICE, word("e1"), NOW);
    await store.cancels.begin(TOKEN, ALICE, word("e2"), NOW);
    await store.insertPreconfirmed(
      [
        ...eventLogs("canceled", word("e1"), word("f1"), 10),
        ...eventLogs("used", word("e2"), word("f2"), 10),
      ],
      NOW + 1,
    );
    expect(await store.getOrder(first.id)).toMatchObject({
      state: "canceled",
      eventStatus: "preconfirmed",
      eventTxHash: word("f1"),
    });
    expect(await store.getOrder(second.id)).toMatchObject({
      state: "captured",
      eventStatus: "preconfirmed",
      eventTxHash: word("f2"),
    });
    // The cancel of the second then fails: the order is no longer canceling and stays captured.
    expect((await store.cancels.fail(second.id, "cancel_reverted", NOW + 2)).state).toBe(
      "captured",
    );
  });

  test("an order capturing refuses the cancel and stays capturing", async () => {
    const { store } = await freshStore(backend);
    const added = await store.addOrder(order(word("d1")), NOW);
    await reserve(store, captureHolder(added.id), 0);
    await store.captures.start(added.id, tx(0, "d0"), NOW, "test");
    await expect(store.cancels.begin(TOKEN, ALICE, word("d1"), NOW + 1)).rejects.toThrow(
      /is capturing/,
    );
    expect((await store.getOrder(added.id))?.state).toBe("capturing");
  });
});
