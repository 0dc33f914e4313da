import type { Hex } from "viem";
import type { FrontParts } from "./frontParts.js";
import type { Answer, MethodTable, Request } from "./jsonRpc.js";
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
  const admit = async (request: Request, raw: unknown) => {
    const { answer, kept } = await sequencer.admit(() => sendOrKeep(request, raw));
    if (typeof answer.result === "string" && !kept) sequencer.arrived(answer.result);
    return answer;
  };
  // One send at a time, in the order anvil takes them (sequencer.inOrder).
  const admitted = (request: Request, raw: unknown): Promise<Answer> =>
    sequencer.inOrder(() => admit(request, raw));
  // While a sender is held, anvil takes each transaction and names its sender (it recovers it
  // natively; recovering here cost the front about 2 ms of CPU per send, a fifth of a core at 100
  // sends a second); a held sender's is then taken out of anvil's pool and kept apart
  // (heldSenders.ts), within the admission, so no block is mined with it; no flashblock takes a
  // held sender's transaction.
  async function sendOrKeep(
    request: Request,
    raw: unknown,
  ): Promise<{ answer: Answer; kept: boolean }> {
    const answer = (await upstream.forward(request)) as Answer;
    if (!held.active() || typeof answer.result !== "string" || typeof raw !== "string")
      return { answer, kept: false };
    const tx = await upstream.call<{ from: string; nonce: string } | null>(
      "eth_getTransactionByHash",
      [answer.result],
    );
    if (tx === null || !held.keep(raw as Hex, tx.from, Number(tx.nonce)))
      return { answer, kept: false };
    await upstream.call("anvil_dropTransaction", [answer.result]);
    return { answer, kept: true };
  }
  const sendSync = createSendRawTransactionSync({
    send: (rawTx: Hex) =>
      admitted({ jsonrpc: "2.0", id: 0, method: "eth_sendRawTransaction", params: [rawTx] }, rawTx),
    canonicalReceipt: (hash) => upstream.call("eth_getTransactionReceipt", [hash]),
    preconfirmedReceipt: (hash) => sequencer.preconfirmedReceipt(hash),
    nextFlashblock: () => sequencer.nextFlashblock(),
    missesFlashblock: () => state.faults.sendSyncMissesFlashblock,
  });
  return {
    eth_sendRawTransaction: ({ request, params }) => admitted(request, params[0]),
    eth_sendRawTransactionSync: async ({ request, params }) => ({
      jsonrpc: "2.0",
      id: request.id ?? null,
      ...(await sendSync(params)),
    }),
  };
}
