import { keccak256, type Hex, type LocalAccount } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import { BaseError, walkCauses } from "../errors/base.js";
import { CaptureFundsError } from "../errors/capture.js";
import { captureHolder } from "../store/nonceBook.js";
import type { CaptureTransaction, Order } from "../store/orderStates.js";
import { parseBaseFee, parseQuantity, rpc } from "./cancelRelay.js";
import type { SendOutcome } from "./relayerGaps.js";
import type { RelayerNonces } from "./relayerNonces.js";

/** maxFeePerGas = base fee × this + priority fee: room for the base fee to rise for a few blocks. */
const BASE_FEE_MULTIPLIER = 2n;
/**
 * Fees read this recently are used again: a stream of settles reads them once a second, not twice
 * per payment. The base fee moves once a block (2 s on Base) and BASE_FEE_MULTIPLIER leaves room.
 */
const FEES_FRESH_MS = 1_000;

/** An EIP-1559 fee pair, in wei per gas. */
export type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };

/** The capture relay's hand on the node: fees read, capture transactions signed, raw bytes sent. */
export type CaptureTransactions = {
  /** The fees a new transaction is signed with now. */
  fees: () => Promise<Fees>;
  /**
   * Signs `data` to the order's token from `account` with `nonce`, or with one reserved now in
   * the nonce book for this order (given back to the book if signing fails) at or above `floor`,
   * the node's pending count when the caller read it already.
   */
  sign: (
    account: LocalAccount,
    order: Order,
    data: Hex,
    gas: bigint,
    nonce: number | undefined,
    fee: Fees,
    floor?: number,
  ) => Promise<CaptureTransaction>;
  /** Hands raw bytes to the node and says what it made of them; a relayer short of gas throws CaptureFundsError. */
  send: (rawTx: Hex) => Promise<SendOutcome>;
};

/** Signing and sending for the capture relay (captureRelay.ts). */
export function createCaptureTransactions(deps: {
  client: RpcClient;
  chainId: number;
  relayerNonces: RelayerNonces;
}): CaptureTransactions {
  const { client, relayerNonces } = deps;
  /** The last read of the fees (one read shared by the settles that ask while it runs); a failed one is dropped. */
  let lastFees: { at: number; fees: Promise<Fees> } | undefined;

  async function readFees(): Promise<Fees> {
    const [latest, priority] = await rpc("reading fees", () =>
      Promise.all([
        client.request("eth_getBlockByNumber", ["latest", false], parseBaseFee),
        client.request("eth_maxPriorityFeePerGas", [], parseQuantity),
      ]),
    );
    return {
      maxFeePerGas: latest.baseFeePerGas * BASE_FEE_MULTIPLIER + priority,
      maxPriorityFeePerGas: priority,
    };
  }

  return {
    fees() {
      const now = Date.now();
      if (lastFees !== undefined && now - lastFees.at < FEES_FRESH_MS) return lastFees.fees;
      const read = { at: now, fees: readFees() };
      lastFees = read;
      read.fees.catch(() => {
        if (lastFees === read) lastFees = undefined;
      });
      return read.fees;
    },

    async sign(account, order, data, gas, nonce, fee, floor) {
      const relayerNonce =
        nonce ?? (await relayerNonces.reserve(account.address, captureHolder(order.id), floor));
      try {
        const rawTx = await account.signTransaction({
          type: "eip1559",
          chainId: deps.chainId,
          to: order.token,
          data,
          gas,
          nonce: relayerNonce,
          ...fee,
        });
        return { relayer: account.address, relayerNonce, txHash: keccak256(rawTx), rawTx, ...fee };
      } catch (error) {
        if (nonce === undefined)
          await relayerNonces.release(account.address, relayerNonce, captureHolder(order.id));
        throw error;
      }
    },

    async send(rawTx) {
      try {
        await rpc("sending the capture", () => client.request("eth_sendRawTransaction", [rawTx]));
        return "accepted";
      } catch (error) {
        return sendRefusal(error);
      }
    },
  };
}

/**
 * What a node's refusal of raw bytes means; rethrows what it does not recognise.
 * Note: anvil answers a re-sent transaction with code -32003 "transaction already imported",
 * which the RPC client takes for a temporary failure: the node's words decide, whatever the class.
 */
export function sendRefusal(error: unknown): SendOutcome {
  const message = messagesOf(error);
  if (
    /already known|known transaction|already imported|already exists|already in (?:the )?pool/i.test(
      message,
    )
  )
    return "known";
  if (/nonce too low|nonce has already been used|old nonce/i.test(message)) return "nonce_used";
  if (/underpriced|replacement/i.test(message)) return "nonce_taken";
  if (/insufficient funds/i.test(message))
    throw new CaptureFundsError(
      `the relayer lacks the ETH for gas (${message}); nothing was sent`,
      { cause: error },
    );
  throw error;
}

/** The messages of an error and of its causes, joined: a node's reason may sit under a retry wrapper. */
function messagesOf(error: unknown): string {
  const parts: string[] = [];
  walkCauses(error, (e) => {
    parts.push(e instanceof BaseError ? e.shortMessage : e.message);
    return parts.length >= 8;
  });
  return parts.join(" <- ");
}
