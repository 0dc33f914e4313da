import { getBlockHeader } from "../chain/blockHeaders.js";
import { getChainTips, type ChainTips } from "../chain/finality.js";
import type { Config } from "../config/types.js";
import { ConfigError, FatalError } from "../errors/base.js";
import { openStore } from "../store/openStore.js";
import type { Store } from "../store/store.js";
import type { WriterLock } from "../store/types.js";
import { rewindToChainEnd } from "../sync/historical/rewindToChainEnd.js";
import { verifyChain } from "./context.js";
import type { Common } from "../common.js";

export type OpenIndexOptions = {
  /** The database's writer lock, taken by the caller: its holder is recorded in the database. */
  lock: WriterLock;
  /** The command's own checks of the tips (its block range): they run before anything is written. */
  checkTips?: ((tips: ChainTips) => void) | undefined;
  /**
   * Where the chain ended when it was restored (the bundled devnet), when it may end below blocks
   * the database indexed: those are then rewound as a reorg (sync/historical/rewindToChainEnd.ts).
   */
  chainEndsAt?: number | undefined;
};

export type OpenedIndex = { store: Store; tips: ChainTips };

/**
 * The open sequence of the commands that write the index (start, backfill): every endpoint's chain
 * id checked, the genesis block read, the tips read and the start blocks checked against them, then
 * the store opened (created or migrated) pinned to that chain. Nothing is written before the last step.
 */
export async function openIndex(context: Common, options: OpenIndexOptions): Promise<OpenedIndex> {
  await verifyChain(context);
  const genesis = await getBlockHeader(context.client, 0);
  if (genesis === undefined)
    throw new FatalError(
      "The RPC serves no genesis block (eth_getBlockByNumber(0x0) returned null)",
    );
  const tips = await getChainTips(context.client, context.config.finality);
  checkStartBlocks(context.config, tips.head);
  options.checkTips?.(tips);
  const store = await openStore(context.config, {
    metrics: context.metrics,
    identity: { genesisHash: genesis.hash },
    lock: options.lock,
  });
  try {
    if (options.chainEndsAt !== undefined)
      await rewindToChainEnd({ ...context, store }, options.chainEndsAt);
  } catch (error) {
    await store.close();
    throw error;
  }
  return { store, tips };
}

/** A token whose start block lies above the head is a config mistake (a typo, or the wrong network). */
function checkStartBlocks(config: Config, head: number): void {
  config.tokens.forEach((token, i) => {
    if (token.startBlock > head)
      throw new ConfigError(
        `tokens[${i}].startBlock`,
        `${token.startBlock} is above the chain head ${head}`,
      );
  });
}
