/**
 * A process of its own that reserves nonces in a store's nonce book and prints them as one JSON
 * array: what the two-processes test runs twice at once. Arguments: the config's `database` as
 * JSON, the relayer, a holder prefix, how many.
 */
import { createMetrics } from "../../src/ops/metrics.js";
import { openStore } from "../../src/store/openStore.js";
import { testConfig } from "./context.js";

const [database, relayer, prefix, count] = process.argv.slice(2);
const config = testConfig({
  rpc: { http: ["http://127.0.0.1:9"] },
  database: JSON.parse(database!),
  logLevel: "silent",
});
const store = await openStore(config, { metrics: createMetrics({ defaultMetrics: false }) });
const nonces: number[] = [];
for (let i = 0; i < Number(count); i++)
  nonces.push(
    await store.nonces.reserve(
      {
        relayer: relayer as `0x${string}`,
        floor: 0,
        holder: `${prefix}:${i}`,
        owner: `${prefix}:${process.pid}`,
      },
      Date.now(),
    ),
  );
await store.close();
process.stdout.write(JSON.stringify(nonces));
