import {
  encodeAbiParameters,
  encodeEventTopics,
  pad,
  parseAbi,
  toEventSelector,
  type Hex,
} from "viem";
import { entryPoint06Abi, entryPoint07Abi, entryPoint08Abi } from "viem/account-abstraction";
import { describe, expect, test } from "vitest";
import { BEFORE_EXECUTION_TOPIC, USER_OPERATION_EVENT_TOPIC } from "../../src/decode/erc4337.js";
import { mapBundleLogs } from "../../src/decode/userOperationLogs.js";
import type { ReceiptLog } from "../../src/rows/receiptLog.js";

const EP: Hex = "0x0000000071727de22e5e9d8baf0edac6f37da032";
const OTHER_EP: Hex = "0x4337084d9e255ff0702461cf8895ce9e3b5ff108";
const USDC: Hex = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const EURC: Hex = "0x60a3e35cc302bfa44cb288bc5a4f316fdb1adb42";
const ALICE: Hex = "0x1111111111111111111111111111111111111111";
const BOB: Hex = "0x2222222222222222222222222222222222222222";
const PAYMASTER: Hex = "0x3333333333333333333333333333333333333333";
const erc20 = parseAbi([
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event Approval(address indexed owner, address indexed spender, uint256 value)",
]);

/** Builds a receipt's logs in order, numbering logIndex from `first` (a bundle is rarely a block's first transaction). */
function receipt(first = 40) {
  const logs: ReceiptLog[] = [];
  const push = (log: Omit<ReceiptLog, "logIndex">) =>
    logs.push({ ...log, logIndex: first + logs.length });
  return {
    logs,
    transfer(token: Hex, from: Hex, to: Hex, value = 1n) {
      push({
        address: token,
        topics: encodeEventTopics({
          abi: erc20,
          eventName: "Transfer",
          args: { from, to },
        }) as Hex[],
        data: encodeAbiParameters([{ type: "uint256" }], [value]),
      });
      return this;
    },
    approval(token: Hex) {
      push({
        address: token,
        topics: encodeEventTopics({
          abi: erc20,
          eventName: "Approval",
          args: { owner: ALICE, spender: BOB },
        }) as Hex[],
        data: pad("0x01"),
      });
      return this;
    },
    beforeExecution(address: Hex = EP) {
      push({ address, topics: [BEFORE_EXECUTION_TOPIC], data: "0x" });
      return this;
    },
    userOperationEvent(sender: Hex, nonce: bigint, success = true, address: Hex = EP) {
      push({
        address,
        topics: encodeEventTopics({
          abi: entryPoint07Abi,
          eventName: "UserOperationEvent",
          args: { userOpHash: pad("0xabcd"), sender, paymaster: PAYMASTER },
        }) as Hex[],
        data: encodeAbiParameters(
          [{ type: "uint256" }, { type: "bool" }, { type: "uint256" }, { type: "uint256" }],
          [nonce, success, 10_000n, 50_000n],
        ),
      });
      return this;
    },
  };
}

const OPS = [
  { sender: ALICE, nonce: 7n },
  { sender: BOB, nonce: 1n << 64n },
];

