import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DEFERRED_FOREIGN_KEYS } from "../../src/store/postgres/deferredForeignKeys.js";
import {
  answerText,
  createHttpTransport,
  type HttpTransport,
} from "../../src/chain/httpTransport.js";
import { createRpcClient } from "../../src/chain/rpcClient.js";
import { RpcTransportError } from "../../src/errors/rpc.js";
import { RetryableError } from "../../src/errors/base.js";
import { PAYMENT_TOPICS } from "../../src/rows/paymentEvents.js";
import { openStore } from "../../src/store/openStore.js";
import { backfill } from "../../src/sync/historical/backfill.js";
import { createSyncDeps } from "../../src/sync/syncDeps.js";
import type { ProcessMode } from "../../src/ops/threadSettings.js";
import {
  BACKENDS,
  stopFileBackends,
  type TableReader,
  type TestBackend,
} from "../helpers/backends.js";
import { testConfig, testDeps } from "../helpers/context.js";
import { startPaymentChain, type PaymentChain } from "../helpers/paymentChain.js";

let chain: PaymentChain;
let head: number;

beforeAll(async () => {
  chain = await startPaymentChain();
  await chain.addTraffic(6);
  head = Number(await chain.publicClient.getBlockNumber({ cacheTime: 0 }));
}, 60_000);
afterAll(async () => {
  await chain?.stop();
  await stopFileBackends();
});

/** Every log of the token over the whole chain, straight from the node, as comparable strings. */
async function directLogs(): Promise<string[]> {
  const logs = (await chain.publicClient.request({
    method: "eth_getLogs",
    params: [
      {
        fromBlock: "0x0",
        toBlock: `0x${head.toString(16)}`,
        address: chain.token,
        topics: [[...PAYMENT_TOPICS]],
      },
    ],
  } as never)) as Array<{
    blockHash: string;
    logIndex: string;
    transactionHash: string;
    topics: string[];
    data: string;
  }>;
  return logs
    .map((l) =>
      [l.blockHash, Number(l.logIndex), l.transactionHash, l.topics.join(","), l.data]
        .join("|")
        .toLowerCase(),
    )
    .sort();
}

async function storedLogs(db: TableReader): Promise<string[]> {
  const rows = await db.all<Record<string, string | number | null>>(
    "SELECT block_hash, log_index, tx_hash, topic0, topic1, topic2, topic3, data FROM logs",
  );
  return rows
    .map((r) =>
      [
        r.block_hash,
        r.log_index,
        r.tx_hash,
        [r.topic0, r.topic1, r.topic2, r.topic3].filter((t) => t !== null).join(","),
        r.data,
      ].join("|"),
    )
    .sort();
}

async function setUp(
  backend: TestBackend,
  options: {
    window?: number;
    concurrency?: number;
    database?: Record<string, unknown>;
    attribution?: boolean;
    wrap?: (inner: HttpTransport) => HttpTransport;
  } = {},
) {
  const config = testConfig({
    attribution: { enabled: options.attribution === true },
    rpc: {
      http: [chain.anvil.httpUrl],
      retry: { maxAttempts: 10, initialDelayMs: 1, maxDelayMs: 5 },
    },
    tokens: [{ address: chain.token, startBlock: chain.deployBlock }],
    backfill: { windowBlocks: options.window ?? 4, concurrency: options.concurrency ?? 3 },
    finality: { depth: 0 },
    database: options.database ?? (await backend.freshDatabase()),
  });
  const deps = testDeps(config);
  const inner = createHttpTransport({ timeoutMs: 10_000, maxResponseBytes: 50_000_000 });
  const client = createRpcClient(deps, { transport: options.wrap?.(inner) ?? inner });
  const store = await openStore(config, { metrics: deps.metrics });
  const db = await backend.reader(config.database);
  return {
    ...deps,
    client,
    db,
    store,
    // Every window is decoded on the decode thread, as in a long backfill (a short one decodes on its caller's thread).
    run: (
      bulkMinLogs?: number,
      options: {
        mode?: ProcessMode;
        writerThreadMinLogs?: number;
        writerThreadMinWindowLogs?: number;
        stageAttribution?: boolean;
      } = {},
    ) =>
      backfill(
        createSyncDeps({ ...deps, client }, store),
        { to: head, finalized: head },
        {
          decodeThreadAfterLogs: 0,
          ...options,
          ...(bulkMinLogs === undefined ? {} : { bulkMinLogs, writerThread: true }),
        },
      ),
    close: async () => {
      await store.close();
      await db.close();
    },
  };
}

