import type { Hex } from "viem";
import { BEFORE_EXECUTION_TOPIC, USER_OPERATION_EVENT_TOPIC } from "./erc4337.js";
import { PAYMENT_TOPICS } from "../rows/paymentEvents.js";
import type { ReceiptLog } from "../rows/receiptLog.js";

/** An indexed log (a token's payment event) that one user operation brought about. */
export type OperationLog = {
  /** The token (lowercase). */
  token: Hex;
  /** Its position among the token's indexed logs in the transaction, as `logs.tx_log_position` numbers it. */
  txLogPosition: number;
  opIndex: number;
};

/**
 * Which user operation each indexed log of a bundle belongs to, or why that cannot be said.
 * Logs of no operation (the validation phase before `BeforeExecution`, anything after the last
 * `UserOperationEvent`) have no entry: they are the bundler's.
 */
export type BundleLogs =
  { kind: "mapped"; logs: OperationLog[] } | { kind: "unmapped"; reason: string };

/** The sender and nonce a decoded user operation of the bundle's calldata carries (in calldata order). */
export type OperationIdentity = { sender: Hex; nonce: bigint };

/** A bundle whose logs are still to be mapped: its hash, the EntryPoint it called, its operations. */
export type BundleCall = { hash: Hex; entryPoint: Hex; operations: OperationIdentity[] };

const EVENT_DATA = /^0x[0-9a-fA-F]{256}$/;
const ADDRESS_TOPIC = /^0x0{24}[0-9a-fA-F]{40}$/;
const PAYMENT_TOPIC_SET: ReadonlySet<string> = new Set(PAYMENT_TOPICS);

/**
 * Maps a bundle's indexed logs to its user operations from the EntryPoint's own events, as
 * EntryPoint v0.6 to v0.9 emit them: validation of every operation, then `BeforeExecution`, then
 * per operation (calldata order, across aggregator groups) its execution logs, its paymaster's
 * postOp logs and its `UserOperationEvent`. Operation i's logs are those after the previous
 * boundary (`BeforeExecution`, then each `UserOperationEvent`) up to its own `UserOperationEvent`.
 * A failed operation (success false) keeps what was not reverted (a postOp's logs).
 *
 * Only events of `entryPoint` (the transaction's `to`) count. The answer is `unmapped` unless the
 * receipt shows exactly one `BeforeExecution` before exactly one `UserOperationEvent` per decoded
 * operation, the i-th naming operation i's sender and nonce: a receipt that disagrees with the
 * calldata credits no operation rather than the wrong one. Pure; never throws.
 */
export function mapBundleLogs(
  logs: readonly ReceiptLog[],
  entryPoint: Hex,
  operations: readonly OperationIdentity[],
): BundleLogs {
  const ep = entryPoint.toLowerCase();
  let before: number | undefined;
  const boundaries: number[] = [];
  for (let i = 1; i < logs.length; i++) {
    const [previous, log] = [logs[i - 1]!.logIndex, logs[i]!.logIndex];
    if (log <= previous)
      return unmapped(`the receipt's logs are not in logIndex order (${log} after ${previous})`);
  }
  for (let i = 0; i < logs.length; i++) {
    const log = logs[i]!;
    if (log.address.toLowerCase() !== ep) continue;
    const topic0 = log.topics[0]?.toLowerCase();
    if (topic0 === BEFORE_EXECUTION_TOPIC) {
      if (before !== undefined)
        return unmapped("the EntryPoint emitted BeforeExecution more than once");
      before = i;
    } else if (topic0 === USER_OPERATION_EVENT_TOPIC) {
      if (before === undefined) return unmapped("a UserOperationEvent came before BeforeExecution");
      const op = boundaries.length;
      const expected = operations[op];
      if (expected === undefined)
        return unmapped(
          `the EntryPoint emitted more UserOperationEvents than the calldata holds operations (${operations.length})`,
        );
      const event = readUserOperationEvent(log);
      if (event === undefined) return unmapped(`UserOperationEvent ${op} is malformed`);
      if (event.sender !== expected.sender.toLowerCase() || event.nonce !== expected.nonce)
        return unmapped(
          `UserOperationEvent ${op} names sender ${event.sender} nonce ${event.nonce}, the calldata's operation ${op} sender ${expected.sender.toLowerCase()} nonce ${expected.nonce}`,
        );
      boundaries.push(i);
    }
  }
  if (boundaries.length !== operations.length)
    return unmapped(
      `the EntryPoint emitted ${boundaries.length} UserOperationEvent(s) for ${operations.length} operation(s)`,
    );
  if (operations.length === 0 || before === undefined) return { kind: "mapped", logs: [] };
  return { kind: "mapped", logs: operationLogs(logs, before, boundaries) };
}

/** Numbers every token's indexed logs as `tx_log_position` does and keeps those inside an operation. */
function operationLogs(
  logs: readonly ReceiptLog[],
  before: number,
  boundaries: readonly number[],
): OperationLog[] {
  const positions = new Map<string, number>();
  const result: OperationLog[] = [];
  let op = 0;
  for (let i = 0; i < logs.length; i++) {
    const log = logs[i]!;
    while (op < boundaries.length && i > boundaries[op]!) op++;
    const topic0 = log.topics[0]?.toLowerCase();
    if (topic0 === undefined || !PAYMENT_TOPIC_SET.has(topic0)) continue;
    const token = log.address.toLowerCase() as Hex;
    const txLogPosition = positions.get(token) ?? 0;
    positions.set(token, txLogPosition + 1);
    if (i > before && op < boundaries.length) result.push({ token, txLogPosition, opIndex: op });
  }
  return result;
}

/** The indexed sender and the data's nonce of a UserOperationEvent, or undefined when its shape is not the event's. */
function readUserOperationEvent(log: ReceiptLog): { sender: Hex; nonce: bigint } | undefined {
  const senderTopic = log.topics[2];
  // Four topics (signature, userOpHash, sender, paymaster) and four data words.
  if (log.topics.length !== 4 || senderTopic === undefined || !EVENT_DATA.test(log.data))
    return undefined;
  if (!ADDRESS_TOPIC.test(senderTopic)) return undefined;
  return {
    sender: `0x${senderTopic.slice(26).toLowerCase()}` as Hex,
    nonce: BigInt(`0x${log.data.slice(2, 66)}`),
  };
}

function unmapped(reason: string): BundleLogs {
  return { kind: "unmapped", reason };
}