describe("mapBundleLogs()", () => {
  test("the event topics are those of the real EntryPoint ABIs (v0.6, v0.7, v0.8)", () => {
    for (const abi of [entryPoint06Abi, entryPoint07Abi, entryPoint08Abi]) {
      expect(
        toEventSelector(
          abi.find((item) => item.type === "event" && item.name === "UserOperationEvent")!,
        ),
      ).toBe(USER_OPERATION_EVENT_TOPIC);
      expect(
        toEventSelector(
          abi.find((item) => item.type === "event" && item.name === "BeforeExecution")!,
        ),
      ).toBe(BEFORE_EXECUTION_TOPIC);
    }
  });

  test("each operation gets the logs after the previous boundary up to its UserOperationEvent; the rest are the bundler's", () => {
    const r = receipt()
      .transfer(USDC, ALICE, PAYMASTER) // validation (a paymaster's prefund): before BeforeExecution, no operation's
      .beforeExecution()
      .transfer(USDC, ALICE, BOB)
      .approval(USDC) // not an indexed event: takes no position
      .transfer(EURC, ALICE, BOB)
      .userOperationEvent(ALICE, 7n)
      .transfer(USDC, BOB, ALICE)
      .userOperationEvent(BOB, 1n << 64n)
      .transfer(USDC, BOB, PAYMASTER); // after the last operation: the bundler's
    expect(mapBundleLogs(r.logs, EP, OPS)).toEqual({
      kind: "mapped",
      logs: [
        { token: USDC, txLogPosition: 1, opIndex: 0 },
        { token: EURC, txLogPosition: 0, opIndex: 0 },
        { token: USDC, txLogPosition: 2, opIndex: 1 },
      ],
    });
  });

  test("a failed operation keeps its postOp's logs (its execution's were reverted), and the next operation starts after its event", () => {
    const r = receipt()
      .beforeExecution()
      .transfer(USDC, ALICE, PAYMASTER) // postOp of a reverted execution: the paymaster takes its fee anyway
      .userOperationEvent(ALICE, 7n, false)
      .transfer(USDC, BOB, ALICE)
      .userOperationEvent(BOB, 1n << 64n);
    expect(mapBundleLogs(r.logs, EP, OPS)).toEqual({
      kind: "mapped",
      logs: [
        { token: USDC, txLogPosition: 0, opIndex: 0 },
        { token: USDC, txLogPosition: 1, opIndex: 1 },
      ],
    });
  });

  test("an operation with no logs of its own maps nothing, and events of another contract are not boundaries", () => {
    const r = receipt()
      .beforeExecution()
      .userOperationEvent(ALICE, 7n)
      .beforeExecution(OTHER_EP) // an operation calling another EntryPoint: not this bundle's events
      .userOperationEvent(ALICE, 3n, true, OTHER_EP)
      .transfer(USDC, BOB, ALICE)
      .userOperationEvent(BOB, 1n << 64n);
    expect(mapBundleLogs(r.logs, EP, OPS)).toEqual({
      kind: "mapped",
      logs: [{ token: USDC, txLogPosition: 0, opIndex: 1 }],
    });
    // The EntryPoint's address may come in any case.
    expect(mapBundleLogs(r.logs, "0x0000000071727De22E5E9d8BAf0edAc6f37da032", OPS)).toEqual(
      mapBundleLogs(r.logs, EP, OPS),
    );
  });

  test("events out of order, or counts that do not match the calldata, credit no operation and say why", () => {
    const cases: Array<[ReturnType<typeof receipt>, RegExp]> = [
      [
        receipt()
          .userOperationEvent(ALICE, 7n)
          .beforeExecution()
          .userOperationEvent(BOB, 1n << 64n),
        /came before BeforeExecution/,
      ],
      [
        receipt().beforeExecution().userOperationEvent(ALICE, 7n),
        /1 UserOperationEvent\(s\) for 2 operation\(s\)/,
      ],
      [
        receipt()
          .beforeExecution()
          .userOperationEvent(ALICE, 7n)
          .userOperationEvent(BOB, 1n << 64n)
          .userOperationEvent(BOB, 2n),
        /more UserOperationEvents than the calldata holds operations \(2\)/,
      ],
      [
        receipt()
          .beforeExecution()
          .userOperationEvent(BOB, 1n << 64n)
          .userOperationEvent(ALICE, 7n),
        /UserOperationEvent 0 names sender 0x2222.* the calldata's operation 0 sender 0x1111/,
      ],
      [
        receipt()
          .beforeExecution()
          .userOperationEvent(ALICE, 8n)
          .userOperationEvent(BOB, 1n << 64n),
        /nonce 8, the calldata's operation 0 .* nonce 7/,
      ],
      [
        receipt()
          .beforeExecution()
          .beforeExecution()
          .userOperationEvent(ALICE, 7n)
          .userOperationEvent(BOB, 1n << 64n),
        /BeforeExecution more than once/,
      ],
      [receipt().transfer(USDC, ALICE, BOB), /0 UserOperationEvent\(s\) for 2 operation\(s\)/],
    ];
    for (const [r, reason] of cases) {
      const result = mapBundleLogs(r.logs, EP, OPS);
      expect(result.kind).toBe("unmapped");
      expect(result.kind === "unmapped" && result.reason).toMatch(reason);
    }
  });

  test("hostile logs (unsorted, a truncated event, a sender topic that is no address) are refused, never thrown", () => {
    const r = receipt()
      .beforeExecution()
      .userOperationEvent(ALICE, 7n)
      .userOperationEvent(BOB, 1n << 64n);
    const swapped = [r.logs[0]!, r.logs[2]!, r.logs[1]!];
    expect(mapBundleLogs(swapped, EP, OPS)).toMatchObject({
      kind: "unmapped",
      reason: expect.stringMatching(/not in logIndex order/),
    });
    const truncated = r.logs.map((log, i) =>
      i === 1 ? { ...log, data: log.data.slice(0, 66) as Hex } : log,
    );
    expect(mapBundleLogs(truncated, EP, OPS)).toEqual({
      kind: "unmapped",
      reason: "UserOperationEvent 0 is malformed",
    });
    const badSender = r.logs.map((log, i) =>
      i === 1
        ? {
            ...log,
            topics: [log.topics[0]!, log.topics[1]!, `0x${"ff".repeat(32)}` as Hex, log.topics[3]!],
          }
        : log,
    );
    expect(mapBundleLogs(badSender, EP, OPS)).toEqual({
      kind: "unmapped",
      reason: "UserOperationEvent 0 is malformed",
    });
    const threeTopics = r.logs.map((log, i) =>
      i === 1 ? { ...log, topics: log.topics.slice(0, 3) } : log,
    );
    expect(mapBundleLogs(threeTopics, EP, OPS)).toEqual({
      kind: "unmapped",
      reason: "UserOperationEvent 0 is malformed",
    });
  });

  test("a bundle of no operations maps nothing", () => {
    expect(
      mapBundleLogs(receipt().beforeExecution().transfer(USDC, ALICE, BOB).logs, EP, []),
    ).toEqual({ kind: "mapped", logs: [] });
  });
});
