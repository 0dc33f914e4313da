import type { Hex } from "viem";
import type { FrontParts } from "./frontParts.js";
import { ok, type Answer, type MethodTable } from "./jsonRpc.js";
import { createSendRawTransactionSync } from "./sendRawTransactionSync.js";

/**
 * The methods that send a transaction into anvil's pool, admitted between the sequencer's steps.
 */
export function createSendMethods({
  upstream,
  sequencer,
  state,
  held,
}: Pick<FrontParts, "upstream" | "sequencer" | "state" | "held">): MethodTable {
  // Not while a block is mined exactly (the pool's other transactions set aside, dropped and sent
  // again): a transaction entering the pool then could be dropped with them.
  const admitted = async (request: Parameters<typeof upstream.forward>[0]) => {
    const answer = (await sequencer.admit(() => upstream.forward(request))) as Answer;
    if (typeof answer.result === "string") sequencer.arrived(answer.result);
    return answer;
  };
  // A held sender's transaction is answered with its hash and kept apart (heldSenders.ts).
  const heldHash = (raw: unknown) =>
    typeof raw === "string" && /^0x[0-9a-fA-F]+$/.test(raw) ? held.keep(raw as Hex) : undefined;
  const sendSync = createSendRawTransactionSync({
    send: async (rawTx: Hex) => {
      const hash = await heldHash(rawTx);
      if (hash !== undefined) return { result: hash };
      return admitted({ jsonrpc: "2.0", id: 0, method: "eth_sendRawTransaction", params: [rawTx] });
    },
    canonicalReceipt: (hash) => upstream.call("eth_getTransactionReceipt", [hash]),
    preconfirmedReceipt: (hash) => sequencer.preconfirmedReceipt(hash),
    nextFlashblock: () => sequencer.nextFlashblock(),
    missesFlashblock: () => state.faults.sendSyncMissesFlashblock,
  });
  return {
    eth_sendRawTransaction: async ({ request, params }) => {
      const hash = await heldHash(params[0]);
      return hash !== undefined ? ok(request, hash) : admitted(request);
    },
    eth_sendRawTransactionSync: async ({ request, params }) => ({
      jsonrpc: "2.0",
      id: request.id ?? null,
      ...(await sendSync(params)),
    }),
  };
}
