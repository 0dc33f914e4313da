import { createAttributor, type Attributor } from "../attribution/attributeLogs.js";
import type { Common } from "../common.js";
import type { Store } from "../store/store.js";

/**
 * What every sync stage takes first: the common bag, the store, and the services the stages share.
 * Built once per daemon (createSyncDeps), so e.g. the attributor's memory of attributed transactions
 * is one for the backfill, every catch-up, the head follower and the pending indexer.
 */
export type SyncDeps = Common & {
  store: Store;
  /** Undefined when attribution is off. */
  attributor: Attributor | undefined;
};

export function createSyncDeps(common: Common, store: Store): SyncDeps {
  const attributor = common.config.attribution.enabled
    ? createAttributor({
        metrics: common.metrics,
        chainId: common.config.chainId,
        store,
        entryPoints: common.config.attribution.entryPoints,
      })
    : undefined;
  return { ...common, store, attributor };
}
