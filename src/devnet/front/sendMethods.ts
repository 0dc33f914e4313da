import type { Hex } from "viem";
import type { FrontParts } from "./frontParts.js";
import type { Answer, MethodTable } from "./jsonRpc.js";
import { createSendRawTransactionSync } from "./sendRawTransactionSync.js";

/**
 * The methods that send a transaction into anvil's pool, admitted between the sequencer's steps.
 */
export function createSendMethods({
  upstream,
  sequencer,
  state,
}: Pick<FrontParts, "upstream" | "sequencer" | "state">): MethodTable {
  // Not while a block is mined exactly (the pool's other transactions set aside, dropped and sent
  // again): a transaction entering the pool then could be dropped with them.
  const admitted = async (request: Parameters<typeof upstream.forward>[0]) =>
    (await sequencer.admit(() => upstream.forward(request))) as Answer;
  const sendSync = createSendRawTransactionSync({
    send: (rawTx: Hex) =>
      admitted({ jsonrpc: "2.0", id: 0, method: "eth_sendRawTransaction", params: [rawTx] }),
    canonicalReceipt: (hash) => upstream.call("eth_getTransactionReceipt", [hash]),
    preconfirmedReceipt: (hash) => sequencer.preconfirmedReceipt(hash),
    missesFlashblock: () => state.faults.sendSyncMissesFlashblock,
  });
  return {
    eth_sendRawTransaction: ({ request }) => admitted(request),
    eth_sendRawTransactionSync: async ({ request, params }) => ({
      jsonrpc: "2.0",
      id: request.id ?? null,
      ...(await sendSync(params)),
    }),
  };
}
