import { blockRangeError, resultLimitError, type FaultAnswer } from "./faults.js";
import type { FrontParts } from "./frontParts.js";
import { ok, type Answer, type Answered, type MethodTable, type Request } from "./jsonRpc.js";
import { mergeOverrides, overriddenSlot, type AccountOverride } from "./pendingState.js";
import {
  matchesFilter,
  toQuantity,
  type LogFilterObject,
  type RpcLogObject,
} from "./rpcLogObject.js";

type GetLogsFilter = LogFilterObject & { fromBlock?: string; toBlock?: string; blockHash?: string };

/**
 * The reads a Flashblocks node answers from its pre-confirmed state when asked for "pending":
 * eth_getLogs up to "pending", eth_getBlockByNumber "pending", the pending nonce, the receipt of a
 * pre-confirmed transaction, and calls and state reads at "pending". Any other form of these reads
 * goes to anvil as is.
 */
export function createPendingViewMethods(front: FrontParts): MethodTable {
  const { upstream, sequencer, state } = front;
  const forward = async (request: Request) => (await upstream.forward(request)) as Answer;
  const head = async () => Number(await upstream.call<string>("eth_blockNumber"));

  /**
   * A call (eth_call, eth_estimateGas) at "pending" runs on the head with the pending state as
   * overrides, the caller's own on top: one execution, where anvil's "pending" re-executes its pool.
   */
  const callAtPending = async (request: Request, params: unknown[]) => {
    if (params[1] !== "pending") return forward(request);
    const pending = await sequencer.pendingCallState();
    const overrides = mergeOverrides(pending?.overrides ?? {}, params[2]);
    const blockOverrides = params[3] ?? pending?.env;
    const extra: unknown[] =
      blockOverrides !== undefined
        ? [overrides, blockOverrides]
        : Object.keys(overrides).length > 0
          ? [overrides]
          : [];
    return forward({ ...request, params: [params[0], "latest", ...extra] });
  };

  /** A state read at "pending": the pending state's value when it set one, else the head's. */
  const readAtPending =
    (blockParam: number, pick: (account: AccountOverride, params: unknown[]) => unknown) =>
    async ({ request, params }: { request: Request; params: unknown[] }) => {
      if (params[blockParam] !== "pending") return forward(request);
      const address = typeof params[0] === "string" ? params[0].toLowerCase() : "";
      const account = (await sequencer.pendingCallState())?.overrides[address];
      const value = account === undefined ? undefined : pick(account, params);
      if (value !== undefined) return ok(request, value);
      const onHead = [...params];
      onHead[blockParam] = "latest";
      return forward({ ...request, params: onHead });
    };

  return {
    eth_call: ({ request, params }) => callAtPending(request, params),
    eth_estimateGas: ({ request, params }) => callAtPending(request, params),
    eth_getBalance: readAtPending(1, (account) => account.balance),
    eth_getCode: readAtPending(1, (account) => account.code),
    eth_getStorageAt: readAtPending(2, (account, params) =>
      typeof params[1] === "string" ? overriddenSlot(account, params[1]) : undefined,
    ),

    // Faults (block range and result limits) apply over HTTP only, as a provider's proxy does.
    eth_getLogs: async ({ request, params, socket }) => {
      const withFaults = socket === undefined;
      const filter = (params[0] ?? {}) as GetLogsFilter;
      const pending = sequencer.pendingLogs().filter((log) => matchesFilter(log, filter));
      // Note: only toBlock "pending" switches to the pre-confirmed path (Base's flashblocks
      // rpc/eth.rs).
      if (filter.blockHash === undefined && filter.toBlock === "pending") {
        if (filter.fromBlock === "pending") return ok(request, pending);
        const canonical = await forward({ ...request, params: [{ ...filter, toBlock: "latest" }] });
        if (canonical.error !== undefined) return canonical;
        const seen = new Set(
          (canonical.result as RpcLogObject[]).map((l) => `${l.blockNumber}:${l.logIndex}`),
        );
        return ok(request, [
          ...(canonical.result as RpcLogObject[]),
          ...pending.filter((l) => !seen.has(`${l.blockNumber}:${l.logIndex}`)),
        ]);
      }
      if (
        withFaults &&
        filter.blockHash === undefined &&
        state.faults.maxBlockRange !== undefined
      ) {
        const at = await head();
        const error = blockRangeError(
          state.faults,
          blockTag(filter.fromBlock, at),
          blockTag(filter.toBlock, at),
        );
        if (error !== undefined) return faultAnswer(request, error);
      }
      const answer = await forward(request);
      if (withFaults && Array.isArray(answer.result) && filter.blockHash === undefined) {
        const error = resultLimitError(
          state.faults,
          blockTag(filter.fromBlock, await head()),
          answer.result as RpcLogObject[],
        );
        if (error !== undefined) return faultAnswer(request, error);
      }
      return answer;
    },

    eth_getBlockByNumber: async ({ request, params }) => {
      if (params[0] !== "pending") return forward(request);
      // Note: a Flashblocks node answers "pending" from its pre-confirmed state (header hash zero),
      // null when it has none.
      const block = sequencer.pendingBlock();
      if (block === undefined || params[1] === true) return ok(request, block ?? null);
      return ok(request, { ...block, transactions: block.transactions.map((t) => t.hash) });
    },

    eth_getTransactionCount: async ({ request, params }) => {
      if (params[1] !== "pending") return forward(request);
      // Note: on Base, "pending" is the canonical count plus the sender's pre-confirmed
      // transactions; no mempool. Read between sequencer steps, as a node answers from one state:
      // in the middle of a block being mined the block's transactions were counted twice (in latest
      // and as still pre-confirmed), and a relayer trusting that count left a nonce gap.
      const count = await sequencer.readBetween(async () => {
        const latest = Number(
          await upstream.call<string>("eth_getTransactionCount", [params[0], "latest"]),
        );
        return latest + sequencer.preconfirmedCount(String(params[0]));
      });
      return ok(request, toQuantity(count));
    },

    eth_getTransactionReceipt: async ({ request, params }) => {
      // Note: on Base, a pre-confirmed transaction has a receipt (zero blockHash) before its block
      // exists.
      const answer = await forward(request);
      if (answer.error !== undefined || answer.result !== null || typeof params[0] !== "string")
        return answer;
      return ok(request, sequencer.preconfirmedReceipt(params[0]) ?? null);
    },
  };
}

/** A fault as the JSON-RPC error it is answered with, with its HTTP status. */
function faultAnswer(request: Request, fault: FaultAnswer): Answered {
  return {
    answer: {
      jsonrpc: "2.0",
      id: request.id ?? null,
      error: { code: fault.code, message: fault.message },
    },
    httpStatus: fault.httpStatus,
  };
}

/** A block tag or number as a height, given the head. */
function blockTag(tag: string | undefined, head: number): number {
  if (
    tag === undefined ||
    tag === "latest" ||
    tag === "pending" ||
    tag === "safe" ||
    tag === "finalized"
  )
    return head;
  if (tag === "earliest") return 0;
  return Number(tag);
}
