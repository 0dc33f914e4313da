import { hostname } from "node:os";
import { isAddressEqual, keccak256, type Hex, type LocalAccount } from "viem";
import type { Logger } from "../ops/logger.js";
import { gapFillerHolder, isFree, ownerIsGone } from "../store/nonceBook.js";
import type { CaptureIntent } from "../store/orderStates.js";
import type { Store } from "../store/store.js";
import type { RelayerNonces } from "./relayerNonces.js";

/** A plain transfer's gas: what a nonce-gap filler costs. */
const SELF_TRANSFER_GAS = 21_000n;

/** What a node made of a raw transaction (captureRelay.ts send). */
export type SendOutcome = "accepted" | "known" | "nonce_used" | "nonce_taken";

export type RelayerGapsDeps = {
  store: Store;
  relayerNonces: RelayerNonces;
  chainId: number;
  /** How long a capture waits unconfirmed before its gap counts (captureRelay.ts CAPTURE_REPLACE_AFTER_MS). */
  replaceAfterMs: number;
  logger: Logger;
  fees: () => Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }>;
  send: (rawTx: Hex) => Promise<SendOutcome>;
};

/** The capture driver's care of a relayer's nonce sequence: holes filled, a gone process's reservations taken back. */
export function createRelayerGaps(deps: RelayerGapsDeps) {
  const { store, relayerNonces, logger } = deps;
  const { owner } = relayerNonces;
  const host = hostname();

  return {
    /**
     * A relayer nonce below the lowest live capture that the book holds free (released, or a
     * reservation taken back) leaves every capture behind it stuck for good, and a replacement on
     * the same nonce cannot help. Once such a capture has waited `replaceAfterMs`, each such nonce
     * is reserved and taken by a 0-value transfer to the relayer itself: no authorization is sent
     * twice to fill it, and a nonce the book gives to a cancel, another process or a send in
     * flight is never overwritten. `count`: the node's pending count. Returns how many were filled.
     */
    async fill(
      account: LocalAccount,
      live: CaptureIntent[],
      count: number,
      now: number,
    ): Promise<number> {
      const mine = live.filter((c) => isAddressEqual(c.relayer, account.address));
      const waiting = mine.filter(
        (c) => c.firstBroadcastAt !== null && now - c.firstBroadcastAt >= deps.replaceAfterMs,
      );
      if (waiting.length === 0) return 0;
      const lowest = Math.min(...waiting.map((c) => c.relayerNonce));
      const entries = await store.nonces.entries(account.address, count);
      const held = entries.filter((e) => e.nonce < lowest && !isFree(e, now)).length;
      if (count + held >= lowest) return 0;
      let filled = 0;
      for (let index = 0; ; index++) {
        const holder = gapFillerHolder(owner, now, index);
        const nonce = await relayerNonces.reserve(account.address, holder);
        if (nonce >= lowest) {
          await relayerNonces.release(account.address, nonce, holder);
          return filled;
        }
        const rawTx = await account.signTransaction({
          type: "eip1559",
          chainId: deps.chainId,
          to: account.address,
          value: 0n,
          gas: SELF_TRANSFER_GAS,
          nonce,
          ...(await deps.fees()),
        });
        await relayerNonces.mark(account.address, nonce, holder, "signed", keccak256(rawTx));
        const outcome = await deps.send(rawTx).catch(async (error: unknown) => {
          await relayerNonces.release(account.address, nonce, holder);
          throw error;
        });
        // Taken meanwhile by a transaction outside the book: not ours to overwrite. The entry stays
        // signed, and the book hands the nonce out again after NONCE_RESERVATION_TTL_MS.
        if (outcome !== "accepted" && outcome !== "known") return filled;
        await relayerNonces.mark(account.address, nonce, holder, "broadcast", keccak256(rawTx));
        filled++;
        logger.warn({
          msg: "Filled relayer nonce gap",
          relayer: account.address,
          relayer_nonce: nonce,
          blocked_from: lowest,
        });
      }
    },

    /**
     * Reservations of a process on this host that is gone (kill -9 between reserving and signing,
     * or a cancel killed before its send) go back to the book at once instead of after
     * NONCE_RESERVATION_TTL_MS, so the next transaction takes the nonce and no gap is left. A
     * capture's signed nonce is not touched: its stored intent is sent or abandoned by the driver.
     */
    async releaseGone(account: LocalAccount, count: number, now: number): Promise<void> {
      for (const entry of await store.nonces.entries(account.address, count)) {
        const unsent =
          entry.state === "reserved" ||
          (entry.state === "signed" && !entry.holder.startsWith("capture:"));
        if (!unsent || entry.owner === owner || !ownerIsGone(entry.owner, host, isAlive)) continue;
        if (
          await store.nonces.release(
            { relayer: account.address, nonce: entry.nonce, holder: entry.holder },
            now,
          )
        )
          logger.warn({
            msg: "Released nonce of a gone process",
            relayer: account.address,
            relayer_nonce: entry.nonce,
            holder: entry.holder,
            owner: entry.owner,
          });
      }
    },
  };
}

/** Whether a process of this host runs under `pid` (signal 0 checks without sending; EPERM: it runs as another user). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
