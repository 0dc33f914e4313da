import type { FrontParts } from "./frontParts.js";
import type { Answer, MethodTable } from "./jsonRpc.js";

/**
 * The methods that send a transaction into anvil's pool, admitted between the sequencer's steps.
 */
export function createSendMethods({ upstream, sequencer }: Pick<FrontParts, "upstream" | "sequencer">): MethodTable {
  return {
    // Not while a block is mined exactly (the pool's other transactions set aside, dropped and sent
    // again): a transaction entering the pool then could be dropped with them.
    eth_sendRawTransaction: async ({ request }) => (await sequencer.admit(() => upstream.forward(request))) as Answer,
  };
}
