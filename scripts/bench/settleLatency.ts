import { resolve } from "node:path";
import type { ClientEvmSigner } from "@x402/evm";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { readTokenDomain } from "../../src/authorization/eip3009.js";
import { startDevnet } from "../../src/devnet/startDevnet.js";
import {
  referencePaymentBody,
  startReferenceFacilitator,
  type ExactOffer,
} from "./x402Reference.js";

/**
 * Settle latency of an x402 facilitator: from POST /settle to its answer, as a resource server
 * waits for it (issue 30's goal for flashindex: p50 ≤ 400 ms and p99 ≤ 1 s pre-confirmed, at
 * least 5× faster than the reference at p50, 20 settles a second through one relayer).
 * measureSettleLatency works against any facilitator URL: every payment is signed by the
 * reference client before the clock starts, then sent `concurrency` at a time.
 *
 * Run: `npx tsx scripts/bench/settleLatency.ts` (or the built dist/scripts/bench/settleLatency.js)
 * measures the reference facilitator (x402Facilitator + @x402/evm's exact scheme) on a fresh devnet
 * (2 s blocks, 200 ms flashblocks) and prints one JSON object. BENCH_SETTLE_PAYMENTS (default 50)
 * and BENCH_SETTLE_CONCURRENCY (default 1: the reference takes each settlement's nonce from the
 * pending count, so concurrent settles from its one relayer collide) set the load.
 */

/** Where a settle's answer landed: figures of one run. */
export type SettleLatency = {
  payments: number;
  concurrency: number;
  /** Answers with `success: true`. */
  settled: number;
  /** Distinct transactions among them: fewer than `settled` means a payment was answered with another's. */
  transactions: number;
  /** Refusals and failures by errorReason (`http <status>` when the body was not a settle answer). */
  failures: Record<string, number>;
  /** Percentiles of the settled payments' POST /settle → answer; failures are counted apart. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Settled payments per second of wall time, first request to last answer. */
  settledPerSecond: number;
};

export type SettleLatencyOptions = {
  facilitatorUrl: string;
  offer: ExactOffer;
  /** Payers, used in turn; each must hold `payments / payers.length` times the offer's amount. */
  payers: readonly ClientEvmSigner[];
  payments: number;
  /** Requests in flight at most. */
  concurrency: number;
  /**
   * Open loop: request i is sent at i / perSecond seconds after the first (or later, when
   * `concurrency` requests are still waiting), however long earlier answers take. Without it,
   * each worker sends its next request when its last answer came.
   */
  perSecond?: number | undefined;
  /** Extra request headers (e.g. `authorization: Bearer …` for a facilitator that wants one). */
  headers?: Record<string, string>;
  /** Told of each settled payment: its transaction and its POST /settle → answer in ms. */
  onSettled?: ((transaction: string, ms: number) => void) | undefined;
};

const now = () => performance.now();

/** A fetch that got no answer, named by its cause's code (`connection ECONNRESET`). */
function connectionFailure(error: unknown): string {
  const cause =
    error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  return `connection ${typeof cause?.code === "string" ? cause.code : "failed"}`;
}

/** The `p`th percentile (0..100) of `sorted` (ascending), nearest rank below; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Settles `payments` payments through `facilitatorUrl` and times each POST /settle → answer. */
export async function measureSettleLatency(options: SettleLatencyOptions): Promise<SettleLatency> {
  const bodies: string[] = [];
  for (let i = 0; i < options.payments; i++)
    bodies.push(
      JSON.stringify(
        await referencePaymentBody(options.payers[i % options.payers.length]!, options.offer),
      ),
    );
  const latencies: number[] = [];
  const transactions = new Set<string>();
  const failures: Record<string, number> = {};
  let settled = 0;
  let next = 0;
  const started = now();

  async function worker(): Promise<void> {
    while (next < bodies.length) {
      const index = next++;
      const body = bodies[index]!;
      if (options.perSecond !== undefined) {
        const due = started + (index * 1_000) / options.perSecond;
        if (due > now()) await new Promise((resolve) => setTimeout(resolve, due - now()));
      }
      const sentAt = now();
      // A facilitator past its connection limit closes the socket: a failure, not the bench's end.
      const response = await fetch(`${options.facilitatorUrl}/settle`, {
        method: "POST",
        headers: { "content-type": "application/json", ...options.headers },
        body,
      }).catch((error: unknown) => connectionFailure(error));
      if (typeof response === "string") {
        failures[response] = (failures[response] ?? 0) + 1;
        continue;
      }
      const answer = (await response.json().catch(() => undefined)) as
        { success?: unknown; transaction?: unknown; errorReason?: unknown } | undefined;
      // Percentiles of settled payments only: a refusal or a reset socket answers fast and would
      // flatter them (the first pool run's p50 was 47 ms with 57% of its payments reset).
      if (answer?.success === true && typeof answer.transaction === "string") {
        const ms = now() - sentAt;
        latencies.push(ms);
        settled++;
        transactions.add(answer.transaction.toLowerCase());
        options.onSettled?.(answer.transaction.toLowerCase(), ms);
      } else {
        const reason =
          typeof answer?.errorReason === "string" ? answer.errorReason : `http ${response.status}`;
        failures[reason] = (failures[reason] ?? 0) + 1;
      }
    }
  }

  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));
  const wallSeconds = (now() - started) / 1_000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => percentile(latencies, p);
  return {
    payments: options.payments,
    concurrency: options.concurrency,
    settled,
    transactions: transactions.size,
    failures,
    p50Ms: pct(50),
    p99Ms: pct(99),
    maxMs: latencies.at(-1) ?? Number.NaN,
    settledPerSecond: settled / wallSeconds,
  };
}

/** The devnet's buyers (funded with test USDC) and the key the reference relays with. */
const BUYER_KEY_INDEXES = [1, 2, 3, 4, 5];
const REFERENCE_RELAYER_KEY_INDEX = 9;
const SHOP = "0x000000000000000000000000000000000000c0de";
/** One cent of a 6-decimals token. */
const AMOUNT = 10_000n;

async function main(): Promise<void> {
  const payments = Number(process.env.BENCH_SETTLE_PAYMENTS ?? 50);
  const concurrency = Number(process.env.BENCH_SETTLE_CONCURRENCY ?? 1);
  const devnet = await startDevnet({ blockTimeMs: 2_000, flashblockIntervalMs: 200 });
  try {
    const domain = await readTokenDomain(
      createPublicClient({ transport: http(devnet.httpUrl) }),
      devnet.token,
    );
    const offer: ExactOffer = {
      chainId: devnet.chainId,
      token: devnet.token,
      name: domain.name,
      version: domain.version,
      payTo: SHOP,
      amount: AMOUNT,
    };
    const reference = await startReferenceFacilitator({
      rpcUrl: devnet.httpUrl,
      chainId: devnet.chainId,
      privateKey: devnet.privateKeys[REFERENCE_RELAYER_KEY_INDEX]!,
    });
    try {
      const payers = BUYER_KEY_INDEXES.map((index) =>
        privateKeyToAccount(devnet.privateKeys[index]!),
      );
      const figures = await measureSettleLatency({
        facilitatorUrl: reference.url,
        offer,
        payers,
        payments,
        concurrency,
      });
      console.log(
        JSON.stringify({
          facilitator: "reference (@x402/core x402Facilitator + @x402/evm exact)",
          ...figures,
        }),
      );
    } finally {
      await reference.close();
    }
  } finally {
    await devnet.stop();
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename)
  await main();
