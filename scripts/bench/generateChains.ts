import { CHAIN_SHAPES, startSavedAnvilChain, type ChainShape } from "./savedAnvilChain.js";

/**
 * Generates (or checks that it can reload) saved anvil chains ahead of a bench run, which would
 * otherwise generate them on first use: `node dist/scripts/bench/generateChains.js dense:200000 base-mix:1000000`.
 */
const wanted = process.argv.slice(2).map((arg) => {
  const [shape, logs] = arg.split(":");
  if (!CHAIN_SHAPES.includes(shape as ChainShape) || !/^\d+$/.test(logs ?? "")) {
    throw new Error(`"${arg}" is not SHAPE:LOGS with SHAPE one of ${CHAIN_SHAPES.join(", ")}`);
  }
  return { shape: shape as ChainShape, logs: Number(logs) };
});
for (const { shape, logs } of wanted) {
  const started = performance.now();
  const { anvil, ...meta } = await startSavedAnvilChain(logs, shape);
  await anvil.stop();
  console.log(
    JSON.stringify({ ...meta, seconds: Math.round((performance.now() - started) / 1_000) }),
  );
}
