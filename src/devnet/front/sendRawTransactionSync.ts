import { keccak256, type Hex } from "viem";

/**
 * Longest wait of eth_sendRawTransactionSync: Base's node caps the caller's timeout at 6,000 ms
 * (base/base crates/client/flashblocks/src/rpc/eth.rs).
 */
export const SEND_SYNC_MAX_TIMEOUT_MS = 6_000;
/**
 * How often it asks anvil for the canonical receipt: a node learns of its blocks without asking
 * itself, and asking anvil every 10 ms for each waiting send made the stand-in anvil's busiest
 * caller (about four receipt reads per settle at 50 settles a second).
 */
const SEND_SYNC_CANONICAL_POLL_MS = 100;
/** EIP-7966: the error of a transaction taken into the pool but not processed within the timeout. */
export const SEND_SYNC_TIMEOUT_CODE = 4;

type Answer = { result?: unknown; error?: { code: number; message: string; data?: unknown } };

export type SendSyncDeps = {
  /** eth_sendRawTransaction as the front serves it (through the sequencer's admission). */
  send: (rawTx: Hex) => Promise<Answer>;
  /** The canonical receipt, or null. */
  canonicalReceipt: (hash: Hex) => Promise<unknown>;
  /** The receipt of the flashblock that pre-confirmed it, or undefined. */
  preconfirmedReceipt: (hash: Hex) => unknown;
  /** Resolves when the sequencer's next flashblock is out (a node hears of each as it comes). */
  nextFlashblock: () => Promise<void>;
  /**
   * The race of base/base#3826 as a fault: the node misses the flashblock that included the
   * transaction and answers only with a canonical receipt, or waits out its timeout.
   */
  missesFlashblock: () => boolean;
};

/**
 * eth_sendRawTransactionSync (EIP-7966, draft) with Base's semantics: sends the transaction, then
 * answers with the receipt of the first flashblock that includes it, or the canonical receipt,
 * whichever comes first, within the caller's timeout (params[1], ms) capped at
 * SEND_SYNC_MAX_TIMEOUT_MS; past it, error SEND_SYNC_TIMEOUT_CODE with the hash as data.
 */
export function createSendRawTransactionSync(
  deps: SendSyncDeps,
): (params: readonly unknown[]) => Promise<Answer> {
  return async (params) => {
    const rawTx = params[0];
    if (typeof rawTx !== "string" || !/^0x[0-9a-fA-F]+$/.test(rawTx))
      return { error: { code: -32602, message: "expected raw transaction bytes" } };
    const asked = params[1];
    if (
      asked !== undefined &&
      asked !== null &&
      (typeof asked !== "number" || !Number.isInteger(asked) || asked <= 0)
    )
      return {
        error: { code: -32602, message: "timeout must be a positive number of milliseconds" },
      };
    const timeoutMs = Math.min(
      (asked as number | undefined | null) ?? SEND_SYNC_MAX_TIMEOUT_MS,
      SEND_SYNC_MAX_TIMEOUT_MS,
    );
    const sent = await deps.send(rawTx as Hex);
    if (sent.error !== undefined) return sent;
    const hash = keccak256(rawTx as Hex);
    const deadline = Date.now() + timeoutMs;
    let canonicalAskedAt = Number.NEGATIVE_INFINITY;
    for (;;) {
      const preconfirmed = deps.missesFlashblock() ? undefined : deps.preconfirmedReceipt(hash);
      if (preconfirmed !== undefined) return { result: preconfirmed };
      const atDeadline = Date.now() >= deadline;
      if (atDeadline || Date.now() - canonicalAskedAt >= SEND_SYNC_CANONICAL_POLL_MS) {
        canonicalAskedAt = Date.now();
        const canonical = await deps.canonicalReceipt(hash);
        if (canonical !== null && canonical !== undefined) return { result: canonical };
      }
      if (atDeadline)
        return {
          error: {
            code: SEND_SYNC_TIMEOUT_CODE,
            message: `The transaction was added to the mempool but wasn't processed in ${timeoutMs}ms.`,
            data: hash,
          },
        };
      // Woken by the next flashblock, or in time to ask for the canonical receipt again.
      const wait = Math.max(1, Math.min(SEND_SYNC_CANONICAL_POLL_MS, deadline - Date.now()));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        deps.nextFlashblock(),
        new Promise((resolve) => (timer = setTimeout(resolve, wait))),
      ]);
      clearTimeout(timer);
    }
  };
}
