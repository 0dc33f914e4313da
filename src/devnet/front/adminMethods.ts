import { parseFaults } from "./faults.js";
import type { FrontParts } from "./frontParts.js";
import { answeringResults, RpcError, type MethodTable } from "./jsonRpc.js";
import { toQuantity } from "./rpcLogObject.js";
import type { PendingLogsMode } from "./subscriptions.js";

/** A sender address as devnet_holdSenders takes it: 0x and 40 hex digits, any case. */
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
/** More held senders than a test or the bench could mean is a mistake, refused. */
const MAX_HELD_SENDERS = 100;

/**
 * The `devnet_*` methods: what a test or the demo drives the front with (flashblocks and blocks on
 * demand, reorgs, pre-confirmations dropped or deferred, senders held back, a lagging or stale
 * pending view, faults). No real node has them.
 */
export function createAdminMethods(front: FrontParts): MethodTable {
  const { upstream, sequencer, watcher, subscriptions, state } = front;

  /**
   * The raw transactions of the last `depth` blocks, paired with their block offset for
   * anvil_reorg.
   */
  async function orphanedTransactions(depth: number): Promise<Array<[string, number]>> {
    const head = Number(await upstream.call<string>("eth_blockNumber"));
    const pairs: Array<[string, number]> = [];
    for (let offset = 0; offset < depth; offset++) {
      const block = await upstream.call<{ transactions: string[] } | null>("eth_getBlockByNumber", [
        toQuantity(head - depth + 1 + offset),
        false,
      ]);
      for (const hash of block?.transactions ?? [])
        pairs.push([await upstream.call<string>("eth_getRawTransactionByHash", [hash]), offset]);
    }
    return pairs;
  }

  return answeringResults({
    devnet_flashblock: async () => {
      const flashblock = await sequencer.flashblock();
      return {
        blockNumber: flashblock.blockNumber,
        index: flashblock.index,
        newLogs: flashblock.newLogs.length,
      };
    },
    devnet_mine: async () => {
      await sequencer.mine();
      await watcher.sync();
      return true;
    },
    devnet_reorg: async (params) => {
      const [depth, transactions] = params as [unknown, unknown];
      if (typeof depth !== "number" || !Number.isInteger(depth) || depth < 1)
        throw new RpcError(-32602, "depth must be a positive integer");
      // By default the new branch re-includes the orphaned transactions (new block hashes, same
      // payments), as a real reorg mostly does; anvil alone would drop them and strand their
      // nonces. Between sequencer steps: a block being mined sets pool transactions aside for a
      // moment.
      const replacements = await sequencer.between(async () => {
        const chosen = Array.isArray(transactions)
          ? transactions
          : await orphanedTransactions(depth);
        // Note: anvil_reorg takes positional params only.
        await upstream.call("anvil_reorg", [depth, chosen]);
        return chosen;
      });
      await watcher.sync();
      return { depth, reincluded: replacements.length };
    },
    devnet_dropPreconfirmed: async (params) => {
      const [hash] = params;
      if (typeof hash !== "string") throw new RpcError(-32602, "expected a transaction hash");
      return sequencer.drop(hash);
    },
    devnet_deferPreconfirmed: async (params) => {
      const [hash] = params;
      if (typeof hash !== "string") throw new RpcError(-32602, "expected a transaction hash");
      return sequencer.defer(hash);
    },
    devnet_holdSenders: async (params) => {
      const [senders] = params;
      if (
        !Array.isArray(senders) ||
        senders.length > MAX_HELD_SENDERS ||
        !senders.every((s) => typeof s === "string" && ADDRESS.test(s))
      )
        throw new RpcError(
          -32602,
          `expected an array of at most ${MAX_HELD_SENDERS} addresses (0x and 40 hex digits)`,
        );
      return sequencer.hold(senders as string[]);
    },
    devnet_setPendingLag: async (params) => {
      const [blocks] = params;
      if (typeof blocks !== "number" || !Number.isInteger(blocks) || blocks < 0)
        throw new RpcError(-32602, "blocks must be a non-negative integer");
      await sequencer.setLag(blocks);
      return blocks;
    },
    devnet_clearPending: async () => {
      await sequencer.clear();
      return true;
    },
    devnet_disconnectWebSockets: async () => {
      const count = state.sockets.size;
      for (const socket of state.sockets) socket.terminate();
      return count;
    },
    devnet_setFaults: async (params) => {
      try {
        state.faults = parseFaults(params[0] ?? {});
      } catch (error) {
        throw new RpcError(-32602, `devnet_setFaults: ${(error as Error).message}`);
      }
      return state.faults;
    },
    devnet_stallFlashblockSubscribers: async (params) => {
      if (typeof params[0] !== "boolean")
        throw new RpcError(-32602, "expected true (stall) or false (resume)");
      return { lagged: subscriptions.setStalled(params[0]) };
    },
    devnet_setSubscriptionKinds: async (params) => {
      if (!Array.isArray(params[0]) || !params[0].every((k) => typeof k === "string"))
        throw new RpcError(-32602, "expected an array of subscription kinds");
      try {
        return subscriptions.setOffered(params[0] as string[]);
      } catch (error) {
        throw new RpcError(-32602, (error as Error).message);
      }
    },
    devnet_setPendingView: async (params) => {
      const [mode] = params;
      if (mode !== "live" && mode !== "frozen" && mode !== "null")
        throw new RpcError(-32602, 'mode must be "live", "frozen" or "null"');
      return sequencer.setView(mode);
    },
    devnet_setHeadsDelay: async (params) => {
      const [ms] = params;
      if (typeof ms !== "number" || !Number.isInteger(ms) || ms < 0 || ms > 60_000)
        throw new RpcError(-32602, "ms must be an integer from 0 to 60000");
      state.headsDelayMs = ms;
      return ms;
    },
    devnet_pendingReads: async () => ({ ...state.pendingReads }),
    devnet_setPendingLogsMode: async (params) => {
      const mode = params[0] as Partial<PendingLogsMode> | undefined;
      if (mode?.shape !== "single" && mode?.shape !== "array")
        throw new RpcError(-32602, 'shape must be "single" or "array"');
      subscriptions.setMode({ shape: mode.shape, repeat: mode.repeat === true });
      return subscriptions.mode();
    },
  });
}
