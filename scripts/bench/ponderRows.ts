import { runPonderBackfill, type PonderFigures } from "./ponderBackfill.js";
import { preparePonderApp } from "./ponderApp.js";
import { providerCeiling, providerShapeText, providerSummary } from "./providerBackfill.js";
import { startProviderProxy, type ProviderCounts } from "./providerProxy.js";
import type { BenchLine } from "./results.js";
import { describeChain } from "./anvilBackfill.js";
import { startSavedAnvilChain, type ChainShape, type SavedChain } from "./savedAnvilChain.js";

/** Ponder's finality depth on chain 8453 (its utils/finality.ts: 30 for an unlisted chain). */
const PONDER_FINALITY_BLOCKS = 30;

/** One Ponder run of the bench, or why it could not run. */
export type PonderRow =
  | ({
      name: string;
      blocked?: undefined;
      provider?: ProviderCounts;
      ceilingLogsPerSecond?: number;
    } & PonderFigures)
  | { name: string; blocked: string };

/** What a Ponder row is compared with: flashindex's logs/s on the same chain (and proxy). */
export type Comparison = { flashindexLogsPerSecond: number; flashindexConfiguration: string };

/**
 * Mines empty blocks past the chain's last log so that every log is final to Ponder: it backfills
 * only to `head - finality` and hands the rest to its realtime sync, which is not what is measured.
 */
async function mineFinality(chain: SavedChain): Promise<void> {
  const answer = await fetch(chain.anvil.httpUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "anvil_mine",
      params: [`0x${(PONDER_FINALITY_BLOCKS + 1).toString(16)}`],
    }),
  });
  const body = (await answer.json()) as { error?: { message: string } };
  if (body.error !== undefined) throw new Error(`anvil_mine failed: ${body.error.message}`);
}

/**
 * Ponder (the pinned version, its default database) on the saved anvil chain of `logs` Transfer
 * logs in `shape`, directly against anvil or, with `throughProxy`, through the provider-shaped proxy with its
 * default shape, as flashindex's rows are. A run that cannot install or finish is a blocked row
 * carrying the reason.
 */
export async function ponderRow(
  logs: number,
  shape: ChainShape,
  throughProxy: boolean,
): Promise<PonderRow> {
  const where = throughProxy ? "through a provider-shaped proxy" : "anvil end to end";
  const size = `saved ${shape} chain of ${logs.toLocaleString("en-US")} Transfer logs`;
  let app: ReturnType<typeof preparePonderApp>;
  try {
    app = preparePonderApp();
  } catch (error) {
    return { name: `Ponder, ${where}, ${size}`, blocked: (error as Error).message };
  }
  const label = `Ponder ${app.version} (its default database, PGlite; the app in scripts/bench/peers/ponder)`;
  const chain = await startSavedAnvilChain(logs, shape);
  const proxy = throughProxy ? await startProviderProxy(chain.anvil.httpUrl) : undefined;
  const name = `${label}, ${proxy === undefined ? where : `through ${providerShapeText(proxy.shape)}`}, ${describeChain(chain)}`;
  try {
    await mineFinality(chain);
    const figures = await runPonderBackfill({
      appDir: app.dir,
      chainId: 8453,
      rpcUrl: proxy?.url ?? chain.anvil.httpUrl,
      token: chain.token,
      startBlock: chain.deployBlock,
      endBlock: chain.head,
    });
    if (proxy === undefined) return { name, ...figures };
    return {
      name,
      ...figures,
      provider: { ...proxy.counts },
      ceilingLogsPerSecond: providerCeiling(proxy.shape, logs, chain.head - chain.deployBlock),
    };
  } catch (error) {
    return { name, blocked: (error as Error).message };
  } finally {
    await proxy?.close();
    await chain.anvil.stop();
  }
}

/** A Ponder row as a line of the bench's table, with flashindex's ratio to it when there is one. */
export function ponderLine(row: PonderRow, comparison?: Comparison): BenchLine {
  if (row.blocked !== undefined)
    return {
      measurement: `${row.name}: blocked: ${row.blocked.replaceAll("\n", " ").replaceAll("|", "/")}`,
      logs: 0,
    };
  const seconds = row.durationMs / 1_000;
  const logsPerSecond = row.logs / seconds;
  const parts = [`${row.name}, wall time to ready (every log indexed, indexes built)`];
  if (row.provider !== undefined && row.ceilingLogsPerSecond !== undefined)
    parts.push(
      providerSummary({
        ...row,
        provider: row.provider,
        ceilingLogsPerSecond: row.ceilingLogsPerSecond,
      }),
    );
  if (comparison !== undefined)
    parts.push(
      `flashindex (${comparison.flashindexConfiguration}) ${(comparison.flashindexLogsPerSecond / logsPerSecond).toFixed(1)}× its logs/s`,
    );
  return {
    measurement: parts.join("; "),
    logs: row.logs,
    seconds,
    logsPerSecond,
    peakRssMb: row.peakRssMb,
    cpuSeconds: row.cpuSeconds,
  };
}
