import type { Hex } from "viem";
import { describe, expect, test } from "vitest";
import { PRECONFIRMED_BLOCK_HASH } from "../../src/rows/rpcLog.js";
import { RetryableError } from "../../src/errors/base.js";
import { RpcResponseError, RpcTransportError } from "../../src/errors/rpc.js";
import {
  PRECONFIRMED_BACKOFF_MAX_MS,
  createPreconfirmedBackoff,
  preconfirmedReadDelayMs,
} from "../../src/sync/preconfirmed/preconfirmedBackoff.js";
import { parentVerdict } from "../../src/sync/preconfirmed/heldRows.js";
import { HashesOnlyError } from "../../src/errors/rpc.js";
import { logsOfNotification } from "../../src/sync/preconfirmed/flashblocksNotifications.js";

const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as Hex;
const TX = hash(0xabc);
const log = (
  logIndex: number,
  address = "0x00000000000000000000000000000000000000aa",
  tx = TX,
) => ({
  address,
  topics: [hash(1)],
  data: "0x",
  blockNumber: "0x10",
  blockHash: PRECONFIRMED_BLOCK_HASH,
  transactionHash: tx,
  transactionIndex: "0x0",
  logIndex: `0x${logIndex.toString(16)}`,
  removed: false,
});

describe("the pending view's read policy", () => {
  test("a failed read waits the endpoint's Retry-After, else doubles from the poll interval up to the ceiling", () => {
    const limited = new RetryableError("gave up", {
      cause: new RpcTransportError("429", { retryAfterMs: 3_000 }),
    });
    expect(preconfirmedReadDelayMs(1, limited, 200)).toBe(3_000);
    expect(
      [1, 2, 3].map((n) => preconfirmedReadDelayMs(n, new RpcResponseError("bad"), 200)),
    ).toEqual([400, 800, 1_600]);
    expect(preconfirmedReadDelayMs(30, new RpcResponseError("bad"), 200)).toBe(
      PRECONFIRMED_BACKOFF_MAX_MS,
    );
  });

  test("one shared pause: after a failure nothing reads before it ends, and a success clears it", () => {
    let now = 1_000;
    const backoff = createPreconfirmedBackoff(200, () => now);
    expect(backoff.waitMs()).toBe(0);
    backoff.failed(new RpcTransportError("429", { retryAfterMs: 2_000 }));
    now += 500;
    expect([backoff.waitMs(), backoff.askedWaitMs()]).toEqual([1_500, 1_500]);
    backoff.succeeded();
    expect(backoff.waitMs()).toBe(0);
    // Our own backoff pauses the poll, but it is not the endpoint's request.
    backoff.failed(new RpcResponseError("bad answer"));
    expect([backoff.waitMs(), backoff.askedWaitMs()]).toEqual([400, 0]);
  });
});

describe("parentVerdict()", () => {
  const chain = new Map([
    [9, hash(9)],
    [10, hash(10)],
  ]);
  const at = (n: number) => chain.get(n);
  test("stores rows whose pending block sits on the canonical head, or whose parent is unknown or itself pending", () => {
    expect(parentVerdict(11, hash(10), 10, at)).toBe("store");
    expect(parentVerdict(11, undefined, 10, at)).toBe("store");
    expect(parentVerdict(12, PRECONFIRMED_BLOCK_HASH, 10, at)).toBe("store");
  });
  test("holds rows whose parent is not canonical yet, or is another block than the canonical one", () => {
    expect(parentVerdict(12, hash(11), 10, at)).toBe("hold");
    expect(parentVerdict(11, hash(0xdead), 10, at)).toBe("hold");
  });
});

describe("logsOfNotification()", () => {
  const all = () => true;
  test("pendingLogs: one log, or an array of logs (whole)", () => {
    expect(logsOfNotification("pendingLogs", log(0), all)).toMatchObject({
      logs: [{ logIndex: 0 }],
      whole: false,
    });
    expect(logsOfNotification("pendingLogs", [log(0), log(1)], all)).toMatchObject({
      logs: [{ logIndex: 0 }, { logIndex: 1 }],
      whole: true,
    });
  });
  test("newFlashblockTransactions: the wanted logs of one transaction or of an array of them", () => {
    const tx = {
      hash: TX,
      from: hash(2).slice(0, 42),
      logs: [log(0), log(1, "0x00000000000000000000000000000000000000bb")],
      gasUsed: "0x5208",
    };
    const token = (l: { address: string }) => l.address.endsWith("aa");
    expect(logsOfNotification("newFlashblockTransactions", tx, token)).toMatchObject({
      logs: [{ logIndex: 0 }],
      whole: true,
    });
    expect(logsOfNotification("newFlashblockTransactions", [tx, tx], token).logs).toHaveLength(2);
  });
  test("newFlashblockTransactions: hashes only, a log of another transaction, or a missing logs array are refused", () => {
    expect(() => logsOfNotification("newFlashblockTransactions", TX, all)).toThrow(HashesOnlyError);
    expect(() =>
      logsOfNotification("newFlashblockTransactions", { hash: hash(7), logs: [log(0)] }, all),
    ).toThrow(/belongs to another transaction/);
    expect(() => logsOfNotification("newFlashblockTransactions", { hash: TX }, all)).toThrow(
      /logs is not an array/,
    );
  });
});
