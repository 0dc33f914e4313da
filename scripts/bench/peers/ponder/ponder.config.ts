import { createConfig } from "ponder";
import { parseAbi } from "viem";

/** What the bench measures against: set by scripts/bench/ponderBackfill.ts for each run. */
const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === "")
    throw new Error(`${name} is not set: run this app through npm run bench:peers`);
  return value;
};

export default createConfig({
  chains: { base: { id: Number(env("BENCH_CHAIN_ID")), rpc: env("BENCH_RPC_URL") } },
  // Ponder's default database is PGlite in .ponder/; the bench passes a Postgres URL for the Postgres rows.
  ...(process.env.BENCH_DATABASE_URL
    ? { database: { kind: "postgres" as const, connectionString: process.env.BENCH_DATABASE_URL } }
    : {}),
  contracts: {
    Token: {
      chain: "base",
      abi: parseAbi(["event Transfer(address indexed from, address indexed to, uint256 value)"]),
      address: env("BENCH_TOKEN") as `0x${string}`,
      startBlock: Number(env("BENCH_START_BLOCK")),
      endBlock: Number(env("BENCH_END_BLOCK")),
    },
  },
});
