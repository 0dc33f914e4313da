import type { WebSocket } from "ws";
import type { CanonicalWatcher } from "./canonicalWatcher.js";
import { NO_FAULTS, type Faults } from "./faults.js";
import type { HeldSenders } from "./heldSenders.js";
import type { Sequencer } from "./sequencer.js";
import type { Subscriptions } from "./subscriptions.js";
import type { Upstream } from "./upstream.js";

/** What the admin methods change at run time and the rest of the front reads; one per front. */
export type FrontState = {
  faults: Faults;
  /**
   * newHeads and logs notifications go out this late: flashblocks of the next block then arrive
   * first (base/base PR #979).
   */
  headsDelayMs: number;
  /**
   * Reads of the pending view over HTTP (eth_getLogs up to "pending", eth_getBlockByNumber
   * "pending"): answered and refused.
   */
  pendingReads: { answered: number; refused: number };
  /** Open WebSocket connections. */
  sockets: Set<WebSocket>;
};

/** A front's state as it starts: no faults, no delay, nothing counted. */
export function createFrontState(): FrontState {
  return {
    faults: NO_FAULTS,
    headsDelayMs: 0,
    pendingReads: { answered: 0, refused: 0 },
    sockets: new Set(),
  };
}

/** The parts of a front its method handlers work with. */
export type FrontParts = {
  upstream: Upstream;
  sequencer: Sequencer;
  watcher: CanonicalWatcher;
  subscriptions: Subscriptions;
  state: FrontState;
  /** Senders held back by devnet_holdSenders: their sends are answered and kept apart. */
  held: HeldSenders;
};