/** A transport that runs `before` when the `n`th eth_getLogs is asked, then asks it (unless `before` threw). */
const beforeWindow =
  (n: number, before: () => Promise<void>) =>
  (inner: HttpTransport): HttpTransport => {
    let windows = 0;
    return async (url, body, signal) => {
      if (getLogsRange(body) !== undefined && ++windows === n) await before();
      return inner(url, body, signal);
    };
  };

/** The one number a query answers (a COUNT), on either backend. */
const count = async (db: TableReader, sql: string) =>
  Number(Object.values((await db.all(sql))[0]!)[0]);

/** The block range an eth_getLogs body asks for, or undefined for other methods. */
function getLogsRange(body: string): { from: number; to: number; id: number } | undefined {
  const request = JSON.parse(body) as {
    id: number;
    method?: string;
    params?: Array<{ fromBlock: string; toBlock: string }>;
  };
  if (request.method !== "eth_getLogs") return undefined;
  return {
    from: Number(request.params![0]!.fromBlock),
    to: Number(request.params![0]!.toBlock),
    id: request.id,
  };
}

describe.each(BACKENDS)("backfill() on $name", (backend) => {
  test("stores exactly what a direct eth_getLogs of the whole range returns, row for row", async () => {
    const { db, run, close } = await setUp(backend);
    const summary = await run();
    expect(summary.logs).toBeGreaterThan(40);
    expect(await storedLogs(db)).toEqual(await directLogs());
    const ranges = await db.all("SELECT from_block, to_block FROM synced_ranges");
    expect(ranges).toEqual([{ from_block: chain.deployBlock, to_block: head }]);
    await close();
  });

  test("a backfill into an empty store defers the reader indexes from its start; one that proves dense moves to the writer thread", async () => {
    const { db, run, store, lines, close } = await setUp(backend, { window: 2, concurrency: 2 });
    const opened: boolean[] = [];
    const open = store.openWindowWriter;
    store.openWindowWriter = (options) => {
      opened.push(options.bulk);
      return open(options);
    };
    const summary = await run(undefined, { writerThreadMinLogs: 10 });
    expect(summary.logs).toBeGreaterThan(40);
    expect(
      lines.find((l) => l.msg === "Deferred reader indexes to the end of the backfill"),
    ).toMatchObject({ logs: 0, stored_before: 0 });
    expect(lines.find((l) => l.msg === "Built reader indexes")?.indexes).toContain(
      "transfers_by_from",
    );
    // A short range starts on the main thread; past 10 fetched logs, the rest goes to the writer thread.
    expect(opened).toEqual([false, true]);
    expect(await storedLogs(db)).toEqual(await directLogs());
    await close();
  });

  test("a window too large for the main thread moves the rest to the writer thread before the log count would", async () => {
    const { db, run, store, close } = await setUp(backend, { window: 2, concurrency: 1 });
    const opened: boolean[] = [];
    const open = store.openWindowWriter;
    store.openWindowWriter = (options) => {
      opened.push(options.bulk);
      return open(options);
    };
    // Far below the log count that would switch; a window of two logs is "too large" here.
    await run(undefined, { writerThreadMinLogs: 1_000_000, writerThreadMinWindowLogs: 2 });
    expect(opened).toEqual([false, true]);
    expect(await storedLogs(db)).toEqual(await directLogs());
    await close();
  });

  test("decodes transfers, captures and cancels into the views", async () => {
    const { db, run, close } = await setUp(backend, { window: 1_999 });
    await run();
    const states = await db.all(
      "SELECT state, COUNT(*) AS n FROM authorization_states GROUP BY state ORDER BY state",
    );
    expect(states).toEqual([
      { state: "canceled", n: 6 },
      { state: "captured", n: 6 },
    ]);
    const captured = await db.all(
      "SELECT captured_value FROM authorization_states WHERE state = 'captured' ORDER BY block_number",
    );
    expect(captured.map((c) => (c as { captured_value: string }).captured_value)).toEqual([
      "1000000",
      "1000001",
      "1000002",
      "1000003",
      "1000004",
      "1000005",
    ]);
    await close();
  });

  test("a second run over an indexed range fetches nothing and stores nothing", async () => {
    const first = await setUp(backend);
    await first.run();
    await first.close();
    let getLogsCalls = 0;
    const second = await setUp(backend, {
      database: { ...first.config.database },
      wrap: (inner) => (url, body, signal) => {
        if (getLogsRange(body) !== undefined) getLogsCalls++;
        return inner(url, body, signal);
      },
    });
    const summary = await second.run();
    expect(summary.windows).toBe(0);
    expect(getLogsCalls).toBe(0);
    expect(await storedLogs(second.db)).toEqual(await directLogs());
    await second.close();
  });

  test("splits windows on provider range errors, ignoring a suggestion equal to the failed range", async () => {
    const seen: Array<{ from: number; to: number }> = [];
    const { db, run, metrics, close } = await setUp(backend, {
      window: 8,
      wrap: (inner) => async (url, body, signal) => {
        const range = getLogsRange(body);
        if (range !== undefined) {
          seen.push(range);
          const size = range.to - range.from + 1;
          if (size > 2) {
            // Note: one Base node suggested the very range that failed; the splitter must not loop on it.
            const message =
              size % 2 === 0
                ? `query returned more than 10000 results. Try with this block range [0x${range.from.toString(16)}, 0x${range.to.toString(16)}].`
                : "block range too large";
            return JSON.stringify({
              jsonrpc: "2.0",
              id: range.id,
              error: { code: -32005, message },
            });
          }
        }
        return inner(url, body, signal);
      },
    });
    await run();
    expect(await storedLogs(db)).toEqual(await directLogs());
    const identical = seen.filter(
      (a, i) => seen.findIndex((b) => b.from === a.from && b.to === a.to) !== i,
    );
    expect(identical).toEqual([]);
    expect((await metrics.backfillWindowBlocks.get()).values[0]?.value).toBeLessThanOrEqual(2);
    await close();
  });

  test("without staging (the daemon), a bulk load's attribution is in place as its windows commit", async () => {
    const seenDuring: number[] = [];
    const daemon = await setUp(backend, {
      window: 2,
      concurrency: 1,
      attribution: true,
      wrap: beforeWindow(
        6,
        async () =>
          void seenDuring.push(await count(daemon.db, "SELECT COUNT(*) FROM transactions")),
      ),
    });
    await daemon.run(1);
    expect(
      daemon.lines.some((l) => l.msg === "Deferred reader indexes to the end of the backfill"),
    ).toBe(true);
    // Five windows committed: their transactions are readable before the load ends.
    expect(seenDuring[0]).toBeGreaterThan(0);
    expect(daemon.lines.some((l) => l.msg === "Moved staged attribution into place")).toBe(false);
    expect(await count(daemon.db, "SELECT COUNT(*) FROM transactions")).toBe(
      await count(daemon.db, "SELECT COUNT(DISTINCT tx_hash) FROM logs"),
    );
    await daemon.close();
  });

  test("a damaged or failed batch of transactions is asked again: the attribution stored equals a clean run's", async () => {
    const attribution = async (db: TableReader) => ({
      transactions: await db.all(
        "SELECT tx_hash, from_address, to_address, selector, input_bytes, attribution, schema_id FROM transactions ORDER BY tx_hash",
      ),
      codes: await db.all("SELECT * FROM attribution_codes ORDER BY tx_hash, op_index, position"),
    });
    const clean = await setUp(backend, { attribution: true });
    await clean.run();
    let batches = 0;
    const faults: string[] = [];
    const faulty = await setUp(backend, {
      attribution: true,
      wrap: (inner) => async (url, body, signal) => {
        if (!body.startsWith("[") || !body.includes("eth_getTransactionByHash"))
          return inner(url, body, signal);
        const calls = JSON.parse(body) as Array<{ id: number; params: [string] }>;
        batches++;
        if (batches === 1) {
          faults.push("invalid JSON");
          return "[{";
        }
        if (batches === 2) {
          faults.push("node error");
          return JSON.stringify({
            jsonrpc: "2.0",
            id: null,
            error: { code: -32603, message: "internal error" },
          });
        }
        if (batches === 3) {
          // Another transaction than the one asked for.
          faults.push("other transaction");
          const answer = JSON.parse(answerText(await inner(url, body, signal))) as Array<{
            id: number;
            result: { hash: string } | null;
          }>;
          const first = answer.find((item) => item.id === calls[0]!.id)!;
          if (first.result !== null) first.result.hash = `0x${"ee".repeat(32)}`;
          return JSON.stringify(answer);
        }
        return inner(url, body, signal);
      },
    });
    await faulty.run();
    expect(faults).toEqual(["invalid JSON", "node error", "other transaction"]);
    const expected = await attribution(clean.db);
    expect(expected.transactions.length).toBeGreaterThan(10);
    expect(await attribution(faulty.db)).toEqual(expected);
    const retried = faulty.lines
      .filter((l) => l.msg === "Retrying RPC request" && l.method === "eth_getTransactionByHash")
      .map((l) => String(l.error));
    expect(retried).toEqual([
      expect.stringMatching(/answered with invalid JSON/),
      expect.stringMatching(/internal error/),
      expect.stringMatching(/answered transaction 0xeeee/),
    ]);
    await clean.close();
    await faulty.close();
  });

  test("retries transient faults and garbage answers, and rejects logs outside the filter", async () => {
    let n = 0;
    // Answers that hold logs are counted apart: every third of them gets foreign logs, however the
    // windows and the other requests happen to interleave (counting all requests could miss them all).
    let withLogs = 0;
    const { db, run, metrics, close } = await setUp(backend, {
      wrap: (inner) => async (url, body, signal) => {
        const range = getLogsRange(body);
        n++;
        if (range === undefined) return inner(url, body, signal);
        if (n % 5 === 0) throw new RpcTransportError("connection reset (injected)");
        if (n % 7 === 0)
          return '{"jsonrpc":"2.0","id":' + range.id + ',"result":[{"address":"0xnothex"}]}';
        const answer = JSON.parse(answerText(await inner(url, body, signal))) as {
          result: Array<Record<string, unknown>>;
        };
        const sample = answer.result[0];
        if (sample !== undefined && withLogs++ % 3 === 0) {
          answer.result.push({ ...sample, address: "0x00000000000000000000000000000000000000aa" });
          answer.result.push({ ...sample, blockNumber: `0x${(range.to + 50).toString(16)}` });
          // At a position of its own: a second log at the sample's position would make the whole answer damaged.
          const logIndex = `0x${(Number(sample.logIndex) + 10_000).toString(16)}`;
          answer.result.push({
            ...sample,
            logIndex,
            topics: [PAYMENT_TOPICS[0], ...(sample.topics as string[]).slice(1), PAYMENT_TOPICS[0]],
          });
        }
        return JSON.stringify(answer);
      },
    });
    await run();
    expect(await storedLogs(db)).toEqual(await directLogs());
    const rejected = (await metrics.rpcRejectedLogs.get()).values;
    const reasons = new Set(rejected.map((v) => v.labels.reason));
    expect(reasons).toEqual(new Set(["unrequested_address", "outside_range", "wrong_topic_count"]));
    await close();
  });

  test("an answer with one damaged log is fetched again, never partly stored: the result equals a clean run row for row", async () => {
    const damages = [
      (log: Record<string, unknown>, range: { to: number }) => ({
        ...log,
        blockNumber: `0x${(range.to + 50).toString(16)}`,
      }),
      (log: Record<string, unknown>) => ({ ...log, topics: (log.topics as string[]).slice(0, 2) }),
      (log: Record<string, unknown>) => ({
        ...log,
        topics: [`0x${"ab".repeat(32)}`, ...(log.topics as string[]).slice(1)],
      }),
    ];
    let n = 0;
    let damaged = 0;
    const answered = new Set<string>();
    const { db, run, metrics, close } = await setUp(backend, {
      wrap: (inner) => async (url, body, signal) => {
        const range = getLogsRange(body);
        if (range === undefined) return inner(url, body, signal);
        if (++n % 5 === 0) throw new RpcTransportError("connection reset (injected)");
        const answer = JSON.parse(answerText(await inner(url, body, signal))) as {
          result: Array<Record<string, unknown>>;
        };
        const key = `${range.from}-${range.to}`;
        if (answer.result.length > 0 && !answered.has(key)) {
          // The first answer for each window has one REAL log damaged: committing the rest would lose it for good.
          answered.add(key);
          const at = answered.size % answer.result.length;
          answer.result[at] = damages[answered.size % damages.length]!(answer.result[at]!, range);
          damaged++;
        }
        return JSON.stringify(answer);
      },
    });
    await run();
    expect(damaged).toBeGreaterThanOrEqual(5);
    expect(await storedLogs(db)).toEqual(await directLogs());
    const states = await db.all(
      "SELECT state, COUNT(*) AS n FROM authorization_states GROUP BY state ORDER BY state",
    );
    expect(states).toEqual([
      { state: "canceled", n: 6 },
      { state: "captured", n: 6 },
    ]);
    expect((await metrics.rpcDamagedAnswers.get()).values[0]?.value).toBe(damaged);
    await close();
  });

  test("a window whose answer stays damaged stops the backfill (exit 75) naming the window, endpoint and reason, and stays unsynced", async () => {
    const poisoned = chain.deployBlock + 5;
    const { db, run, metrics, close } = await setUp(backend, {
      window: 4,
      concurrency: 1,
      wrap: (inner) => async (url, body, signal) => {
        const range = getLogsRange(body);
        const text = answerText(await inner(url, body, signal));
        if (range === undefined || poisoned < range.from || poisoned > range.to) return text;
        const answer = JSON.parse(text) as { result: Array<Record<string, unknown>> };
        answer.result.push({
          ...answer.result[0]!,
          blockNumber: `0x${(range.to + 1).toString(16)}`,
        });
        return JSON.stringify(answer);
      },
    });
    const error = (await run().catch((e: unknown) => e)) as RetryableError;
    expect(error).toBeInstanceOf(RetryableError);
    expect(error.exitCode).toBe(75);
    const window = `${poisoned - ((poisoned - chain.deployBlock) % 4)}..${poisoned - ((poisoned - chain.deployBlock) % 4) + 3}`;
    expect(error.shortMessage).toContain(`blocks ${window}`);
    expect(error.shortMessage).toContain("outside_range");
    expect(error.shortMessage).toContain(chain.anvil.httpUrl);
    const [covering] = await db.all<{ n: number }>(
      `SELECT COUNT(*) AS n FROM synced_ranges WHERE from_block <= ${poisoned} AND to_block >= ${poisoned}`,
    );
    expect(covering!.n).toBe(0);
    const [stored] = await db.all<{ n: number }>(
      `SELECT COUNT(*) AS n FROM logs WHERE block_number BETWEEN ${poisoned - 3} AND ${poisoned + 3}`,
    );
    const [earlier] = await db.all<{ top: number | null }>(
      "SELECT MAX(to_block) AS top FROM synced_ranges",
    );
    expect(earlier!.top).toBeLessThan(poisoned);
    expect(stored!.n).toBe(
      (
        await db.all<{ n: number }>(
          `SELECT COUNT(*) AS n FROM logs WHERE block_number BETWEEN ${poisoned - 3} AND ${earlier!.top ?? 0}`,
        )
      )[0]!.n,
    );
    expect((await metrics.rpcDamagedAnswers.get()).values[0]?.value).toBe(10);
    await close();
  });

  test("a bulk load defers the reader indexes (and stages attribution) to its end; a run killed before that leaves them to the next run", async () => {
    const indexes = async (db: TableReader) =>
      (
        await db.indexNames(["transfers_by_from", "transfers_by_to", "authorization_events_by_tx"])
      ).join();
    const all = "authorization_events_by_tx,transfers_by_from,transfers_by_to";
    const seenDuring: string[] = [];
    const first = await setUp(backend, {
      window: 2,
      concurrency: 1,
      attribution: true,
      wrap: beforeWindow(6, async () => {
        seenDuring.push(await indexes(first.db));
        throw new Error("provider vanished (injected, not retryable)");
      }),
    });
    await expect(first.run(1, { stageAttribution: true })).rejects.toThrow(/provider vanished/);
    expect(seenDuring).toEqual([""]);
    expect(await indexes(first.db)).toBe("");
    expect(
      first.lines.some((l) => l.msg === "Deferred reader indexes to the end of the backfill"),
    ).toBe(true);
    const attributedTransactions = "SELECT COUNT(*) FROM transactions";
    const loggedTransactions = "SELECT COUNT(DISTINCT tx_hash) FROM logs";
    if (backend.name === "sqlite") {
      // Staged with the committed windows, not yet in place.
      expect(await count(first.db, "SELECT COUNT(*) FROM staged_transactions")).toBe(
        await count(first.db, loggedTransactions),
      );
      expect(await count(first.db, attributedTransactions)).toBe(0);
    }
    await first.close();

    const second = await setUp(backend, {
      database: { ...first.config.database },
      attribution: true,
    });
    await second.run();
    expect(await indexes(second.db)).toBe(all);
    expect(await count(second.db, attributedTransactions)).toBe(
      await count(second.db, loggedTransactions),
    );
    if (backend.name === "sqlite") {
      expect(await count(second.db, "SELECT COUNT(*) FROM staged_transactions")).toBe(0);
      expect(
        second.lines.find((l) => l.msg === "Moved staged attribution into place")?.transactions,
      ).toBeGreaterThan(0);
    }
    // Postgres also drops the per-row-checked foreign keys during the load and validates them at its end.
    const foreignKeys = backend.name === "postgres" ? DEFERRED_FOREIGN_KEYS.map((k) => k.name) : [];
    expect(second.lines.find((l) => l.msg === "Built reader indexes")?.indexes).toEqual([
      "transfers_by_token_block",
      "transfers_by_from",
      "transfers_by_to",
      "logs_by_tx",
      "authorization_events_by_tx",
      "attribution_codes_by_code",
      ...foreignKeys,
    ]);
    if (backend.name === "postgres") {
      const keys = await second.db.all<{ conname: string; convalidated: boolean }>(
        "SELECT conname, convalidated FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace AND conname = ANY(?) ORDER BY conname",
        [foreignKeys],
      );
      expect(keys).toEqual(
        [...foreignKeys].sort().map((conname) => ({ conname, convalidated: true })),
      );
      // A concurrent build (the daemon's) killed half way leaves its index invalid: that counts as
      // missing, and the next run builds it again, here concurrently as the daemon does.
      const writable = await backend.reader(second.config.database, { writable: true });
      await writable.all(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass('logs_by_tx')",
      );
      await writable.all("ALTER TABLE transfers DROP CONSTRAINT transfers_log_id_fkey");
      await writable.close();
      const third = await setUp(backend, { database: { ...first.config.database } });
      await third.run(undefined, { mode: "daemon" });
      expect(third.lines.find((l) => l.msg === "Built reader indexes")?.indexes).toEqual([
        "logs_by_tx",
        "transfers_log_id_fkey",
      ]);
      const [valid] = await third.db.all<{ indexValid: boolean; keyValid: boolean }>(
        `SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('logs_by_tx')) AS "indexValid",
                (SELECT convalidated FROM pg_constraint WHERE conname = 'transfers_log_id_fkey' AND connamespace = current_schema()::regnamespace) AS "keyValid"`,
      );
      expect(valid).toEqual({ indexValid: true, keyValid: true });
      await third.close();
    }
    expect(await storedLogs(second.db)).toEqual(await directLogs());
    await second.close();
  });
});
