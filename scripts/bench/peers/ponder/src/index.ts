import { ponder } from "ponder:registry";
import { transfers } from "ponder:schema";

ponder.on("Token:Transfer", async ({ event, context }) => {
  await context.db.insert(transfers).values({
    id: event.id,
    blockNumber: event.block.number,
    logIndex: event.log.logIndex,
    transactionHash: event.transaction.hash,
    from: event.args.from,
    to: event.args.to,
    value: event.args.value,
  });
});
