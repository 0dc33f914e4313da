import type { Upstream } from "./upstream.js";

/** One account's state as an eth_call state override: only what the pre-confirmed transactions changed. */
export type AccountOverride = {
  balance?: string;
  nonce?: string;
  code?: string;
  /** Storage slots to patch (the rest is read from the canonical state). */
  stateDiff?: Record<string, string>;
  /** The whole storage: only a caller's own override replaces it. */
  state?: Record<string, string>;
};

/** State overrides by lower-case address, as eth_call, eth_estimateGas and eth_simulateV1 take them. */
export type StateOverride = Record<string, AccountOverride>;

/** The pending block's environment, as a block override. */
export type BlockEnv = { number: string; time: string };

/** A transaction as the pool or a pending block carries it. */
export type PendingTransaction = Record<string, unknown> & {
  from: string;
  to: string | null;
  input: string;
  value: string;
  gas: string;
};

type PrestateAccount = {
  balance?: string;
  nonce?: number;
  code?: string;
  storage?: Record<string, string>;
};
/** geth's prestateTracer in diff mode: changed fields before and after (go-ethereum `eth/tracers/native/prestate.go`). */
type PrestateDiff = {
  pre?: Record<string, PrestateAccount>;
  post?: Record<string, PrestateAccount>;
};

const ZERO_WORD = `0x${"0".repeat(64)}`;

/**
 * The state after every pre-confirmed transaction, kept as overrides on the canonical head, so a
 * call at "pending" costs one execution, as on a Flashblocks node (base/base flashblocks
 * `pending_blocks.rs` keeps the state its flashblocks left). anvil's own "pending" re-executes its
 * whole pool on every call, which made each judgement of a payment cost a block's worth of
 * transactions.
 *
 * The values are absolute (a balance, a slot's word), not deltas: applied on a head that already
 * holds some of the transactions (a block mined while a call was on its way), they say the same.
 */
export function createPendingState(upstream: Upstream) {
  let overrides: StateOverride = {};
  /** A change under way (`becoming`): readers wait for it. */
  let updating: Promise<void> | undefined;

  /** `state` after `tx`, executed on top of it. */
  async function withTransaction(
    state: StateOverride,
    tx: PendingTransaction,
    env: BlockEnv,
  ): Promise<StateOverride> {
    const diff = await upstream.call<PrestateDiff>("debug_traceCall", [
      callOf(tx),
      "latest",
      {
        tracer: "prestateTracer",
        tracerConfig: { diffMode: true },
        stateOverrides: state,
        blockOverrides: env,
      },
    ]);
    return withDiff(state, diff);
  }

  return {
    /** The overrides now; a new object after every change, so a reader keeps a consistent one. */
    current: (): StateOverride => overrides,
    /**
     * `base` after each block's transactions, executed in order; nothing is kept until `set` (the
     * values are absolute: a transaction executed twice on the kept state would pay twice).
     */
    executed: async (
      blocks: ReadonlyArray<{ txs: readonly PendingTransaction[]; env: BlockEnv }>,
      base: StateOverride,
    ): Promise<StateOverride> => {
      let state = base;
      for (const block of blocks)
        for (const tx of block.txs) state = await withTransaction(state, tx, block.env);
      return state;
    },
    /** Keeps `state` as the pending state. */
    set: (state: StateOverride) => void (overrides = state),
    /**
     * Keeps `next` when it comes; readers (`settled`) wait for it from now. Rejects as `next` does,
     * the state then unchanged.
     */
    becoming(next: Promise<StateOverride>): Promise<void> {
      const done = next.then((state) => void (overrides = state));
      const tracked: Promise<void> = done
        .catch(() => undefined)
        .finally(() => {
          if (updating === tracked) updating = undefined;
        });
      updating = tracked;
      return done;
    },
    /** Resolves once no change is under way: what a reader sees then is whole. */
    settled: (): Promise<void> => updating ?? Promise.resolve(),
    /** Forgets every change: the canonical head holds them all, or the pending blocks are gone. */
    clear: () => void (overrides = {}),
  };
}

export type PendingState = ReturnType<typeof createPendingState>;

/** The call a pool transaction makes, with its fees so the sender pays as it will in its block. */
function callOf(tx: PendingTransaction): Record<string, unknown> {
  const call: Record<string, unknown> = {
    from: tx.from,
    input: tx.input,
    value: tx.value,
    gas: tx.gas,
  };
  if (tx.to !== null) call.to = tx.to;
  for (const key of [
    "gasPrice",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
    "accessList",
    "authorizationList",
  ])
    if (tx[key] !== undefined && tx[key] !== null) call[key] = tx[key];
  // A legacy transaction's gasPrice beside EIP-1559 fields is refused: keep the pair it was sent with.
  if (call.maxFeePerGas !== undefined) delete call.gasPrice;
  return call;
}

/**
 * `overrides` with one transaction's changes on top. A slot in `pre` but not in `post` was set to
 * zero: the tracer leaves zero words out of `post`. An account in `pre` alone only had slots
 * zeroed: accounts are not deleted since EIP-6780 outside their creating transaction.
 */
function withDiff(overrides: StateOverride, diff: PrestateDiff): StateOverride {
  const next: StateOverride = { ...overrides };
  const addresses = new Set([...Object.keys(diff.pre ?? {}), ...Object.keys(diff.post ?? {})]);
  for (const raw of addresses) {
    const address = raw.toLowerCase();
    const before = diff.pre?.[raw];
    const after = diff.post?.[raw];
    const account: AccountOverride = { ...next[address] };
    if (after?.balance !== undefined) account.balance = after.balance;
    if (after?.nonce !== undefined) account.nonce = `0x${after.nonce.toString(16)}`;
    if (after?.code !== undefined) account.code = after.code;
    const slots: Record<string, string> = {};
    for (const slot of Object.keys(before?.storage ?? {})) slots[slot] = ZERO_WORD;
    Object.assign(slots, after?.storage);
    if (Object.keys(slots).length > 0) account.stateDiff = { ...account.stateDiff, ...slots };
    next[address] = account;
  }
  return next;
}

/**
 * A caller's own overrides on top of the pending state: the caller's fields win; its `state`
 * replaces the account's storage, pending patches included.
 */
export function mergeOverrides(pending: StateOverride, caller: unknown): StateOverride {
  if (caller === undefined || caller === null || typeof caller !== "object") return pending;
  const merged: StateOverride = { ...pending };
  for (const [raw, value] of Object.entries(caller as Record<string, AccountOverride>)) {
    const address = raw.toLowerCase();
    const ours = merged[address] ?? {};
    const account: AccountOverride = { ...ours, ...value };
    if (value.state !== undefined) delete account.stateDiff;
    else if (value.stateDiff !== undefined)
      account.stateDiff = { ...ours.stateDiff, ...value.stateDiff };
    merged[address] = account;
  }
  return merged;
}

/** The word in `slot` of an account's pending state, if the pending state set it. */
export function overriddenSlot(account: AccountOverride, slot: string): string | undefined {
  if (!/^0x[0-9a-fA-F]{1,64}$/.test(slot)) return undefined;
  return account.stateDiff?.[`0x${slot.slice(2).toLowerCase().padStart(64, "0")}`];
}
